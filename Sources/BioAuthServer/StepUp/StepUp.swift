import BioAuthCore
import Crypto
import Foundation
import Logging
import Metrics

/// Step-up: a device signs the SHA-256 of an operation the app shows; the one-time approval it
/// gets is redeemed by the app's backend for exactly that operation.
struct StepUp: Flow {
    let context: FlowContext

    func begin(session: SessionRecord, deviceID: DeviceID, operation: String, request: RequestInfo) async throws(ServerError)
        -> ChallengeEnvelope
    {
        try authorizeUnread(.stepUp, session)
        let deviceID = try Validate.deviceID(deviceID)
        let details = try Validate.base64URL(operation, field: "operation", count: 1...configuration.maxOperationSize)
        guard let device = try await run(request, { try await self.store.device(id: deviceID) }), device.userID == session.userID,
            !device.isRevoked
        else {
            throw ServerError(.notFound, field: "deviceId")
        }
        try await requireOutOfCoolDown(device, field: "deviceId", request: request)
        return try await Challenges(context: context).issue(
            .stepUp(operationHash: Data(SHA256.hash(data: details)), deviceKey: device.publicKey), user: session.userID, device: deviceID,
            session: session.id, request)
    }

    func finish(session: SessionRecord, challengeID: ChallengeID, signature: String, appAttest: AppAttestProof? = nil, request: RequestInfo)
        async throws(ServerError)
        -> ApprovalGrant
    {
        try authorizeUnread(.stepUp, session)
        let token = SecretBytes.random(count: 32)
        let (approval, _) = try await Challenges(context: context).finish(
            challengeID, signature, appAttest: appAttest, purpose: .stepUp, session: session, request
        ) {
            proven, _, now -> (verdict: (record: ApprovalRecord, audit: AuditEvent), plan: WritePlan)? in
            let challenge = proven.challenge
            guard case .stepUp(let operationHash, _) = challenge.binding else { return nil }
            let record = ApprovalRecord(
                tokenHash: TokenHash(of: token), userID: challenge.userID, deviceID: challenge.deviceID,
                operationHash: operationHash, createdAt: now, expiresAt: now.addingTimeInterval(self.configuration.approvalTTL),
                sessionID: session.id)
            let audit = self.event(.stepUpApproved, user: challenge.userID, device: challenge.deviceID, request: request)
            return ((record, audit), .approval(record, audit: audit))
        }
        let (record, audit) = approval
        metrics.stepUps.increment()
        log(audit, request: request)
        return ApprovalGrant(approval: Base64URL.encode(token.data), record: record)
    }

    func redeem(approval: String, operation: String, userID: UserID, request: RequestInfo) async throws(ServerError) -> ApprovalRecord {
        try await admit(request)
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let details = try Validate.base64URL(operation, field: "operation", count: 1...configuration.maxOperationSize)
        let userID = try Validate.userID(userID)
        let hash = TokenHash(of: token)
        let operationHash = Data(SHA256.hash(data: details))
        let audit = event(.approvalRedeemed, request: request)
        let now = clock.now()
        // Failed redemptions are limited per key and user: one user's junk never refuses another's.
        let failures = (request.apiKeyID?.rawValue ?? request.requestSubject) + "|" + userID.rawValue
        if let retryAfter = await context.failedRedemptions.refusal(failures, at: now) {
            metrics.rateLimited.increment()
            throw ServerError(.rateLimited, retryAfter: retryAfter)
        }
        let redeemed = try await run(request) {
            try await self.writer.run(RedeemApproval(tokenHash: hash, operationHash: operationHash, userID: userID, now: now, audit: audit))
        }
        guard let record = redeemed else {
            _ = await context.failedRedemptions.admit(failures, at: now)
            await self.audit(.approvalRejected, user: userID, reason: AuditReason(FailureReason.approvalRejected), request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        log(audit.about(user: record.userID, device: record.deviceID))
        return record
    }
}

extension WritePlan {
    /// Redeeming the approval in `rows` (read locked): only an approval that is
    /// ``ApprovalRecord/isRedeemable(for:by:at:)`` and whose device is still active is consumed,
    /// with `audit` about its user and device; it is returned then, nil with nothing written otherwise.
    package static func redemption(
        _ rows: LockedRows, operationHash: Data, userID: UserID, at now: Date, audit: AuditEvent
    ) -> (verdict: ApprovalRecord?, plan: WritePlan) {
        guard var approval = rows.approval, rows.approvalSignerActive, approval.isRedeemable(for: operationHash, by: userID, at: now) else {
            return (nil, WritePlan())
        }
        approval.consumedAt = now
        var plan = WritePlan()
        plan.add(.redeemApproval(tokenHash: approval.tokenHash, at: now))
        plan.audit(audit.about(user: approval.userID, device: approval.deviceID))
        return (approval, plan)
    }
}
