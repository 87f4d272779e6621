import BioAuthCore
import Foundation

/// A decision on rows' current state: the rows it reads, locked until its transaction ends
/// (``locks``), and the domain's rule that turns them into a verdict and a plan (``decide(_:)``).
/// A store runs it in one transaction (``BioAuthStore/run(_:)``) and decides nothing itself; the
/// flows call these, and `StoreConformance` holds every store to them.
package protocol RowDecision: Sendable {
    associatedtype Verdict: Sendable
    var locks: RowLocks { get }
    func decide(_ rows: LockedRows) -> (verdict: Verdict, plan: WritePlan)
}

extension BioAuthStore {
    /// Reads the decision's rows locked, decides, and applies its plan, in one transaction.
    package func run<Decision: RowDecision>(_ decision: Decision) async throws -> Decision.Verdict {
        try await decide(locking: decision.locks) { rows in decision.decide(rows) }.verdict
    }
}

/// One password attempt, decided (``PasswordAttempt/decide(_:user:limits:now:)``) and counted
/// *before* its slow hash, under the user's lock, across instances: refused with nothing counted,
/// or counted and handed the user row. A successful login clears the counters
/// (``WritePlan/login(_:from:clearing:rehashed:audit:)``).
package struct BeginPasswordAttempt: RowDecision {
    var username: UserID
    var limits: PasswordAttemptLimits
    var now: Date

    package init(username: UserID, limits: PasswordAttemptLimits, now: Date) {
        self.username = username
        self.limits = limits
        self.now = now
    }

    package var locks: RowLocks {
        RowLocks(passwordAttempt: PasswordAttemptKey(user: username, client: limits.lockout.client, signInCode: limits.signInCode))
    }

    package func decide(_ rows: LockedRows) -> (verdict: PasswordAttempt, plan: WritePlan) {
        PasswordAttempt.decide(
            rows.passwordAttempt ?? PasswordAttemptRows(user: nil, counters: [:], knownClient: false), user: username, limits: limits,
            now: now)
    }
}

/// Redeems an approval (``WritePlan/redemption(_:operationHash:userID:at:audit:)``): the approval
/// consumed, or nil with nothing written. Exactly one of concurrent redemptions succeeds.
package struct RedeemApproval: RowDecision {
    var tokenHash: TokenHash
    var operationHash: Data
    var userID: UserID
    var now: Date
    var audit: AuditEvent

    package init(tokenHash: TokenHash, operationHash: Data, userID: UserID, now: Date, audit: AuditEvent) {
        self.tokenHash = tokenHash
        self.operationHash = operationHash
        self.userID = userID
        self.now = now
        self.audit = audit
    }

    package var locks: RowLocks { RowLocks(approval: tokenHash) }

    package func decide(_ rows: LockedRows) -> (verdict: ApprovalRecord?, plan: WritePlan) {
        WritePlan.redemption(rows, operationHash: operationHash, userID: userID, at: now, audit: audit)
    }
}

/// Approves an enrolment request with another device's approval
/// (``WritePlan/approveRequest(_:userID:enrolling:at:audit:)``); false with nothing written.
package struct ApproveEnrolmentRequest: RowDecision {
    var id: EnrolmentRequestID
    var userID: UserID
    var approvalTokenHash: TokenHash
    var excludingDevice: DeviceID
    var now: Date
    var audit: AuditEvent

    package init(
        id: EnrolmentRequestID, userID: UserID, approvalTokenHash: TokenHash, excludingDevice: DeviceID, now: Date, audit: AuditEvent
    ) {
        self.id = id
        self.userID = userID
        self.approvalTokenHash = approvalTokenHash
        self.excludingDevice = excludingDevice
        self.now = now
        self.audit = audit
    }

    package var locks: RowLocks { RowLocks(approval: approvalTokenHash, enrolmentRequest: id) }

    package func decide(_ rows: LockedRows) -> (verdict: Bool, plan: WritePlan) {
        WritePlan.approveRequest(rows, userID: userID, enrolling: excludingDevice, at: now, audit: audit)
    }
}

/// Stores an enrolment request below its requester's cap of pending ones for the user
/// (``WritePlan/requestEnrolment(_:_:maxPending:at:audit:)``): nil when stored, else when the
/// requester's first pending request stops being pending. Parallel requests cannot pass the cap.
package struct RequestEnrolment: RowDecision {
    var request: EnrolmentRequestRecord
    var maxPending: Int
    var now: Date
    var audit: AuditEvent

    package init(_ request: EnrolmentRequestRecord, maxPending: Int, now: Date, audit: AuditEvent) {
        self.request = request
        self.maxPending = maxPending
        self.now = now
        self.audit = audit
    }

    package var locks: RowLocks { RowLocks(enrolmentRequestsOf: request.userID) }

    package func decide(_ rows: LockedRows) -> (verdict: Date?, plan: WritePlan) {
        WritePlan.requestEnrolment(rows, request, maxPending: maxPending, at: now, audit: audit)
    }
}

