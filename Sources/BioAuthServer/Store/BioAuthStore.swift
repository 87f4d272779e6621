import BioAuthCore
import Foundation

/// Everything the server keeps, behind one protocol shaped by the requests that use it: the
/// SQLite (a file or `:memory:`) and PostgreSQL stores pass the same conformance suite
/// (`BioAuthTesting.StoreConformance`).
///
/// Each write method is one transaction: when it returns, everything it was given (rows, counter
/// changes, audit events) is committed together, and a crash afterwards loses none of it. A login
/// is two requests, and each costs one commit: the challenge's plan (`WritePlan.issueChallenge(_:lockout:)`)
/// and ``consumeChallenge(id:lockout:decide:)``. Times are passed in (no clock inside a store). What
/// a write adds, withdraws and audits is decided by the domain as a ``WritePlan``; a store
/// translates it and decides nothing.
public protocol BioAuthStore: Sendable {
    // MARK: Plans

    /// Applies a plan the domain decided, in one transaction: checks every guard (refusing, with
    /// nothing written, at the first that fails), then runs the mutations in order. Decides nothing.
    func apply(_ plan: WritePlan) async throws -> PlanOutcome
    /// Reads the rows `locking` names, locked for the rest of the transaction, hands them to
    /// `decide`, and applies the plan it returns — all in one transaction. `decide` runs inside the
    /// transaction: it must be quick and must not use the store.
    func decide<Verdict: Sendable>(
        locking: RowLocks, _ decide: @escaping @Sendable (LockedRows) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome)

    // MARK: Users (the demo primary login)

    /// The user (nil if unknown) and whether the client address's failure limit is reached.
    /// `username` nil asks about the address alone: no user is found and no address is known.
    func passwordLoginState(username: UserID?, lockout: LockoutQuery) async throws -> PasswordLoginState

    // MARK: Challenges

    /// Deletes the challenge and, in the same transaction, hands it with its device row, its
    /// enrolment request's row and the lockout state to `decide`, then applies the plan `decide` returns. Exactly one caller ever receives
    /// a
    /// given challenge, even under races and across instances; the consumption is committed
    /// whatever the plan's guards say. `decide` must be a pure function of what it is given that
    /// does not use the store: a store may call it before the transaction, on the rows as read then,
    /// and keep that answer only if the transaction reads the same rows (the SQLite store does, so
    /// that signatures are not verified on its one writer thread).
    func consumeChallenge<Verdict: Sendable>(
        id: ChallengeID, lockout: LockoutQuery, decide: @escaping @Sendable (TakenChallenge?) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome)
    /// The challenge, unconsumed: what a registration's attestation is verified against before
    /// ``consumeChallenge(id:lockout:decide:)`` takes it. Nil if unknown or already taken.
    func challenge(id: ChallengeID) async throws -> ChallengeRecord?
    /// Deletes challenges that expired before `date`; returns how many.
    func deleteChallenges(expiredBefore date: Date) async throws -> Int
    /// Deletes window counters whose window started before `windowsBefore`, password runs whose
    /// last attempt and daily recovery-code counts whose day started before `runsBefore`, audit rows, undelivered outbox events and known
    /// client
    /// addresses (``WritePlan/Mutation/rememberClient(userID:client:at:)``) older than `auditBefore`, approvals and enrolment requests that
    /// expired before `windowsBefore`, and
    /// sessions that expired or were revoked before `sessionsBefore` with their spent refresh tokens.
    func sweep(windowsBefore: Date, runsBefore: Date, auditBefore: Date, sessionsBefore: Date) async throws -> SweepResult

    // MARK: Devices

    func device(id: DeviceID) async throws -> DeviceRecord?
    /// The user's devices in creation order.
    func devices(userID: UserID) async throws -> [DeviceRecord]

    // MARK: Sessions

    /// The session a token hash names, with the state of the device that opened it.
    func session(tokenHash: TokenHash) async throws -> SessionState?
    /// The session with this id, with the state of the device that opened it.
    func session(id: SessionID) async throws -> SessionState?
    /// The user's sessions in creation order.
    func sessions(userID: UserID) async throws -> [SessionRecord]

    // MARK: Enrolment requests

    func enrolmentRequest(id: EnrolmentRequestID) async throws -> EnrolmentRequestRecord?
    /// The user's requests unexpired at `now`, in creation order.
    func enrolmentRequests(userID: UserID, now: Date) async throws -> [EnrolmentRequestRecord]

    // MARK: Cross-device sign-ins

    func crossDeviceRequest(id: CrossDeviceRequestID) async throws -> CrossDeviceRequestRecord?
    /// Up to `limit` of the user's requests still waiting for a phone at `now`: those from
    /// addresses where the user signed in before first, then the newest.
    func pendingCrossDeviceRequests(userID: UserID, now: Date, limit: Int) async throws -> [CrossDeviceRequestRecord]

    // MARK: Device removals

    /// The user's device removals, ended ones too, in creation order.
    func deviceRemovals(userID: UserID) async throws -> [DeviceRemovalRecord]
    /// Up to `limit` removals scheduled to happen at or before `now` and not ended, earliest first.
    func dueDeviceRemovals(now: Date, limit: Int) async throws -> [DeviceRemovalRecord]
    // MARK: The event outbox

