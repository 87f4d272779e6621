import BioAuthAttestation
import BioAuthCore
import Foundation
import Metrics

/// Passkeys as devices: a registration enrols a passkey under the same ``EnrolmentPolicy`` as a
/// phone (the user's first device with a primary login or grant; any other with the policy's
/// proof), and a sign-in opens the same kind of device session, with the same tokens. Both
/// ceremonies go through ``Challenges``: consumed once, failures counted, the passkey's row
/// guarded until the writes land.
struct PasskeyCeremonies: Flow {
    let context: FlowContext

    /// The deployment's passkey settings, or 404 when passkeys are off.
    private var policy: PasskeyPolicy {
        get throws(ServerError) { try enabled(configuration.passkeys, "passkeys are") }
    }

    // MARK: Registration

    func beginRegistration(session: SessionRecord, name: String, request: RequestInfo) async throws(ServerError)
        -> Wire.PasskeyCreationOptions
    {
        let policy = try policy
        try authorizeUnread(.enrolDevice, session)
        let name = try Validate.deviceName(name)
        let devices = try await run(request) { try await self.store.devices(userID: session.userID) }
        let handle = PasskeyCredential.userHandle(for: devices)
        let challenge = try await Challenges(context: context).stored(
            .passkey(.registration(deviceName: name, userHandle: handle)), user: session.userID, device: .random(), session: session.id,
            ttl: policy.ceremonyTTL, request)
        return Wire.PasskeyCreationOptions(
            challengeId: Base64URL.encode(challenge.id.bytes), relyingPartyID: policy.relyingParty.id,
            relyingPartyName: policy.relyingPartyName,
            userHandle: handle, userName: session.userID.rawValue, challenge: challenge.nonce, timeout: Int(policy.ceremonyTTL * 1000),
            excluded: devices.compactMap { $0.isRevoked ? nil : $0.credential.passkey?.credentialID },
            userVerification: policy.userVerification,
            algorithms: COSEKey.Algorithm.allCases.map(\.rawValue))
    }

    func finishRegistration(
        session: SessionRecord, challengeID: ChallengeID, credential: Wire.PasskeyRegistrationCredential, request: RequestInfo
    ) async throws(ServerError) -> PasskeyRegistration {
        let policy = try policy
        try authorizeUnread(.enrolDevice, session)
        let rawID = try Self.credentialID(rawID: credential.rawId, type: credential.type)
        let clientData = try Validate.base64URL(credential.response.clientDataJSON, field: "clientDataJSON", count: 1...4096)
        let object = try Validate.base64URL(
            credential.response.attestationObject, field: "attestationObject", count: 1...PresentedAttestation.maximumBodySize)
        // Verified before the challenge is taken (the certificate chain is checked off the
        // writer), against the nonce of the challenge as it is now; the take below checks that
        // it is still that challenge, unused, this session's.
        let peeked = try await run(request) { try await self.store.challenge(id: challengeID) }
        var verified: Result<WebAuthnRelyingParty.VerifiedRegistration, WebAuthnError>?
        if let peeked, peeked.binding.isPasskeyRegistration, peeked.sessionID == session.id {
            do {
                let registration = try await policy.relyingParty.verifyRegistration(
                    clientDataJSON: clientData, attestationObject: object, challenge: peeked.nonce, at: clock.now())
                verified =
                    registration.credentialID == rawID
                    ? .success(registration) : .failure(WebAuthnError(.malformed, "rawId is not the attested credential's id"))
            } catch { verified = .failure(error) }
        }
        let devices = try await run(request) { try await self.store.devices(userID: session.userID) }
        if case .success(let registration)? = verified,
            devices.contains(where: { $0.credential.passkey?.credentialID == registration.credentialID })
        {
            throw ServerError(.conflict, field: "credential", detail: "this passkey is already enrolled")
        }
        // A passkey after the user's first device waits for the policy's proof, like a phone's key
        // — unless a phone out of its cool-down just approved this screen's sign-in, with the
        // number: that approval is the proof, once (the session ends with the enrolment).
        let approvedElsewhere = session.kind == .crossDevice ? session.deviceID : nil
        let waits = needsProof(devices) && approvedElsewhere == nil
        let verdict = verified
        let nonce = peeked?.nonce
        let first = configuration.enrolment.additionalDevices == .approvalOrRecovery && approvedElsewhere == nil
        let proof: EnrolmentProof =
            switch session.kind {
            case .enrolmentGrant: .grant
            case .crossDevice: .approval
            default: .primaryLogin
            }
        let used = event(.sessionRevoked, user: session.userID, reason: .crossDeviceEnrolmentUsed, request: request)
        let (enrolled, outcome) = try await Challenges(context: context).finish(
            challengeID,
            proof: .passkey(device: nil) { challenge, now in
                Self.registrationOutcome(challenge, nonce: nonce, verdict: verdict, session: session, now: now)
            }, purpose: .registration, session: session, request
        ) { proven, _, now -> (verdict: (DeviceRecord, AuditEvent), plan: WritePlan)? in
            let challenge = proven.challenge
            guard case .passkey(.registration(let name, let handle)) = challenge.binding, case .success(let registration)? = verdict else {
                return nil
            }
            let device = DeviceRecord(
                id: challenge.deviceID, userID: challenge.userID, name: name, publicKey: registration.publicKey.spkiRepresentation,
                createdAt: now, credential: .passkey(PasskeyCredential(registration, userHandle: handle)), enrolledBy: proof)
            let audit = self.event(.deviceEnrolled, user: challenge.userID, device: challenge.deviceID, request: request)
            // Waiting: the challenge is used up, and the request below holds the verified passkey.
            guard !waits else { return ((device, audit), WritePlan()) }
            var plan = WritePlan.enrolment(device, replacing: nil, approvedRequest: nil, asFirstDevice: first, audit: audit)
            if let approver = approvedElsewhere {
                plan.require(.activeDevice(id: approver, userID: session.userID))
                plan.merge(.revokeSession(id: session.id, userID: session.userID, at: now, audit: used))
            }
            return ((device, audit), plan)
        }
        let (device, audit) = enrolled
        // Waiting, or another enrolment finished first and this is no longer the first device.
        if waits || outcome.refusal != nil {
            return .awaitingApproval(
                try await EnrolmentRequests(context: context).store(
                    session: session, deviceID: device.id, name: device.name, publicKey: device.publicKey, replacing: false,
                    passkey: device.credential.passkey, request: request))
        }
        metrics.enrolments.increment()
        log(audit, request: request)
        if approvedElsewhere != nil { log(used, request: request) }
        if session.kind == .enrolmentGrant { await DeviceEnrolment(context: context).endGrant(session, request: request) }
        return .enrolled(device)
    }