/// Stores and counts a new recovery code within `limits`
/// (``WritePlan/sendRecoveryCode(_:userID:requester:codeHash:limits:at:audit:)``), counted for
/// `requester` (the client address asking); nothing is written unless the verdict is
/// ``RecoveryCodeDelivery/send``.
package struct SetRecoveryCode: RowDecision {
    var requestID: EnrolmentRequestID
    var userID: UserID
    var requester: String
    var codeHash: TokenHash
    var limits: RecoveryCodeLimits
    var now: Date
    var audit: AuditEvent

    package init(
        requestID: EnrolmentRequestID, userID: UserID, requester: String, codeHash: TokenHash, limits: RecoveryCodeLimits, now: Date,
        audit: AuditEvent
    ) {
        self.requestID = requestID
        self.userID = userID
        self.requester = requester
        self.codeHash = codeHash
        self.limits = limits
        self.now = now
        self.audit = audit
    }

    package var locks: RowLocks {
        RowLocks(enrolmentRequest: requestID, counters: FailureSubject.recoveryCodeCounters(userID, client: requester))
    }

    package func decide(_ rows: LockedRows) -> (verdict: RecoveryCodeDelivery, plan: WritePlan) {
        WritePlan.sendRecoveryCode(rows, userID: userID, requester: requester, codeHash: codeHash, limits: limits, at: now, audit: audit)
    }
}

/// A decision on one request by the user who owns it, or by the backend for them: ending it
/// (``cancel(id:userID:now:audit:)``) or vouching for it (``vouch(id:userID:now:audit:)``). False
/// with nothing written when the request is not theirs, or not in a state the rule accepts.
package struct OwnedRequestDecision: RowDecision {
    private var id: EnrolmentRequestID
    private var rule: @Sendable (LockedRows) -> (verdict: Bool, plan: WritePlan)

    /// Ends `userID`'s request, pending or approved and unused (``WritePlan/cancelRequest(_:userID:at:audit:)``).
    package static func cancel(id: EnrolmentRequestID, userID: UserID, now: Date, audit: AuditEvent) -> Self {
        Self(id: id) { rows in WritePlan.cancelRequest(rows, userID: userID, at: now, audit: audit) }
    }

    /// The backend vouches for `userID`'s pending request (``WritePlan/vouchForRequest(_:userID:at:audit:)``).
    package static func vouch(id: EnrolmentRequestID, userID: UserID, now: Date, audit: AuditEvent) -> Self {
        Self(id: id) { rows in WritePlan.vouchForRequest(rows, userID: userID, at: now, audit: audit) }
    }

    package var locks: RowLocks { RowLocks(enrolmentRequest: id) }

    package func decide(_ rows: LockedRows) -> (verdict: Bool, plan: WritePlan) { rule(rows) }
}

/// Checks an entered recovery code (``WritePlan/recovery(of:entered:maxAttempts:at:audit:)``).
package struct RecoverEnrolmentRequest: RowDecision {
    var id: EnrolmentRequestID
    var codeHash: TokenHash
    var maxAttempts: Int
    var now: Date
    var audit: AuditEvent

    package init(id: EnrolmentRequestID, codeHash: TokenHash, maxAttempts: Int, now: Date, audit: AuditEvent) {
        self.id = id
        self.codeHash = codeHash
        self.maxAttempts = maxAttempts
        self.now = now
        self.audit = audit
    }

    package var locks: RowLocks { RowLocks(enrolmentRequest: id) }

    package func decide(_ rows: LockedRows) -> (verdict: RecoveryOutcome, plan: WritePlan) {
        WritePlan.recovery(of: rows.enrolmentRequest, entered: codeHash, maxAttempts: maxAttempts, at: now, audit: audit)
    }
}

/// Rotates a presented refresh token, returns the same successor to a retry within `grace`, or
/// ends its session if it was spent before that
/// (``WritePlan/refresh(_:presented:successor:grace:at:audit:reuseAudit:)``). Exactly one of
/// concurrent rotations of one token rotates; the others within the grace get its successor.
package struct RotateRefreshToken: RowDecision {
    var presented: Data
    var successor: SecretBytes
    var grace: TimeInterval
    var now: Date
    var audit: AuditEvent
    var reuseAudit: AuditEvent
    /// The thumbprint of the key that signed the request's DPoP proof; nil without one.
    var proofKey: String?

    package init(
        presented: Data, successor: SecretBytes, grace: TimeInterval, now: Date, audit: AuditEvent, reuseAudit: AuditEvent,
        proofKey: String? = nil
    ) {
        self.proofKey = proofKey
        self.presented = presented
        self.successor = successor
        self.grace = grace
        self.now = now
        self.audit = audit
        self.reuseAudit = reuseAudit
    }

    package var locks: RowLocks { RowLocks(refreshToken: TokenHash(of: presented)) }

    package func decide(_ rows: LockedRows) -> (verdict: RefreshRotation, plan: WritePlan) {
        // A token bound to a DPoP key is honoured only with that key's proof; without it, nothing
        // is rotated or revoked: a copy of the token is useless, and cannot burn the owner's.
        if let bound = rows.refreshSession?.session.dpopThumbprint, bound != proofKey {
            return (.keyMismatch(proofKey == nil ? .missing : .wrongKey), WritePlan())
        }
        return WritePlan.refresh(
            rows, presented: presented, successor: successor, grace: grace, at: now, audit: audit, reuseAudit: reuseAudit)
    }
}
