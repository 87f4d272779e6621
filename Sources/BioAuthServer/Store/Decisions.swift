import BioAuthCore
import Foundation

/// The decisions on a row's current state, each one transaction of
/// ``BioAuthStore/decide(locking:_:)`` with the domain's rule: what the flows call, and what
/// `StoreConformance` holds every store to.
extension BioAuthStore {
    /// One password attempt, decided (``PasswordAttempt/decide(_:user:limits:now:)``) and counted
    /// *before* its slow hash, in one transaction under the user's lock, across instances:
    /// refused with nothing counted, or counted and handed the user row. A successful login
    /// clears the counters (``WritePlan/login(_:from:clearing:rehashed:audit:)``).
    public func beginPasswordAttempt(username: UserID, limits: PasswordAttemptLimits, now: Date) async throws -> PasswordAttempt {
        try await decide(
            locking: RowLocks(
                passwordAttempt: PasswordAttemptKey(user: username, client: limits.lockout.client, signInCode: limits.signInCode))
        ) { rows in
            PasswordAttempt.decide(
                rows.passwordAttempt ?? PasswordAttemptRows(user: nil, counters: [:], knownClient: false), user: username, limits: limits,
                now: now)
        }.verdict
    }

    /// Redeems an approval (``WritePlan/redemption(_:operationHash:userID:at:audit:)``): the
    /// approval consumed, or nil with nothing written. Exactly one of concurrent callers succeeds.
    public func redeemApproval(tokenHash: TokenHash, operationHash: Data, userID: UserID, now: Date, audit: AuditEvent) async throws
        -> ApprovalRecord?
    {
        try await decide(locking: RowLocks(approval: tokenHash)) { rows in
            WritePlan.redemption(rows, operationHash: operationHash, userID: userID, at: now, audit: audit)
        }.verdict
    }

    /// Approves an enrolment request with another device's approval
    /// (``WritePlan/approveRequest(_:userID:enrolling:at:audit:)``); false with nothing written.
    public func approveEnrolmentRequest(
        id: EnrolmentRequestID, userID: UserID, approvalTokenHash: TokenHash, excludingDevice: DeviceID, now: Date, audit: AuditEvent
    ) async throws -> Bool {
        try await decide(locking: RowLocks(approval: approvalTokenHash, enrolmentRequest: id)) { rows in
            WritePlan.approveRequest(rows, userID: userID, enrolling: excludingDevice, at: now, audit: audit)
        }.verdict
    }

    /// Stores an enrolment request below its requester's cap of pending ones for the user
    /// (``WritePlan/requestEnrolment(_:_:maxPending:at:audit:)``): nil when stored, else when
    /// the requester's first pending request stops being pending. Parallel requests cannot pass the cap.
    public func requestEnrolment(_ request: EnrolmentRequestRecord, maxPending: Int, now: Date, audit: AuditEvent) async throws -> Date? {
        try await decide(locking: RowLocks(enrolmentRequestsOf: request.userID)) { rows in
            WritePlan.requestEnrolment(rows, request, maxPending: maxPending, at: now, audit: audit)
        }.verdict
    }

    /// Stores and counts a new recovery code within `limits`
    /// (``WritePlan/sendRecoveryCode(_:userID:requester:codeHash:limits:at:audit:)``), counted for
    /// `requester` (the client address asking); nothing is written unless the verdict is
    /// ``RecoveryCodeDelivery/send``.
    public func setRecoveryCode(
        requestID: EnrolmentRequestID, userID: UserID, requester: String, codeHash: TokenHash, limits: RecoveryCodeLimits, now: Date,
        audit: AuditEvent
    ) async throws -> RecoveryCodeDelivery {
        try await decide(locking: RowLocks(enrolmentRequest: requestID, counters: [.recoveryCodes(userID, client: requester)])) { rows in
            WritePlan.sendRecoveryCode(
                rows, userID: userID, requester: requester, codeHash: codeHash, limits: limits, at: now, audit: audit)
        }.verdict
    }

    /// Ends `userID`'s request, pending or approved and unused (``WritePlan/cancelRequest(_:userID:at:audit:)``);
    /// false with nothing written when there is no such request.
    public func cancelEnrolmentRequest(id: EnrolmentRequestID, userID: UserID, now: Date, audit: AuditEvent) async throws -> Bool {
        try await decide(locking: RowLocks(enrolmentRequest: id)) { rows in
            WritePlan.cancelRequest(rows, userID: userID, at: now, audit: audit)
        }.verdict
    }

    /// Checks an entered recovery code (``WritePlan/recovery(of:entered:maxAttempts:at:audit:)``).
    public func recoverEnrolmentRequest(id: EnrolmentRequestID, codeHash: TokenHash, maxAttempts: Int, now: Date, audit: AuditEvent)
        async throws -> RecoveryOutcome
    {
        try await decide(locking: RowLocks(enrolmentRequest: id)) { rows in
            WritePlan.recovery(of: rows.enrolmentRequest, entered: codeHash, maxAttempts: maxAttempts, at: now, audit: audit)
        }.verdict
    }

    /// Rotates a presented refresh token, returns the same successor to a retry within `grace`,
    /// or ends its session if it was spent before that
    /// (``WritePlan/refresh(_:presented:successor:grace:at:audit:reuseAudit:)``). Exactly one of
    /// concurrent rotations of one token rotates; the others within the grace get its successor.
    public func rotateRefreshToken(
        presented: Data, successor: SecretBytes, grace: TimeInterval, now: Date, audit: AuditEvent, reuseAudit: AuditEvent
    ) async throws -> RefreshRotation {
        try await decide(locking: RowLocks(refreshToken: TokenHash(of: presented))) { rows in
            WritePlan.refresh(rows, presented: presented, successor: successor, grace: grace, at: now, audit: audit, reuseAudit: reuseAudit)
        }.verdict
    }
}