    // Every write that appends an audit event of a kind in ``AuditKind/deliveredEvents`` also
    // adds it to the outbox, in the same transaction.

    /// Up to `limit` events due at `now` (next attempt reached, not leased to another instance),
    /// those of a kind in `first` before the others, each part oldest first; leased until `leaseUntil`.
    func claimOutbox(now: Date, leaseUntil: Date, limit: Int, first: Set<AuditKind>) async throws -> [OutboxEvent]
    /// Deletes a delivered event.
    func completeOutbox(id: Int64) async throws
    /// Records a failed delivery: the attempt count, the next attempt, the lease released.
    func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) async throws
    /// Sets an event aside as a dead letter after its last failed attempt: never claimed again
    /// until replayed (``claimOutbox(now:leaseUntil:limit:first:)`` skips it).
    func deadLetterOutbox(id: Int64, attempts: Int, at: Date) async throws
    /// Up to `limit` dead letters, oldest first, with their attempts.
    func deadLetters(limit: Int) async throws -> [OutboxEvent]
    /// Puts dead letters back in the outbox, due at `now` with no attempts; how many there were.
    func replayDeadLetters(ids: [Int64], now: Date) async throws -> Int
    /// How many events wait (not dead), when the oldest of them happened, and how many are dead letters.
    func outboxStatus() async throws -> OutboxStatus

    // MARK: Access-token signing keys

    /// Every signing key, oldest first.
    func signingKeys() async throws -> [SigningKeyRecord]

    // MARK: API keys (the backend API)

    /// The key whose secret hashes to `secretHash`, revoked or not; nil if none.
    func apiKey(secretHash: TokenHash) async throws -> ApiKeyRecord?
    /// Every key, revoked ones too, in creation order.
    func apiKeys() async throws -> [ApiKeyRecord]

    // MARK: Audit

    /// The newest events first, of one user if given.
    func auditEvents(userID: UserID?, limit: Int) async throws -> [AuditEvent]

    // MARK: Lifecycle

    /// Releases connections. Idempotent; the store is unusable afterwards.
    func close() async throws
}

extension BioAuthStore {
    /// Up to `limit` due events, oldest first (``claimOutbox(now:leaseUntil:limit:first:)`` with no kind first).
    public func claimOutbox(now: Date, leaseUntil: Date, limit: Int) async throws -> [OutboxEvent] {
        try await claimOutbox(now: now, leaseUntil: leaseUntil, limit: limit, first: [])
    }
}

/// A consumed challenge with what its verification needs, read in the same transaction.
public struct TakenChallenge: Sendable, Hashable {
    public var challenge: ChallengeRecord
    /// The row of `challenge.deviceID`, if one exists (whoever owns it).
    public var device: DeviceRecord?
    /// The row of `challenge.enrolmentRequestID`, if it names one that exists.
    public var enrolmentRequest: EnrolmentRequestRecord?
    /// True if a failure limit in force for the request is reached.
    public var lockedOut: Bool

    public init(challenge: ChallengeRecord, device: DeviceRecord?, enrolmentRequest: EnrolmentRequestRecord? = nil, lockedOut: Bool) {
        self.challenge = challenge
        self.device = device
        self.enrolmentRequest = enrolmentRequest
        self.lockedOut = lockedOut
    }
}

/// A failure to count: each subject's counter in the window, the audit event, and one `lockout`
/// event per subject that reaches its limit.
public struct FailureRecord: Sendable, Hashable {
    public var reason: FailureReason
    public var subjects: [FailureSubject]
    public var limits: [FailureSubject: Int]
    public var windowStart: Date
    public var audit: AuditEvent
    /// Subjects counted before this failure was known (a password attempt) that reached their
    /// limit then: audited as lockouts with it.
    public var reachedEarlier: [FailureSubject] = []
    /// The kinds whose events the consequences also queue for delivery (``WritePlan/publishing(_:)``
    /// sets it): none until a plan is published.
    package var published: Set<AuditKind> = []

    /// A failure counted against the sending address.
    public init(_ reason: FailureReason, lockout: LockoutQuery, audit: AuditEvent) {
        self.reason = reason
        subjects = [.client(lockout.client)]
        limits = [.client(lockout.client): lockout.clientLimit]
        windowStart = lockout.windowStart
        self.audit = audit
    }

    /// A failure of a device proof (a signature, an attestation), which cannot succeed by
    /// repetition: audited, counted against nobody (`RateWindows` throttles its sender by the
    /// request limit instead), so a stranger's forgeries lock out neither a device, its owner, nor
    /// the address they share.
    public init(unguessable reason: FailureReason, lockout: LockoutQuery, audit: AuditEvent) {
        self.init(reason, lockout: lockout, audit: audit)
        subjects = []
        limits = [:]
    }

    /// The audit event for a subject that just reached its limit.
    public func lockoutEvent(_ subject: FailureSubject) -> AuditEvent {
        var event = audit
        event.kind = .lockout
        event.reason = AuditReason(limit: subject)
        return event
    }
}

/// A session with the state of the device that opened it.
public struct SessionState: Sendable, Hashable {
    public var session: SessionRecord
    /// For a device session: false if the device is revoked or gone. Always true for a primary session.
    public var deviceActive: Bool

    public init(session: SessionRecord, deviceActive: Bool) {
        self.session = session
        self.deviceActive = deviceActive
    }
}
