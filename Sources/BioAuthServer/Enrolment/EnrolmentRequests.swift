import BioAuthCore
import Crypto
import Foundation
import Logging

/// Requests to enrol a second device or a new key: approved by another device's step-up or by a
/// recovery code sent through the deployment's ``RecoveryChannel``.
struct EnrolmentRequests: Flow {
    let context: FlowContext

    func requestEnrolment(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: String?, request: RequestInfo
    ) async throws(ServerError) -> EnrolmentRequestRecord {
        let enrolment = try await DeviceEnrolment(context: context).subject(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
        guard enrolment.needsProof else { throw ServerError(.conflict, detail: "this enrolment needs no approval") }
        let now = clock.now()
        let record = EnrolmentRequestRecord(
            id: UUID().uuidString.lowercased(), userID: session.userID, deviceID: enrolment.deviceID, name: enrolment.name, publicKey: enrolment.publicKey,
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

    func enrolmentRequest(id: String, of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> EnrolmentRequestRecord {
        let id = try Validate.deviceID(id, field: "id")
        guard let record = try await run(request, { try await self.store.enrolmentRequest(id: id) }), record.userID == session.userID,
            record.expiresAt > clock.now()
        else { throw ServerError(.notFound, field: "id") }
        return record
    }

    func approve(requestID: String, approval: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        guard session.kind == .device else { throw ServerError(.forbidden, detail: "only another enrolled device may approve an enrolment") }
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        let operationHash = Data(SHA256.hash(data: Data(record.approvalText.utf8)))
        let audit = event(.enrolmentApproved, user: record.userID, device: record.deviceID, reason: AuditReason.approvedByDevice.description, request: request)
        guard
            try await run(
                request,
                {
                    try await self.store.approveEnrolmentRequest(
                        id: record.id, userID: session.userID, approvalTokenHash: Data(SHA256.hash(data: token)), operationHash: operationHash,
                        excludingDevice: record.deviceID, now: self.clock.now(), audit: audit)
                }) != nil
        else {
            await self.audit(.approvalRejected, user: session.userID, device: session.deviceID, reason: FailureReason.approvalRejected.description, request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        log(audit)
    }

    func sendRecoveryCode(requestID: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        guard let recoveryChannel = context.recoveryChannel else { throw ServerError(.forbidden, detail: "no recovery channel is configured") }
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        guard record.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        guard !record.isApproved else { throw ServerError(.conflict, detail: "already approved") }
        let code = RecoveryCode.random()
        let audit = event(.recoveryCodeSent, user: record.userID, device: record.deviceID, request: request)
        guard try await run(request, { try await self.store.setRecoveryCode(requestID: record.id, codeHash: code.hash, now: self.clock.now(), audit: audit) }) else {
            throw ServerError(.notFound, field: "id")
        }
        do { try await recoveryChannel.deliver(code, for: record) } catch {
            logger.error("recovery code delivery failed", metadata: metadata(audit).merging(["error": "\(type(of: error))"]) { $1 })
            throw ServerError(.unavailable, detail: "the recovery code could not be delivered", retryAfter: 30)
        }
        log(audit)
    }

    func recover(requestID: String, code: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        guard record.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        guard (1...32).contains(code.utf8.count), code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == " ") }) else {
            throw ServerError(.invalidRequest, field: "code", detail: "1 to 32 letters, digits and dashes")
        }
        let audit = event(.enrolmentApproved, user: record.userID, device: record.deviceID, reason: AuditReason.recoveryCode.description, request: request)
        let outcome = try await run(request) {
            try await self.store.recoverEnrolmentRequest(
                id: record.id, codeHash: RecoveryCode.hash(ofEntered: code), maxAttempts: self.configuration.enrolment.maxRecoveryAttempts, now: self.clock.now(),
                audit: audit)
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
}
