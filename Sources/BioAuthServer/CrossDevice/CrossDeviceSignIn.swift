import BioAuthCore
import Foundation
import Logging
import Metrics

/// A sign-in started on another screen and let in by an enrolled phone (``CrossDeviceRequestRecord``):
/// the screen starts it for a username and shows a number; the user's phones list it with where it
/// comes from; one of them, out of its cool-down, signs a step-up over the request's text and the
/// number the user typed; the screen, polling with its token, then collects a
/// ``SessionKind/crossDevice`` session.
struct CrossDeviceSignIn: Flow {
    let context: FlowContext

    /// The deployment's settings, or 404 when cross-device sign-in is off.
    private var policy: CrossDevicePolicy {
        get throws(ServerError) { try enabled(configuration.crossDevice, "cross-device sign-in is") }
    }

    /// Starts a request for `username` from an anonymous screen: the same answer whether or not
    /// the user exists or has a phone. 429 when this address holds
    /// ``CrossDevicePolicy/maxPendingPerRequester`` pending requests for the user.
    func start(username: String, userAgent: String?, screenToken: String? = nil, request: RequestInfo) async throws(ServerError)
        -> NewCrossDeviceRequest
    {
        let policy = try policy
        try await admit(request)
        let userID = try Validate.userID(UserID(username), field: "username")
        // A token a phone's approval gave this screen: its key is looked up among the user's
        // known screens; an unknown or made-up one only makes the request a stranger's.
        let screenKey = try screenToken.map { (token) throws(ServerError) in
            CrossDevicePolicy.screenKey(SecretBytes(try Validate.base64URL(token, field: "screenToken", count: 32...32)))
        }
        let now = clock.now()
        let number = CrossDevicePolicy.randomNumber()
        let pollToken = SecretBytes.random(count: 32)
        let screen = ScreenLabel(userAgent: userAgent)
        let text = CrossDeviceApprovalText.make(userID: userID.rawValue, screen: screen, requester: request.clientAddress, at: now)
        let record = CrossDeviceRequestRecord(
            id: .random(), userID: userID, requester: request.clientAddress, screen: screen, createdAt: now,
            expiresAt: now.addingTimeInterval(policy.requestTTL),
            approvalHash: TokenHash(ofText: CrossDeviceApprovalText.signed(text, number: number)), pollTokenHash: TokenHash(of: pollToken),
            announced: false, screenKey: screenKey)
        // Announced only to a user with a phone to approve it: unknown users and users without a
        // device cost the deployment's push service nothing, and answer the same.
        let devices = try await run(request) { try await self.store.devices(userID: userID) }
        let announceable = devices.contains { !$0.isRevoked && $0.credential.signsBioAuthMessages }
        let audit = event(.crossDeviceRequested, user: userID, request: request)
        let since = now.addingTimeInterval(-max(policy.announcementWindow, policy.requestTTL))
        let decided = try await run(request) {
            try await self.writer.decide(
                locking: RowLocks(
                    crossDeviceRequestsOf: CrossDeviceRequestsOf(userID, since: since, client: record.requester, screenKey: screenKey))
            ) { rows in
                WritePlan.requestCrossDevice(rows, record, announceable: announceable, policy: policy, audit: audit)
            }
        }
        switch decided.verdict {
        case .limited(let until):
            throw ServerError(.rateLimited, detail: "too many sign-in requests", retryAfter: retryAfter(until: until, from: now))
        case .stored(let stored):
            var logged = audit
            if !stored.announced { logged.kind = .crossDeviceRequestUnannounced }
            log(logged, request: request)
            return NewCrossDeviceRequest(record: stored, number: number, pollToken: Base64URL.encode(pollToken.data))
        }
    }

