import BioAuth
import BioAuthCore
import Crypto
import Foundation

/// Enrolling this phone: the first key, and a new key after an enrollment change.
extension BioAuthClient {
    // MARK: - Enrolment

    /// This phone's registration, nil when it has none.
    public func registration() throws(ClientError) -> Registration? { try storage.registration() }

    /// Creates the device key and registers it for `primary`'s user: one prompt (the key signs the
    /// server's challenge to prove possession).
    ///
    /// - Throws: ``ClientError/Code/alreadyEnrolled`` when this phone is enrolled or holds a usable
    ///   key: replacing it is ``reenrol(_:deviceName:)``. ``ClientError/Code/approvalRequired`` when
    ///   the user has a device already: continue with ``requestEnrolment(_:deviceName:)``.
    @discardableResult
    public func enrol(_ primary: PrimarySession, deviceName: String) async throws(ClientError) -> Registration {
        defer { publishState() }
        guard try storage.registration() == nil else { throw ClientError(.alreadyEnrolled) }
        // A key here without a registration is registered nowhere; the one of a request in progress
        // is kept for it (``requestEnrolment(_:deviceName:)`` continues).
        if let pending = try storage.pending(), pending.key == (try? signer.publicKey())?.spkiRepresentation {
            throw ClientError(.alreadyEnrolled)
        }
        let key: DevicePublicKey
        do { key = try signer.replaceKey() } catch { throw ClientError(device: error) }
        do {
            return try await register(key, for: primary, deviceName: deviceName, replacing: nil)
        } catch {
            signer.deleteKey()  // created by this call and registered nowhere
            throw error
        }
    }

    /// Registers a new key for this phone's device after its key was invalidated (an enrollment
    /// change, biometry reset): the server replaces the old key of the same device. One prompt.
    ///
    /// Calling it again, after a relaunch too, resumes the re-key in progress: the same key, and
    /// the same request while it is live — completed here once it was approved, else
    /// ``ClientError/Code/approvalRequired`` again (``requestEnrolment(_:deviceName:)`` returns it).
    ///
    /// - Throws: ``ClientError/Code/notEnrolled`` without a registration;
    ///   ``ClientError/Code/alreadyEnrolled`` while the current key still works;
    ///   ``ClientError/Code/approvalRequired`` under the server's default policy: continue with
    ///   ``requestEnrolment(_:deviceName:)``.
    @discardableResult
    public func reenrol(_ primary: PrimarySession, deviceName: String? = nil) async throws(ClientError) -> Registration {
        defer { publishState() }
        guard let registration = try storage.registration() else { throw ClientError(.notEnrolled) }
        guard try keyCondition() != .usable else { throw ClientError(.alreadyEnrolled) }
        guard registration.userID == primary.userID else { throw ClientError(.forbidden) }
        endBiometricSession()
        let inProgress = try storage.pending()
        let key: DevicePublicKey
        if let inProgress, inProgress.replacing == registration.deviceID, let made = try keyInProgress(inProgress) {
            key = made
            if let live = try await liveRequest(inProgress, key: key, userID: primary.userID) {
                guard live.request.isApproved else { throw ClientError(.approvalRequired) }
                return try await register(
                    key, for: live.primary, deviceName: live.request.deviceName, replacing: registration.deviceID, request: live.request)
            }
        } else {
            do { key = try signer.replaceKey() } catch { throw ClientError(device: error) }
        }
        let name = deviceName ?? registration.deviceName
        do {
            return try await register(key, for: primary, deviceName: name, replacing: registration.deviceID)
        } catch {
            // Registered nowhere yet: ``requestEnrolment(_:deviceName:)`` continues with it, after a relaunch too.
            try? storage.save(
                PendingEnrolmentRecord(key: key.spkiRepresentation, primary: primary, deviceName: name, replacing: registration.deviceID))
            throw error
        }
    }

    func register(
        _ key: DevicePublicKey, for primary: PrimarySession, deviceName: String, replacing deviceID: String?,
        request pending: PendingEnrolment? = nil
    ) async throws(ClientError) -> Registration {
        let request = Wire.RegistrationChallengeRequest(
            name: deviceName, publicKey: Base64URL.encode(key.spkiRepresentation), replacesDeviceId: deviceID,
            enrolmentRequestId: pending?.id)
        let challenge = try await api.registrationChallenge(request, token: primary.token)
        let expectation = ChallengeExpectation(
            purpose: .registration, relyingPartyID: configuration.relyingPartyID, userID: primary.userID,
            deviceID: deviceID ?? pending?.deviceID)
        let signed = try await sign(challenge, expecting: expectation, prompt: configuration.enrolmentPrompt, reusing: false)
        var finish = Wire.RegistrationFinish(challengeId: signed.body.challengeId, signature: signed.body.signature)
        let attested = await attest(key, message: signed.message)
        if let attested {
            finish.appAttestKeyId = Base64URL.encode(attested.keyID)
            finish.appAttestation = Base64URL.encode(attested.object)
        }
        // A new proof key goes with each registration: the server binds it to this device's key.
        if let proofKey = api.dpop?.key { _ = try? proofKey.replaceKey() }
        let device = try await api.finishRegistration(finish, token: primary.token)
        guard device.publicKey == Base64URL.encode(key.spkiRepresentation), device.id == challenge.deviceId else {
            throw ClientError(.protocolViolation)
        }
        // Assertions follow only where the server kept the attested key (its policy may ignore App Attest).
        let recorded = device.attestation?.format == Wire.DeviceAttestation.appleAppAttest ? attested?.keyID : nil
        let registration = Registration(userID: primary.userID, deviceID: device.id, deviceName: device.name, appAttestKeyID: recorded)
        try remember(registration, key: key)
        return registration
    }

    /// App Attest for the key being enrolled: a new app key, attested over
    /// ``AttestationBinding/registrationHash(_:publicKey:)`` of the checked registration `message`
    /// — this challenge and this key. Nil where App Attest is unsupported or fails: the server's
    /// ``ClientError/Code/attestationRejected`` then says whether it needed one. The client
    /// decides nothing here; the server's policy does.
    func attest(_ key: DevicePublicKey, message: SignedMessage) async -> (keyID: Data, object: Data)? {
        guard let service = platform.appAttest, service.isSupported else { return nil }
        do {
            let keyID = try await service.generateKey()
            return (
                keyID,
                try await service.attestKey(
                    keyID, clientDataHash: AttestationBinding.registrationHash(message, publicKey: key.spkiRepresentation))
            )
        } catch { return nil }
    }
}