    /// Enrols the passkey an approved request of `session`'s holds (approved by another device
    /// with the binding code, or by a recovery code): the request is used up, the passkey is a
    /// device in its cool-down.
    func completeRegistration(session: SessionRecord, enrolmentRequestID: EnrolmentRequestID, request: RequestInfo)
        async throws(ServerError) -> DeviceRecord
    {
        _ = try policy
        try authorizeUnread(.enrolDevice, session)
        let id = try Validate.serverAssigned(enrolmentRequestID, field: "enrolmentRequestId")
        guard let approved = try await run(request, { try await self.store.enrolmentRequest(id: id) }), approved.userID == session.userID,
            approved.sessionID == session.id, let passkey = approved.passkey
        else { throw ServerError(.notFound, field: "enrolmentRequestId") }
        let now = clock.now()
        if approved.hasEnded { throw ServerError(.gone, field: "enrolmentRequestId", detail: "this enrolment request has ended") }
        guard approved.isUsable(at: now) else { throw ServerError(.approvalRequired, field: "enrolmentRequestId") }
        let device = DeviceRecord(
            id: approved.deviceID, userID: approved.userID, name: approved.name, publicKey: approved.publicKey, createdAt: now,
            credential: .passkey(passkey), enrolledBy: approved.approvedByDevice != nil ? .approval : .recovery)
        let audit = event(.deviceEnrolled, user: device.userID, device: device.id, request: request)
        let plan = WritePlan.enrolment(device, replacing: nil, approvedRequest: approved.id, audit: audit)
        // The request was used or ended in between: nothing was written.
        guard try await run(request, { try await self.writer.apply(plan) }).wasApplied else {
            throw ServerError(.approvalRequired, field: "enrolmentRequestId")
        }
        metrics.enrolments.increment()
        log(audit, request: request)
        if session.kind == .enrolmentGrant { await DeviceEnrolment(context: context).endGrant(session, request: request) }
        return device
    }

