import BioAuthCore
import Crypto
import Foundation
import Logging

/// Requests to enrol a second device or a new key: approved by another device's step-up or by a
/// recovery code sent through the deployment's ``RecoveryChannel``.
struct EnrolmentRequests: Flow {
    let context: FlowContext

    func requestEnrolment(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: DeviceID?, request: RequestInfo
    ) async throws(ServerError) -> NewEnrolmentRequest {
        try authorizeUnread(.requestEnrolment, session)
        let enrolment = try await DeviceEnrolment(context: context).subject(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
        guard enrolment.needsProof else { throw ServerError(.conflict, detail: "this enrolment needs no approval") }
        return try await store(
            session: session, deviceID: enrolment.deviceID, name: enrolment.name, publicKey: enrolment.publicKey,
            replacing: replacesDeviceID != nil, passkey: nil, request: request)
    }

    /// Stores a new request of `session`'s, with its binding code, within the requester's cap of
    /// pending requests (429 beyond it).
    func store(
        session: SessionRecord, deviceID: DeviceID, name: String, publicKey: Data, replacing: Bool, passkey: PasskeyCredential?,
        request: RequestInfo
    ) async throws(ServerError) -> NewEnrolmentRequest {
        let now = clock.now()
        let bindingCode = BindingCode.random()
        let record = EnrolmentRequestRecord(
            id: .random(), userID: session.userID, deviceID: deviceID, name: name, publicKey: publicKey,
            replacing: replacing, sessionID: session.id, createdAt: now,
            expiresAt: now.addingTimeInterval(configuration.enrolment.requestTTL),
            requester: request.clientAddress, passkey: passkey
        ).bound(to: bindingCode)
        let audit = event(.enrolmentRequested, user: session.userID, device: record.deviceID, request: request)
        let maxPending = BioAuthService.maxPendingEnrolmentRequests
        if let freed = try await run(
            request, { try await self.writer.run(RequestEnrolment(record, maxPending: maxPending, now: now, audit: audit)) })
        {
            throw ServerError(.rateLimited, detail: "too many enrolment requests", retryAfter: retryAfter(until: freed, from: now))
        }
        log(audit, request: request)
        return NewEnrolmentRequest(record: record, bindingCode: bindingCode)
    }

    func pending(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [EnrolmentRequestRecord] {
        try authorizeUnread(.listEnrolmentRequests, session)
        let now = clock.now()
        return try await run(request) { try await self.store.enrolmentRequests(userID: session.userID, now: now) }.filter {
            $0.isPending(at: now)
        }
    }

    func read(id: EnrolmentRequestID, of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> EnrolmentRequestRecord {
        try authorizeUnread(.readEnrolmentRequest, session)
        return try await enrolmentRequest(id: id, of: session, request: request)
    }

    private func enrolmentRequest(id: EnrolmentRequestID, of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> EnrolmentRequestRecord
    {
        let id = try Validate.serverAssigned(id, field: "id")
        guard let record = try await run(request, { try await self.store.enrolmentRequest(id: id) }), record.userID == session.userID,
            record.expiresAt > clock.now()
        else { throw ServerError(.notFound, field: "id") }
        return record
    }

    /// The user's request if it has not ended (410 if it has); with `ownOnly`, only if `session`
    /// made it (404 otherwise).
    private func openRequest(id: EnrolmentRequestID, of session: SessionRecord, ownOnly: Bool = false, request: RequestInfo)
        async throws(ServerError)
        -> EnrolmentRequestRecord
    {
        let record = try await enrolmentRequest(id: id, of: session, request: request)
        guard !ownOnly || record.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        guard !record.hasEnded else { throw Self.ended }
        return record
    }

    private static let ended = ServerError(.gone, detail: "this enrolment request has ended")

    func approve(requestID: EnrolmentRequestID, approval: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await authorize(.approveEnrolmentRequest, session, request: request)
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let record = try await openRequest(id: requestID, of: session, request: request)
        let audit = event(
            .enrolmentApproved, user: record.userID, device: record.deviceID, reason: .approvedByDevice,
            request: request)
        let now = clock.now(), userID = session.userID, tokenHash = TokenHash(of: token)
        let approved = try await run(request) {
            try await self.writer.run(
                ApproveEnrolmentRequest(
                    id: record.id, userID: userID, approvalTokenHash: tokenHash, excludingDevice: record.deviceID, now: now, audit: audit))
        }
        guard approved else {
            await self.audit(
                .approvalRejected, user: session.userID, device: session.deviceID, reason: AuditReason(FailureReason.approvalRejected),
                request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        log(audit, request: request)
    }

    func sendRecoveryCode(requestID: EnrolmentRequestID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try authorizeUnread(.sendRecoveryCode, session)
        guard let recoveryChannel = context.recoveryChannel else { throw ServerError(.forbidden, detail: "noRecoveryChannel") }
        let record = try await openRequest(id: requestID, of: session, ownOnly: true, request: request)
        guard !record.isApproved else { throw ServerError(.conflict, detail: "already approved") }
        let code = RecoveryCode.random()
        let audit = event(.recoveryCodeSent, user: record.userID, device: record.deviceID, request: request)
        let now = clock.now(), limits = configuration.enrolment.recoveryCodes
        let delivery = try await run(request) {
            try await self.writer.run(
                SetRecoveryCode(
                    requestID: record.id, userID: record.userID, requester: request.clientAddress, codeHash: code.hash, limits: limits,
                    now: now, audit: audit))
        }
        switch delivery {
        case .send: break
        case .notPending: throw Self.ended
        case .limited(let until):
            await self.audit(
                .rateLimited, user: record.userID, device: record.deviceID,
                reason: AuditReason(limit: FailureSubject.recoveryCodes(record.userID, client: request.clientAddress)), request: request)
            guard let until else {
                throw ServerError(.rateLimited, detail: "this request has had all its recovery codes; make a new request")
            }
            throw ServerError(.rateLimited, detail: "too many recovery codes", retryAfter: retryAfter(until: until, from: now))
        }
        do { try await recoveryChannel.deliver(RecoveryMessage(code, for: record)) } catch {
            logger(for: request).error(
                "recovery code delivery failed", metadata: metadata(audit).merging(["error": "\(type(of: error))"]) { $1 })
            throw ServerError(.unavailable, detail: "the recovery code could not be delivered", retryAfter: 30)
        }
        log(audit, request: request)
    }

    func recover(requestID: EnrolmentRequestID, code: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try authorizeUnread(.recoverEnrolment, session)
        let record = try await openRequest(id: requestID, of: session, ownOnly: true, request: request)
        let entered = try Validate.recoveryCode(code)
        let audit = event(
            .enrolmentApproved, user: record.userID, device: record.deviceID, reason: .recoveryCode, request: request
        )
        let now = clock.now(), maxAttempts = configuration.enrolment.maxRecoveryAttempts
        let outcome = try await run(request) {
            try await self.writer.run(
                RecoverEnrolmentRequest(id: record.id, codeHash: entered, maxAttempts: maxAttempts, now: now, audit: audit))
        }
        guard outcome == .approved else {
            log(audit.rejectedRecovery, request: request)
            if outcome == .wrongCode(attemptsLeft: 0) { log(audit.ended(.wrongCodes)) }
            throw ServerError.authenticationFailed(.recoveryCodeRejected)
        }
        log(audit, request: request)
    }

    /// The owner, from any enrolled device (in its cool-down too), ends a request of theirs that
    /// is pending or approved and unused: whoever made it can no longer enrol with it.
    func cancel(requestID: EnrolmentRequestID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await authorize(.cancelEnrolmentRequest, session, request: request)
        let record = try await openRequest(id: requestID, of: session, request: request)
        let audit = event(
            .enrolmentRequestEnded, user: record.userID, device: record.deviceID, reason: AuditReason(EnrolmentRequestEnding.cancelled),
            request: request)
        let now = clock.now(), userID = session.userID
        guard
            try await run(
                request, { try await self.writer.run(OwnedRequestDecision.cancel(id: record.id, userID: userID, now: now, audit: audit)) })
        else {
            throw Self.ended
        }
        log(audit, request: request)
    }
}

/// A request just made: the record, and the binding code for the requester's screen only.
public struct NewEnrolmentRequest: Sendable, Hashable {
    public let record: EnrolmentRequestRecord
    public let bindingCode: BindingCode
}

/// The code a new phone shows while it waits for an approval: 8 Crockford base32 characters
/// (40 bits, as NIST SP 800-63B-4 asks of binding codes), `XXXX-XXXX`. The approving phone's user
/// types it, and the approval signs it (`EnrolmentApprovalText.signed(_:bindingCode:)`): a
/// tap on a request whose phone the user cannot see approves nothing. Only its hash, within the
/// signed text's, is stored.
public struct BindingCode: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let text: String

    public static func random() -> BindingCode { BindingCode(text: CrockfordCode.random(characters: 8)) }

    private init(text: String) { self.text = text }

    public var description: String { "BindingCode(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: []) }
}

/// What asking for a recovery code got (`WritePlan.sendRecoveryCode(_:userID:codeHash:limits:at:audit:)`).
public enum RecoveryCodeDelivery: Sendable, Hashable {
    /// Stored and counted: deliver it.
    case send
    /// The request is not pending (ended, approved, expired or unknown): nothing is sent.
    case notPending
    /// A ``RecoveryCodeLimits`` limit is reached: the next code may go at `until`, or never for
    /// this request (nil: it had all its codes).
    case limited(until: Date?)
}

extension WritePlan {
    /// Stores `request` while its requester (``EnrolmentRequestRecord/requester``, the client
    /// address) has fewer than `maxPending` pending requests for the user among `rows` (read under
    /// a per-user lock, so parallel requests on several instances cannot pass it). The budget is
    /// the requester's, never the user's: a stranger's requests from their own addresses never
    /// refuse the owner's. Verdict: nil when stored, else when the requester's first pending
    /// request stops being pending.
    package static func requestEnrolment(
        _ rows: LockedRows, _ request: EnrolmentRequestRecord, maxPending: Int, at now: Date, audit: AuditEvent
    ) -> (
        verdict: Date?, plan: WritePlan
    ) {
        let pending = rows.enrolmentRequests.filter {
            $0.userID == request.userID && $0.requester == request.requester && $0.isPending(at: now)
        }
        guard pending.count < maxPending else { return (pending.map(\.expiresAt).min() ?? now, WritePlan()) }
        var plan = WritePlan()
        plan.add(.insertEnrolmentRequest(request))
        plan.audit(audit)
        return (nil, plan)
    }

    /// Approving the request in `rows` with the approval in `rows` (both read locked): the request
    /// must be `userID`'s and pending, the approval redeemable by `userID` for the request's
    /// ``EnrolmentRequestRecord/approvalHash`` — its text with the binding code the new phone
    /// shows — and signed by an active device other than the one being enrolled. Then the
    /// approval is redeemed and the request approved by its device, with `audit`; otherwise
    /// nothing is written. A request without an approval hash is approved by no device.
    package static func approveRequest(_ rows: LockedRows, userID: UserID, enrolling deviceID: DeviceID, at now: Date, audit: AuditEvent)
        -> (
            verdict: Bool, plan: WritePlan
        )
    {
        guard let request = rows.enrolmentRequest, request.userID == userID, request.isPending(at: now),
            let operationHash = request.approvalHash,
            let approval = rows.approval, rows.approvalSignerActive, approval.isRedeemable(for: operationHash.digest, by: userID, at: now),
            approval.deviceID != deviceID
        else { return (false, WritePlan()) }
        var plan = WritePlan()
        plan.add(.redeemApproval(tokenHash: approval.tokenHash, at: now))
        plan.add(.approveEnrolmentRequest(id: request.id, at: now, byDevice: approval.deviceID))
        plan.audit(audit)
        return (true, plan)
    }

    /// A new recovery code for the request in `rows` (read locked, with the
    /// ``FailureSubject/recoveryCodes(_:client:)`` counter of `userID` and the requester's address):
    /// sent only while the request is pending and within `limits` — per request, the interval
    /// since its last code, per requester per day (a stranger spending codes from their addresses
    /// leaves the owner's own budget whole). The
    /// code is stored (the previous one stops working; attempts already made keep counting) and
    /// counted before it is delivered, so a failed delivery counts too.
    package static func sendRecoveryCode(
        _ rows: LockedRows, userID: UserID, requester: String, codeHash: TokenHash, limits: RecoveryCodeLimits, at now: Date,
        audit: AuditEvent
    ) -> (verdict: RecoveryCodeDelivery, plan: WritePlan) {
        guard let request = rows.enrolmentRequest, request.userID == userID, request.isPending(at: now) else {
            return (.notPending, WritePlan())
        }
        guard request.codesSent < limits.perRequest else { return (.limited(until: nil), WritePlan()) }
        if let last = request.lastCodeSentAt, now < last.addingTimeInterval(limits.interval) {
            return (.limited(until: last.addingTimeInterval(limits.interval)), WritePlan())
        }
        var plan = WritePlan()
        if let until = plan.chargeRecoveryCode(rows, userID: userID, requester: requester, limits: limits, at: now) {
            return (.limited(until: until), WritePlan())
        }
        plan.add(.setRecoveryCode(requestID: request.id, codeHash: codeHash, sentAt: now, codesSent: request.codesSent + 1))
        plan.audit(audit)
        return (.send, plan)
    }

    /// Counts one recovery code against the requester's daily budget for the user and the user's
    /// own (the counters locked in `rows`, ``FailureSubject/recoveryCodeCounters(_:client:)``;
    /// ``RecoveryCodeLimits/perRequesterPerDay``, ``RecoveryCodeLimits/perUserPerDay``): nil once
    /// added to the plan, or when the spent budget frees up again, with nothing added.
    mutating func chargeRecoveryCode(_ rows: LockedRows, userID: UserID, requester: String, limits: RecoveryCodeLimits, at now: Date)
        -> Date?
    {
        let budgets = [
            (FailureSubject.recoveryCodes(userID, client: requester), limits.perRequesterPerDay),
            (.userRecoveryCodes(userID), limits.perUserPerDay),
        ]
        var days: [(FailureSubject, FailureCounter)] = []
        for (subject, limit) in budgets {
            var day = FailureCounter(since: now, count: 0)
            if let counter = rows.counters[subject], now < counter.since.addingTimeInterval(RecoveryCodeLimits.day) { day = counter }
            guard day.count < limit else { return day.since.addingTimeInterval(RecoveryCodeLimits.day) }
            day.count += 1
            days.append((subject, day))
        }
        for (subject, day) in days { add(.setCounter(subject, day)) }
        return nil
    }

    /// A recovery code entered for `request` (read locked): only a pending request with a code and
    /// attempts left takes one. A match (compared in constant time) approves it with `audit`; a
    /// mismatch counts an attempt and is audited as `recovery.code.rejected`, and the last allowed
    /// mismatch ends the request (``EnrolmentRequestEnding/wrongCodes``).
    package static func recovery(
        of request: EnrolmentRequestRecord?, entered: TokenHash, maxAttempts: Int, at now: Date, audit: AuditEvent
    ) -> (verdict: RecoveryOutcome, plan: WritePlan) {
        guard let request, request.isPending(at: now), let expected = request.recoveryCodeHash, request.recoveryAttempts < maxAttempts
        else {
            return (.unavailable, WritePlan())
        }
        var plan = WritePlan()
        if constantTimeEquals(expected.digest, entered.digest) {
            plan.add(.approveEnrolmentRequest(id: request.id, at: now, byDevice: nil))
            plan.audit(audit)
            return (.approved, plan)
        }
        plan.add(.countRecoveryAttempt(requestID: request.id))
        plan.audit(audit.rejectedRecovery)
        let left = maxAttempts - request.recoveryAttempts - 1
        if left == 0 {
            plan.add(.endEnrolmentRequest(id: request.id, at: now, ending: .wrongCodes))
            plan.audit(audit.ended(.wrongCodes))
        }
        return (.wrongCode(attemptsLeft: left), plan)
    }

    /// The owner cancels the request in `rows` (read locked) from an enrolled device: a request of
    /// `userID` not ended and not expired — pending, or approved but not yet used — ends
    /// (``EnrolmentRequestEnding/cancelled``) and can no longer enrol anything.
    package static func cancelRequest(_ rows: LockedRows, userID: UserID, at now: Date, audit: AuditEvent) -> (
        verdict: Bool, plan: WritePlan
    ) {
        guard let request = rows.enrolmentRequest, request.userID == userID, !request.hasEnded, request.expiresAt > now else {
            return (false, WritePlan())
        }
        var plan = WritePlan()
        plan.add(.endEnrolmentRequest(id: request.id, at: now, ending: .cancelled))
        plan.audit(audit)
        return (true, plan)
    }
}
