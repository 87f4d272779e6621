import BioAuthAttestation
import BioAuthCore
import Foundation
import Logging
import Metrics

/// Enrolment: devices added, replaced and approved, and the security delay of a lost one.
extension BioAuthService {
    // MARK: - Enrolment

    /// Starts enrolling a device key. Only a primary-login session or an enrolment grant may
    /// enrol; the key is bound to the challenge now and must sign it to prove possession.
    ///
    /// The user's first device ever needs nothing more. Any other device — and a new key for a
    /// device whose key was invalidated — needs, under the default ``EnrolmentPolicy``, an
    /// approved ``EnrolmentRequestRecord`` for exactly this name and key
    /// (``requestEnrolment(session:name:publicKey:replacesDeviceID:request:)``); without one this
    /// throws `approvalRequired`.
    ///
    /// With `replacesDeviceID`, this is the re-enrolment of a device whose key was invalidated (an
    /// enrollment change on the phone): on success the old key is replaced.
    public func beginRegistration(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: DeviceID?, enrolmentRequestID: EnrolmentRequestID? = nil,
        request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        try await enrolment.beginRegistration(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, enrolmentRequestID: enrolmentRequestID,
            request: request)
    }

    /// Finishes enrolment: the new key's signature over the registration challenge, with the
    /// key's attestation when the device has one (``AttestationPolicy``).
    public func finishRegistration(
        session: SessionRecord, challengeID: ChallengeID, signature: String, attestation: PresentedAttestation? = nil, request: RequestInfo
    ) async throws(ServerError) -> DeviceRecord {
        try await enrolment.finishRegistration(
            session: session, challengeID: challengeID, signature: signature, attestation: attestation, request: request)
    }

    /// A new challenge an Android device puts in its key's attestation (`setAttestationChallenge`)
    /// before enrolling that key in this session: random, for one registration finish, for
    /// ``AttestationPolicy/androidChallengeLifetime``.
    public func androidAttestationChallenge(session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Data {
        try await EnrolmentAttestation(context: enrolment.context).androidChallenge(for: session, request: request)
    }

    /// Most pending enrolment requests one requester (a client address, as limits count it) may
    /// have for a user: someone with the password cannot flood the owner's approval list from one
    /// address, and never fills a budget the owner's own request needs.
    public static let maxPendingEnrolmentRequests = 5

    /// Asks for an approval (or a recovery code) to enrol `publicKey` as `name`: the request
    /// appears on the user's other devices as the text of `EnrolmentApprovalText`, and its
    /// binding code goes to the requester only. Throws `conflict` if this enrolment needs no approval.
    public func requestEnrolment(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: DeviceID?, request: RequestInfo
    ) async throws(ServerError) -> NewEnrolmentRequest {
        try await enrolmentRequests.requestEnrolment(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
    }

    /// The user's enrolment requests that still wait (unexpired, unapproved).
    public func pendingEnrolmentRequests(of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> [EnrolmentRequestRecord]
    {
        try await enrolmentRequests.pending(of: session, request: request)
    }

    /// One of the user's unexpired enrolment requests (404 otherwise).
    public func enrolmentRequest(id: EnrolmentRequestID, of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> EnrolmentRequestRecord
    {
        try await enrolmentRequests.read(id: id, of: session, request: request)
    }

    /// Approves an enrolment request with a step-up approval the approving device obtained for
    /// exactly the request's ``EnrolmentRequestRecord/approvalText``. The approval must come from
    /// another device of the user (one past its cool-down: others cannot step up at all).
    public func approveEnrolment(requestID: EnrolmentRequestID, approval: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await enrolmentRequests.approve(requestID: requestID, approval: approval, session: session, request: request)
    }

    /// Sends a new recovery code for the caller's own enrolment request through the deployment's
    /// ``RecoveryChannel`` (403 if none is configured), within ``EnrolmentPolicy/recoveryCodes``
    /// (429 with the real wait); 410 for a request that has ended.
    public func sendRecoveryCode(requestID: EnrolmentRequestID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await enrolmentRequests.sendRecoveryCode(requestID: requestID, session: session, request: request)
    }

    /// Approves the caller's own enrolment request with the recovery code it was sent. A wrong
    /// code is one of ``EnrolmentPolicy/maxRecoveryAttempts``, each the uniform 401; the last one
    /// ends the request, which then answers 410.
    public func recoverEnrolment(requestID: EnrolmentRequestID, code: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await enrolmentRequests.recover(requestID: requestID, code: code, session: session, request: request)
    }

    /// The owner ends one of their enrolment requests — pending, or approved and not yet used —
    /// from any enrolled device, in its cool-down too (403 for other sessions); 410 if it has ended already.
    public func cancelEnrolmentRequest(requestID: EnrolmentRequestID, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await enrolmentRequests.cancel(requestID: requestID, session: session, request: request)
    }

    // MARK: - The security delay

    /// Asks to remove one of the user's devices after ``EnrolmentPolicy/lostDeviceDelay``: the
    /// lost-phone case without another device. Sends a recovery code to the owner; the removal
    /// waits for it (``confirmDeviceRemoval(id:code:session:request:)``).
    public func requestDeviceRemoval(deviceID: DeviceID, session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> DeviceRemovalRecord
    {
        try await removals.request(deviceID: deviceID, session: session, request: request)
    }

    /// The recovery code for a removal this session asked for: schedules it.
    public func confirmDeviceRemoval(id: DeviceRemovalID, code: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
        -> DeviceRemovalRecord
    {
        try await removals.confirm(id: id, code: code, session: session, request: request)
    }

    /// The user's removals waiting for their code or their delay: what every device shows.
    public func deviceRemovals(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRemovalRecord] {
        try await removals.list(of: session, request: request)
    }

    /// Any enrolled device of the user ends an open removal: the device stays.
    public func cancelDeviceRemoval(id: DeviceRemovalID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await removals.cancel(id: id, session: session, request: request)
    }
}