    /// The screen's poll: pending, the session once a phone approved (once), or 410 with the
    /// ending. 404 for an unknown request or a wrong poll token. A DPoP proof with the poll binds
    /// the session it collects to the screen's key; required where the deployment requires DPoP.
    func collect(id: CrossDeviceRequestID, pollToken: String, request: RequestInfo) async throws(ServerError) -> CrossDeviceCollection {
        _ = try policy
        try await admit(request)
        let id = try Validate.serverAssigned(id, field: "id")
        let token = try Validate.base64URL(pollToken, field: "pollToken", count: 32...32)
        let proof = try await dpopProof(request, tokenEndpoint: true, remember: false)
        if configuration.dpop.required, proof == nil { throw ServerError(DPoPError(.missing, "this server requires DPoP")) }
        let now = clock.now()
        let audit = event(.crossDeviceSignedIn, request: request)
        let ttl = configuration.primarySessionTTL
        let decided = try await run(request) {
            try await self.writer.decide(locking: RowLocks(crossDeviceRequest: id)) { rows in
                WritePlan.collectCrossDevice(
                    rows, pollTokenHash: TokenHash(of: token),
                    session: { approved in
                        var (session, token) = self.newSession(
                            user: approved.userID, device: approved.approvedByDevice, kind: .crossDevice, ttl: ttl, at: now)
                        session.dpopThumbprint = proof?.thumbprint
                        return SessionGrant(token: token, session: session)
                    }, screenToken: SecretBytes.random(count: 32), at: now, audit: audit)
            }
        }
        switch decided.verdict {
        case nil: throw ServerError(.notFound, field: "id")
        case .session(let grant, let screenToken)?:
            // The approving phone was revoked between its approval and this poll.
            guard decided.outcome.wasApplied else { throw Self.ended }
            metrics.logins.increment()
            log(audit.about(user: grant.session.userID, device: grant.session.deviceID), request: request)
            return .session(grant, screenToken: screenToken)
        case let verdict?: return verdict
        }
    }

    /// What the user's phones see: requests still waiting, those from addresses where the user
    /// signed in first, then the newest (at most ``CrossDevicePolicy/listedRequests``).
    func pending(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [CrossDeviceRequestRecord] {
        let policy = try policy
        try await authorize(.listCrossDeviceRequests, session, request: request)
        let now = clock.now(), userID = session.userID
        return try await run(request) {
            try await self.store.pendingCrossDeviceRequests(userID: userID, now: now, limit: policy.listedRequests)
        }
    }

    /// A phone out of its cool-down lets the request in with a step-up approval over
    /// `CrossDeviceApprovalText.signed(_:number:)`. Another number ends the request (401
    /// `approvalRejected`); 410 for one that is not pending (approved already, ended, expired).
    func approve(id: CrossDeviceRequestID, approval: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        _ = try policy
        try await authorize(.approveCrossDeviceRequest, session, request: request)
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let record = try await open(id, of: session, request: request)
        let now = clock.now(), userID = session.userID
        let audit = event(.crossDeviceApproved, user: userID, device: session.deviceID, request: request)
        let wrongNumber = event(
            .crossDeviceEnded, user: userID, device: session.deviceID, reason: AuditReason(CrossDeviceEnding.wrongNumber), request: request)
        let decided = try await run(request) {
            try await self.writer.decide(locking: RowLocks(approval: TokenHash(of: token), crossDeviceRequest: record.id)) { rows in
                WritePlan.approveCrossDevice(rows, userID: userID, at: now, audit: audit, wrongNumber: wrongNumber)
            }
        }
        switch decided.verdict {
        case true?: log(audit, request: request)
        case false?:
            log(wrongNumber, request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        case nil: throw Self.ended
        }
    }

    /// Any phone of the user, in its cool-down too, refuses a pending request: it ends, and the
    /// screen's next poll says so. 410 for one that is not pending.
    func deny(id: CrossDeviceRequestID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        _ = try policy
        try await authorize(.denyCrossDeviceRequest, session, request: request)
        let record = try await open(id, of: session, request: request)
        let now = clock.now(), userID = session.userID
        let audit = event(
            .crossDeviceEnded, user: userID, device: session.deviceID, reason: AuditReason(CrossDeviceEnding.denied), request: request)
        let decided = try await run(request) {
            try await self.writer.decide(locking: RowLocks(crossDeviceRequest: record.id)) { rows in
                WritePlan.denyCrossDevice(rows, userID: userID, at: now, audit: audit)
            }
        }
        guard decided.verdict else { throw Self.ended }
        log(audit, request: request)
    }

    /// The user's request (404 otherwise), pending (410 otherwise).
    private func open(_ id: CrossDeviceRequestID, of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> CrossDeviceRequestRecord
    {
        let id = try Validate.serverAssigned(id, field: "id")
        guard let record = try await run(request, { try await self.store.crossDeviceRequest(id: id) }), record.userID == session.userID
        else { throw ServerError(.notFound, field: "id") }
        guard record.status(at: clock.now()) == .pending else { throw Self.ended }
        return record
    }

    private static let ended = ServerError(.gone, detail: "this sign-in request has ended")
}
