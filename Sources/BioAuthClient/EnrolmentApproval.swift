import BioAuth
import BioAuthCore
import Foundation

/// An enrolment waiting for an approval from another of the user's devices, or a recovery code.
public struct PendingEnrolment: Sendable, Hashable {
    public let id: String
    public let userID: String
    /// The id the device will have (this phone's own for a new key).
    public let deviceID: String
    public let deviceName: String
    public let replacing: Bool
    /// What the approving phone shows; tell the user to look for it there.
    public let approvalText: String
    public let expiresAt: Date
    /// Whether the request was approved when this value was read.
    public let isApproved: Bool
}

/// An enrolment request shown on a phone that may approve it: the text is built here from the
/// key the server sent, never taken from the server.
public struct EnrolmentRequestToApprove: Sendable, Hashable {
    public let id: String
    public let deviceName: String
    /// The first 8 bytes of SHA-256 of the new key, in hex.
    public let fingerprint: String
    public let replacing: Bool
    /// `Add device ‹name›, key ‹fingerprint›` (or the replace-key text): shown and signed.
    public let approvalText: String
    public let expiresAt: Date

    init(_ request: Wire.EnrolmentRequest) throws(ClientError) {
        guard let spki = Base64URL.decode(request.publicKey), let key = try? DevicePublicKey(spki: spki) else { throw ClientError(.protocolViolation) }
        id = request.id
        deviceName = request.name
        fingerprint = key.fingerprint
        replacing = request.replacing
        approvalText = EnrolmentApprovalText.make(deviceName: request.name, fingerprint: key.fingerprint, replacing: request.replacing)
        expiresAt = Date(seconds: request.expiresAt)
    }
}

extension BioAuthClient {
    // MARK: - The phone being added

    /// Asks the user's other devices to approve enrolling this phone (after ``enrol(_:deviceName:)``
    /// or ``reenrol(_:deviceName:)`` threw ``ClientError/Code/approvalRequired``). Creates the key
    /// — without a prompt — and keeps it until the enrolment completes. Calling again resumes
    /// with the same key.
    public func requestEnrolment(_ primary: PrimarySession, deviceName: String? = nil) async throws(ClientError) -> PendingEnrolment {
        let registration = try storage.registration()
        if let registration, registration.userID != primary.userID { throw ClientError(.forbidden) }
        let key: DevicePublicKey
        do {
            if signer.hasKey {
                let current = try signer.publicKey()
                // Without a registration any key here is this phone's unregistered one; with one,
                // only the key made for this request (the registered one still works otherwise).
                guard registration == nil || current.spkiRepresentation == pendingKey else { throw ClientError(.alreadyEnrolled) }
                key = current
            } else {
                endBiometricSession()
                key = registration == nil ? try signer.createKey() : try signer.replaceKey()
            }
        } catch let error as ClientError {
            throw error
        } catch let error as BioAuthError {
            throw ClientError(device: error)
        } catch {
            throw ClientError(.deviceFailure)
        }
        pendingKey = key.spkiRepresentation
        let name = deviceName ?? registration?.deviceName ?? "iPhone"
        let body = Wire.EnrolmentRequestCreation(name: name, publicKey: Base64URL.encode(key.spkiRepresentation), replacesDeviceId: registration?.deviceID)
        return try pending(try await api.requestEnrolment(body, token: primary.token), of: primary, key: key, replacing: registration?.deviceID)
    }

    /// The request as the server has it now: poll until ``PendingEnrolment/isApproved``.
    public func refresh(_ request: PendingEnrolment, _ primary: PrimarySession) async throws(ClientError) -> PendingEnrolment {
        let key = try pendingSigningKey()
        return try pending(
            try await api.enrolmentRequest(id: request.id, token: primary.token), of: primary, key: key, replacing: request.replacing ? request.deviceID : nil)
    }

    /// Asks the server to send a recovery code to the user through the deployment's channel
    /// (e-mail, SMS): for a user without another device at hand.
    public func sendRecoveryCode(for request: PendingEnrolment, _ primary: PrimarySession) async throws(ClientError) {
        try await api.sendRecoveryCode(id: request.id, token: primary.token)
    }

    /// Approves the request with the recovery code the user received.
    public func recover(_ request: PendingEnrolment, code: String, _ primary: PrimarySession) async throws(ClientError) {
        try await api.recoverEnrolment(id: request.id, Wire.RecoveryCodeEntry(code: code), token: primary.token)
    }

    /// Enrols this phone once its request is approved: one prompt (proof of possession).
    @discardableResult
    public func completeEnrolment(_ request: PendingEnrolment, _ primary: PrimarySession) async throws(ClientError) -> Registration {
        let key = try pendingSigningKey()
        let registration = try await register(
            key, for: primary, deviceName: request.deviceName, replacing: request.replacing ? request.deviceID : nil, request: request)
        pendingKey = nil
        return registration
    }

    func pendingSigningKey() throws(ClientError) -> DevicePublicKey {
        let key: DevicePublicKey
        do { key = try signer.publicKey() } catch { throw ClientError(device: error) }
        guard key.spkiRepresentation == pendingKey else { throw ClientError(.notEnrolled) }
        return key
    }

    /// Checks the server's answer against what this phone asked for.
    func pending(_ wire: Wire.EnrolmentRequest, of primary: PrimarySession, key: DevicePublicKey, replacing: String?) throws(ClientError) -> PendingEnrolment {
        guard wire.publicKey == Base64URL.encode(key.spkiRepresentation), wire.replacing == (replacing != nil), replacing == nil || wire.deviceId == replacing
        else { throw ClientError(.protocolViolation) }
        return PendingEnrolment(
            id: wire.id, userID: primary.userID, deviceID: wire.deviceId, deviceName: wire.name, replacing: wire.replacing,
            approvalText: EnrolmentApprovalText.make(deviceName: wire.name, fingerprint: key.fingerprint, replacing: wire.replacing),
            expiresAt: Date(seconds: wire.expiresAt), isApproved: wire.status == "approved")
    }

    // MARK: - A phone that approves

    /// Enrolment requests waiting for this user's approval (needs a device session: ``logIn()``).
    public func enrolmentRequests() async throws(ClientError) -> [EnrolmentRequestToApprove] {
        let session = try currentSession()
        let requests = try await authorized { () async throws(ClientError) in try await api.enrolmentRequests(token: session) }
        return try requests.map { request throws(ClientError) in try EnrolmentRequestToApprove(request) }
    }

    /// Approves adding a device: a step-up over ``EnrolmentRequestToApprove/approvalText`` — one
    /// prompt showing it — redeemed at once for the request.
    public func approveEnrolment(_ request: EnrolmentRequestToApprove) async throws(ClientError) {
        let approval = try await approve(operation: request.approvalText)
        let session = try currentSession()
        try await authorized { () async throws(ClientError) in
            try await api.approveEnrolment(id: request.id, Wire.EnrolmentApproval(approval: approval.token.value), token: session)
        }
    }
}
