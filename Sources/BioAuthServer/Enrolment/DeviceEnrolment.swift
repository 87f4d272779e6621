import BioAuthCore
import Foundation
import Logging
import Metrics

/// Enrolling a device key: the key signs a registration challenge to prove possession; a device
/// after the first, or a new key for a device, needs an approved ``EnrolmentRequestRecord``
/// (``EnrolmentRequests``) under the default ``EnrolmentPolicy``.
struct DeviceEnrolment: Flow {
    let context: FlowContext

    func beginRegistration(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: DeviceID?, enrolmentRequestID: EnrolmentRequestID?,
        request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        let enrolment = try await subject(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
        var deviceID = enrolment.deviceID
        var approvedRequest: EnrolmentRequestID?
        if enrolment.needsProof {
            guard let enrolmentRequestID else { throw ServerError(.approvalRequired, field: "enrolmentRequestId") }
            let id = try Validate.serverAssigned(enrolmentRequestID, field: "enrolmentRequestId")
            let found = try await run(request, { try await self.store.enrolmentRequest(id: id) })
            // The session's own request, ended (cancelled by the owner, five wrong codes): 410, so
            // the app starts a new one rather than waiting for an approval that cannot come.
            if let found, found.sessionID == session.id, found.userID == session.userID, found.hasEnded {
                throw ServerError(.gone, field: "enrolmentRequestId", detail: "this enrolment request has ended")
            }
            guard let approved = found,
                approved.sessionID == session.id,
                approved.userID == session.userID, approved.isUsable(at: clock.now()), approved.publicKey == enrolment.publicKey,
                approved.passkey == nil,
                approved.name == enrolment.name, approved.replacing == (replacesDeviceID != nil),
                !approved.replacing || approved.deviceID == deviceID
            else { throw ServerError(.approvalRequired, field: "enrolmentRequestId") }
            deviceID = approved.deviceID
            approvedRequest = approved.id
        }
        let binding = ChallengeRecord.Binding.registration(
            publicKey: enrolment.publicKey, deviceName: enrolment.name, replacing: replacesDeviceID != nil)
        return try await Challenges(context: context).issue(
            binding, user: session.userID, device: deviceID, session: session.id, enrolmentRequest: approvedRequest, request)
    }

    /// What an enrolment names, checked: the session may enrol, the key parses, a replaced device
    /// is the user's and active. `needsProof` says whether the policy asks for an approval.
    func subject(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: DeviceID?, request: RequestInfo
    ) async throws(ServerError) -> (name: String, publicKey: Data, deviceID: DeviceID, needsProof: Bool) {
        // Admitted by authenticate(token:request:), like every call that takes a session.
        try authorizeUnread(.enrolDevice, session)
        var name = try Validate.deviceName(name)
        let spki = try Validate.base64URL(publicKey, field: "publicKey", count: 1...512)
        do { _ = try DevicePublicKey(spki: spki, field: "publicKey") } catch { throw ServerError(error) }
        var deviceID = DeviceID.random()
        if let replacesDeviceID {
            let id = try Validate.deviceID(replacesDeviceID, field: "replacesDeviceId")
            // A revoked device never comes back: its id answers 404 like an unknown one, and the
            // phone enrols as a new device (a phished password cannot revive a stolen phone's id).
            guard let device = try await run(request, { try await self.store.device(id: id) }), device.userID == session.userID,
                !device.isRevoked
            else {
                throw ServerError(.notFound, field: "replacesDeviceId")
            }
            deviceID = id
            // A new key keeps the device's name: an approval text and a recovery message name the
            // device as the server knows it, never as the requester calls it.
            name = device.name
        }
        var needsProof = false
        if configuration.enrolment.additionalDevices == .approvalOrRecovery {
            // Only the user's first device ever goes without: revoking every device does not make
            // the next one "first" again.
            let devices = try await run(request) { try await self.store.devices(userID: session.userID) }
            needsProof = replacesDeviceID != nil || !devices.isEmpty
        }
        return (name, spki, deviceID, needsProof)
    }

    func finishRegistration(
        session: SessionRecord, challengeID: ChallengeID, signature: String, attestation: PresentedAttestation?, request: RequestInfo
    ) async throws(ServerError) -> DeviceRecord {
        // Verified before the challenge is consumed: the chain's signatures never hold the writer.
        let proven = try await EnrolmentAttestation(context: context).verify(
            attestation, challengeID: challengeID, session: session, request: request)
        // A proof with the registration registers its key as the device's DPoP key (a new key
        // replaces it; none clears it).
        let dpop = try await dpopProof(request, tokenEndpoint: true, remember: false)?.thumbprint
        if configuration.dpop.required, dpop == nil { throw ServerError(DPoPError(.missing, "this server requires DPoP")) }
        let (enrolment, outcome) = try await Challenges(context: context).finish(
            challengeID, signature, purpose: .registration, session: session, request
        ) { answered, taken, now -> (verdict: (device: DeviceRecord, audit: AuditEvent), plan: WritePlan)? in
            let challenge = answered.challenge
            guard case .registration(let key, let name, let replacing) = challenge.binding else { return nil }
            // How the key was allowed: the approved request's way, else the session alone.
            let proof: EnrolmentProof =
                challenge.enrolmentRequestID != nil
                ? (taken.enrolmentRequest?.approvedByDevice != nil ? .approval : .recovery)
                : session.kind == .enrolmentGrant ? .grant : .primaryLogin
            let device = DeviceRecord(
                id: challenge.deviceID, userID: challenge.userID, name: name, publicKey: key, createdAt: now,
                credential: .appKey(attestation: proven), enrolledBy: proof, dpopThumbprint: dpop)
            let kind: AuditKind = replacing ? .deviceReenrolled : .deviceEnrolled
            let how: EnrolmentProof? = replacing ? proof : nil
            let audit = self.event(
                kind, user: challenge.userID, device: challenge.deviceID, reason: how.map(AuditReason.init), request: request)
            // A re-enrolment keeps the device's row (name, history) with the new key: what the plan
            // writes when its active-device guard holds.
            var stored = device
            if let how, var row = taken.device {
                row.publicKey = key
                row.credential = .appKey(attestation: proven)
                row.lastUsedAt = now
                row.keyReplacedAt = now
                row.keyReplacement = how
                row.dpopThumbprint = dpop
                stored = row
            }
            // Without an approved request, only a user's first device may enrol (when the policy asks
            // for a proof): decided here, in the transaction, not when the challenge was issued.
            let first = self.configuration.enrolment.additionalDevices == .approvalOrRecovery && challenge.enrolmentRequestID == nil
            let plan = WritePlan.enrolment(
                device, replacing: how, approvedRequest: challenge.enrolmentRequestID, asFirstDevice: first, audit: audit)
            return ((stored, audit), plan)
        }
        switch outcome.refusal {
        case nil: break
        // The approved request was used by another enrolment, or is gone; or the user has a device
        // now (another enrolment finished first) and this one needs an approval.
        case .approvedEnrolmentRequest, .noDeviceEver: throw ServerError(.approvalRequired, field: "enrolmentRequestId")
        // The device of a re-enrolment was revoked, vanished or changed owner between the two requests.
        default: throw ServerError(.notFound, field: "replacesDeviceId")
        }
        let (device, audit) = enrolment
        metrics.enrolments.increment()
        log(audit, request: request)
        if session.kind == .enrolmentGrant { await endGrant(session, request: request) }
        return device
    }

    /// Revokes an enrolment grant that has enrolled its one device. The enrolment is committed:
    /// should this fail, the answer stays a success, the failure is logged, and the grant still
    /// expires within minutes.
    func endGrant(_ session: SessionRecord, request: RequestInfo) async {
        let revoked = event(.sessionRevoked, user: session.userID, reason: .enrolmentGrantUsed, request: request)
        do {
            _ = try await writer.apply(WritePlan.revokeSession(id: session.id, userID: session.userID, at: clock.now(), audit: revoked))
        } catch {
            logger(for: request).error(
                "could not revoke a used enrolment grant", metadata: metadata(revoked).merging(["error": "\(type(of: error))"]) { $1 })
        }
    }
}