    /// The proof factor of a passkey registration: the taken challenge is the one the verified
    /// registration answered — unused, for a passkey registration, unexpired and this session's.
    private static func registrationOutcome(
        _ challenge: ChallengeRecord?, nonce: Data?, verdict: Result<WebAuthnRelyingParty.VerifiedRegistration, WebAuthnError>?,
        session: SessionRecord, now: Date
    ) -> ProofOutcome {
        guard let challenge, challenge.nonce == nonce else { return .rejected(.unknownChallenge) }
        guard challenge.binding.isPasskeyRegistration else { return .rejected(.wrongPurpose) }
        guard now <= challenge.expiresAt else { return .rejected(.expiredChallenge) }
        guard challenge.userID == session.userID, challenge.sessionID == session.id else { return .rejected(.wrongSession) }
        switch verdict {
        // Verified before the challenge was taken: nothing to carry to the plan but the challenge.
        case .success?: return .proven(Proven(challenge: challenge, assertion: nil))
        case .failure(let error)?: return .rejected(.passkey(error.check))
        case nil: return .rejected(.unknownChallenge)
        }
    }

    /// A credential's id as `toJSON()` writes it: `rawId` base64url (1–1023 bytes) and `type`
    /// `public-key`, else 400 naming the field. `id` (the same text, by definition) is not read.
    static func credentialID(rawID: String, type: String) throws(ServerError) -> Data {
        guard type == "public-key" else { throw ServerError(WireFormatError(.invalidValue, field: "type")) }
        return try Validate.base64URL(rawID, field: "rawId", count: 1...1023)
    }

    /// Whether enrolling another device needs the policy's proof (the user has had one).
    private func needsProof(_ devices: [DeviceRecord]) -> Bool {
        configuration.enrolment.additionalDevices == .approvalOrRecovery && !devices.isEmpty
    }

    // MARK: Authentication

    func beginLogin(username: String, request: RequestInfo) async throws(ServerError) -> Wire.PasskeyRequestOptions {
        let policy = try policy
        let userID = try Validate.userID(UserID(username), field: "username")
        try await admit(request)
        // Any well-formed username gets a challenge, and the options list no credentials: the
        // answer never says whether the user exists or has a passkey.
        let challenge = try await Challenges(context: context).stored(
            .passkey(.authentication), user: userID, device: .random(), ttl: policy.ceremonyTTL, request)
        return Wire.PasskeyRequestOptions(
            challengeId: Base64URL.encode(challenge.id.bytes), relyingPartyID: policy.relyingParty.id, challenge: challenge.nonce,
            timeout: Int(policy.ceremonyTTL * 1000), userVerification: policy.userVerification)
    }

    func finishLogin(challengeID: ChallengeID, credential: Wire.PasskeyAuthenticationCredential, request: RequestInfo)
        async throws(ServerError) -> SessionGrant
    {
        let policy = try policy
        let response = PasskeyAssertion(
            credentialID: try Self.credentialID(rawID: credential.rawId, type: credential.type),
            clientDataJSON: try Validate.base64URL(credential.response.clientDataJSON, field: "clientDataJSON", count: 1...4096),
            authenticatorData: try Validate.base64URL(credential.response.authenticatorData, field: "authenticatorData", count: 37...4096),
            signature: try Validate.base64URL(credential.response.signature, field: "signature", count: 1...1024),
            userHandle: try credential.response.userHandle.map { (handle) throws(ServerError) in
                try Validate.base64URL(handle, field: "userHandle", count: 1...64)
            })
        // Charged once, here, before the reads (Challenges.finish is told so).
        try await admit(request)
        // A DPoP proof binds the session and its tokens to the browser's key (the sign-in page
        // holds a non-extractable WebCrypto key), as a phone's login binds them to its second
        // key; required where the deployment requires DPoP. Checked before the challenge is
        // taken; the single-use challenge makes remembering its jti unnecessary.
        let proof = try await dpopProof(request, tokenEndpoint: true, remember: false)
        if configuration.dpop.required, proof == nil { throw ServerError(DPoPError(.missing, "this server requires DPoP")) }
        // The passkey the response names, among the devices of the user the challenge is for.
        var passkey: DeviceRecord?
        if let peeked = try await run(request, { try await self.store.challenge(id: challengeID) }),
            peeked.binding == .passkey(.authentication)
        {
            passkey = try await run(request) { try await self.store.devices(userID: peeked.userID) }.first {
                $0.credential.passkey?.credentialID == response.credentialID
            }
        }
        let device = passkey
        let verifier = ChallengeVerifier(relyingPartyID: configuration.relyingPartyID)
        let token = SecretBytes.random(count: 32), refresh = SecretBytes.random(count: 32)
        let (login, _) = try await Challenges(context: context).finish(
            challengeID,
            proof: .passkey(device: device) { challenge, now in
                verifier.verifyPasskey(
                    challenge: challenge, device: device, response: response, relyingParty: policy.relyingParty, now: now)
            }, purpose: .login, session: nil, admitted: true, request
        ) { proven, _, now -> (verdict: (session: SessionRecord, audit: AuditEvent, device: DeviceRecord?), plan: WritePlan)? in
            let challenge = proven.challenge
            guard let device, var credential = device.credential.passkey, let verified = proven.assertion else { return nil }
            var session = self.sessionRecord(
                token: token, user: challenge.userID, device: device.id, kind: .device, ttl: self.configuration.sessionTTL, at: now)
            session.refreshTokenHash = TokenHash(of: refresh)
            session.dpopThumbprint = proof?.thumbprint
            let audit = self.event(.loginSucceeded, user: challenge.userID, device: device.id, request: request)
            var plan = WritePlan.login(session, from: request.clientAddress, audit: audit)
            // The counter the verification accepted must still be the stored one when this
            // commits: of parallel sign-ins with one counter value only one gets through.
            plan.require(.passkeyCounter(deviceID: device.id, credentialID: credential.credentialID, below: verified.signCount))
            credential.signCount = verified.signCount
            credential.backedUp = verified.backedUp
            plan.add(.storePasskey(deviceID: device.id, credential))
            return ((session, audit, device), plan)
        }
        return try await DeviceLogin(context: context).granted(login, token: token, refresh: refresh, request: request)
    }
}

