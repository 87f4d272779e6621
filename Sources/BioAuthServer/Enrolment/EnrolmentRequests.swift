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
    ) async throws(ServerError) -> EnrolmentRequestRecord {
        let enrolment = try await DeviceEnrolment(context: context).subject(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
        guard enrolment.needsProof else { throw ServerError(.conflict, detail: "this enrolment needs no approval") }
        let now = clock.now()
        let record = EnrolmentRequestRecord(
            id: .random(), userID: session.userID, deviceID: enrolment.deviceID, name: enrolment.name, publicKey: enrolment.publicKey,
            replacing: replacesDeviceID != nil, sessionID: session.id, createdAt: now, expiresAt: now.addingTimeInterval(configuration.enrolment.requestTTL))
        let audit = event(.enrolmentRequested, user: session.userID, device: record.deviceID, request: request)
        let plan = WritePlan.requestEnrolment(record, maxPending: BioAuthService.maxPendingEnrolmentRequests, now: now, audit: audit)
        guard try await run(request, { try await self.store.apply(plan) }).wasApplied else {
            throw ServerError(.rateLimited, detail: "too many enrolment requests", retryAfter: Int(configuration.enrolment.requestTTL))
        }
        log(audit)
        return record
    }

    func pending(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [EnrolmentRequestRecord] {
        try requireAccountSession(session)
        let now = clock.now()
        return try await run(request) { try await self.store.enrolmentRequests(userID: session.userID, now: now) }.filter { !$0.isApproved }
    }

    func enrolmentRequest(id: EnrolmentRequestID, of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> EnrolmentRequestRecord {
        let id = try Validate.serverAssigned(id, field: "id")
        guard let record = try await run(request, { try await self.store.enrolmentRequest(id: id) }), record.userID == session.userID,
            record.expiresAt > clock.now()
        else { throw ServerError(.notFound, field: "id") }
        return record
    }

    func approve(requestID: EnrolmentRequestID, approval: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        guard session.kind == .device else { throw ServerError(.forbidden, detail: "only another enrolled device may approve an enrolment") }
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        let operationHash = Data(SHA256.hash(data: Data(record.approvalText.utf8)))
        let audit = event(.enrolmentApproved, user: record.userID, device: record.deviceID, reason: AuditReason.approvedByDevice.description, request: request)
        let now = clock.now(), userID = session.userID, tokenHash = TokenHash(of: token)
        let approved = try await run(request) {
            try await self.store.approveEnrolmentRequest(
                id: record.id, userID: userID, approvalTokenHash: tokenHash, operationHash: operationHash, excludingDevice: record.deviceID, now: now, audit: audit)
        }
        guard approved else {
            await self.audit(.approvalRejected, user: session.userID, device: session.deviceID, reason: FailureReason.approvalRejected.description, request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        log(audit)
    }

    func sendRecoveryCode(requestID: EnrolmentRequestID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        guard let recoveryChannel = context.recoveryChannel else { throw ServerError(.forbidden, detail: "no recovery channel is configured") }
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        guard record.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        guard !record.isApproved else { throw ServerError(.conflict, detail: "already approved") }
        let code = RecoveryCode.random()
        let audit = event(.recoveryCodeSent, user: record.userID, device: record.deviceID, request: request)
        let now = clock.now()
        let stored = try await run(request) { try await self.store.setRecoveryCode(requestID: record.id, codeHash: code.hash, now: now, audit: audit) }
        guard stored else { throw ServerError(.notFound, field: "id") }
        do { try await recoveryChannel.deliver(code, for: record) } catch {
            logger.error("recovery code delivery failed", metadata: metadata(audit).merging(["error": "\(type(of: error))"]) { $1 })
            throw ServerError(.unavailable, detail: "the recovery code could not be delivered", retryAfter: 30)
        }
        log(audit)
    }

    func recover(requestID: EnrolmentRequestID, code: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        guard record.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        guard (1...32).contains(code.utf8.count), code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == " ") }) else {
            throw ServerError(.invalidRequest, field: "code", detail: "1 to 32 letters, digits and dashes")
        }
        let audit = event(.enrolmentApproved, user: record.userID, device: record.deviceID, reason: AuditReason.recoveryCode.description, request: request)
        let now = clock.now(), entered = RecoveryCode.hash(ofEntered: code), maxAttempts = configuration.enrolment.maxRecoveryAttempts
        let outcome = try await run(request) {
            try await self.store.recoverEnrolmentRequest(id: record.id, codeHash: entered, maxAttempts: maxAttempts, now: now, audit: audit)
        }
        guard outcome == .approved else {
            log(audit.rejectedRecovery)
            throw ServerError.authenticationFailed(.recoveryCodeRejected)
        }
        log(audit)
    }
}

extension WritePlan {
    /// Stores an enrolment request while the user has fewer than `maxPending` waiting: someone
    /// with the password cannot flood the owner's approval list, even with parallel requests.
    public static func requestEnrolment(_ request: EnrolmentRequestRecord, maxPending: Int, now: Date, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.require(.fewerPendingEnrolmentRequests(userID: request.userID, limit: maxPending, now: now))
        plan.add(.insertEnrolmentRequest(request))
        plan.audit(audit)
        return plan
    }

    /// Approving the request in `rows` with the approval in `rows` (both read locked): the request
    /// must be `userID`'s and pending, the approval redeemable for `operationHash` by `userID`,
    /// signed by an active device other than the one being enrolled. Then the approval is redeemed
    /// and the request approved by its device, with `audit`; otherwise nothing is written.
    public static func approveRequest(
        _ rows: LockedRows, userID: UserID, operationHash: Data, enrolling deviceID: DeviceID, at now: Date, audit: AuditEvent
    ) -> (verdict: Bool, plan: WritePlan) {
        guard let approval = rows.approval, rows.approvalSignerActive, approval.isRedeemable(for: operationHash, by: userID, at: now),
            approval.deviceID != deviceID, let request = rows.enrolmentRequest, request.userID == userID, request.isPending(at: now)
        else { return (false, WritePlan()) }
        var plan = WritePlan()
        plan.add(.redeemApproval(tokenHash: approval.tokenHash, at: now))
        plan.add(.approveEnrolmentRequest(id: request.id, at: now, byDevice: approval.deviceID))
        plan.audit(audit)
        return (true, plan)
    }

    /// Storing a newly sent recovery code for the request in `rows` (read locked), if it is
    /// pending: the previous code stops working, the attempts already made keep counting.
    public static func sendRecoveryCode(_ rows: LockedRows, codeHash: TokenHash, at now: Date, audit: AuditEvent) -> (verdict: Bool, plan: WritePlan) {
        guard let request = rows.enrolmentRequest, request.isPending(at: now) else { return (false, WritePlan()) }
        var plan = WritePlan()
        plan.add(.setRecoveryCode(requestID: request.id, codeHash: codeHash))
        plan.audit(audit)
        return (true, plan)
    }

    /// A recovery code entered for `request` (read locked): only a pending request with a code and
    /// attempts left takes one. A match (compared in constant time) approves it with `audit`; a
    /// mismatch counts an attempt and is audited as `recovery.code.rejected`.
    public static func recovery(
        of request: EnrolmentRequestRecord?, entered: TokenHash, maxAttempts: Int, at now: Date, audit: AuditEvent
    ) -> (verdict: RecoveryOutcome, plan: WritePlan) {
        guard let request, request.isPending(at: now), let expected = request.recoveryCodeHash, request.recoveryAttempts < maxAttempts else {
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
        return (.wrongCode(attemptsLeft: maxAttempts - request.recoveryAttempts - 1), plan)
    }
}