/// What a passkey registration's finish did.
public enum PasskeyRegistration: Sendable, Hashable {
    /// The passkey is a device of the user: their first, with a primary login or grant alone.
    case enrolled(DeviceRecord)
    /// The passkey, verified, waits in an enrolment request for the policy's proof — another
    /// device's approval with the binding code, or a recovery code — after which
    /// ``BioAuthService/completePasskeyRegistration(session:enrolmentRequestID:request:)`` enrols it.
    case awaitingApproval(NewEnrolmentRequest)
}

/// A passkey's answer to an authentication challenge, decoded.
struct PasskeyAssertion: Sendable {
    let credentialID: Data
    let clientDataJSON: Data
    let authenticatorData: Data
    let signature: Data
    let userHandle: Data?
}

extension ChallengeRecord.Binding {
    var isPasskeyRegistration: Bool { if case .passkey(.registration) = self { true } else { false } }
}

extension ChallengeVerifier {
    /// Decides a passkey's answer to an authentication challenge; pure, like
    /// ``verify(challenge:device:signature:purpose:session:now:)``. `device` is the user's
    /// passkey whose credential id the response names (nil: none). On success, also what the
    /// authenticator reported (its counter and backup state, to store).
    func verifyPasskey(
        challenge: ChallengeRecord?, device: DeviceRecord?, response: PasskeyAssertion, relyingParty: WebAuthnRelyingParty, now: Date
    ) -> ProofOutcome {
        guard let challenge else { return .rejected(.unknownChallenge) }
        guard challenge.binding == .passkey(.authentication), challenge.relyingPartyID == relyingPartyID else {
            return .rejected(.wrongPurpose)
        }
        guard now <= challenge.expiresAt else { return .rejected(.expiredChallenge) }
        guard let device, let passkey = device.credential.passkey else { return .rejected(.unknownDevice) }
        guard !device.isRevoked else { return .rejected(.revokedDevice) }
        // The user handle, when the authenticator returns one, is the one its registration named.
        guard device.userID == challenge.userID, response.userHandle.map({ $0 == passkey.expectedUserHandle(of: challenge.userID) }) ?? true
        else {
            return .rejected(.wrongUser)
        }
        do {
            let verified = try relyingParty.verifyAssertion(
                clientDataJSON: response.clientDataJSON, authenticatorData: response.authenticatorData, signature: response.signature,
                challenge: challenge.nonce, publicKey: try COSEKey(passkey.publicKey), storedSignCount: passkey.signCount)
            return .proven(Proven(challenge: challenge, assertion: verified))
        } catch {
            return .rejected(.passkey(error.check))
        }
    }
}
