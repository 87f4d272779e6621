import Foundation

/// The store the flows use: every plan reaches `base` published (``WritePlan/publishing(_:)``)
/// with the events this deployment delivers (``ServerConfiguration/publishedEvents``) — an event
/// no sink reads would cost a row, its index entries and a later delete on every login.
/// Everything else passes through.
struct PublishingStore: BioAuthStore {
    let base: any BioAuthStore
    let published: Set<AuditKind>

    func apply(_ plan: WritePlan) async throws -> PlanOutcome { try await base.apply(plan.publishing(published)) }

    func decide<Verdict: Sendable>(
        locking: RowLocks, _ decide: @escaping @Sendable (LockedRows) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        try await base.decide(locking: locking) { [published] rows in
            let decided = decide(rows)
            return (decided.verdict, decided.plan.publishing(published))
        }
    }

    func consumeChallenge<Verdict: Sendable>(
        id: ChallengeID, lockout: LockoutQuery, decide: @escaping @Sendable (TakenChallenge?) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        try await base.consumeChallenge(id: id, lockout: lockout) { [published] taken in
            let decided = decide(taken)
            return (decided.verdict, decided.plan.publishing(published))
        }
    }

    func passwordLoginState(username: UserID?, lockout: LockoutQuery) async throws -> PasswordLoginState {
        try await base.passwordLoginState(username: username, lockout: lockout)
    }
    func challenge(id: ChallengeID) async throws -> ChallengeRecord? { try await base.challenge(id: id) }
    func deleteChallenges(expiredBefore date: Date) async throws -> Int { try await base.deleteChallenges(expiredBefore: date) }
    func sweep(windowsBefore: Date, runsBefore: Date, auditBefore: Date, sessionsBefore: Date) async throws -> SweepResult {
        try await base.sweep(windowsBefore: windowsBefore, runsBefore: runsBefore, auditBefore: auditBefore, sessionsBefore: sessionsBefore)
    }
    func device(id: DeviceID) async throws -> DeviceRecord? { try await base.device(id: id) }
    func devices(userID: UserID) async throws -> [DeviceRecord] { try await base.devices(userID: userID) }
    func session(tokenHash: TokenHash) async throws -> SessionState? { try await base.session(tokenHash: tokenHash) }
    func session(id: SessionID) async throws -> SessionState? { try await base.session(id: id) }
    func sessions(userID: UserID) async throws -> [SessionRecord] { try await base.sessions(userID: userID) }
    func enrolmentRequest(id: EnrolmentRequestID) async throws -> EnrolmentRequestRecord? { try await base.enrolmentRequest(id: id) }
    func enrolmentRequests(userID: UserID, now: Date) async throws -> [EnrolmentRequestRecord] {
        try await base.enrolmentRequests(userID: userID, now: now)
    }
    func deviceRemovals(userID: UserID) async throws -> [DeviceRemovalRecord] { try await base.deviceRemovals(userID: userID) }
    func dueDeviceRemovals(now: Date, limit: Int) async throws -> [DeviceRemovalRecord] {
        try await base.dueDeviceRemovals(now: now, limit: limit)
    }
    func claimOutbox(now: Date, leaseUntil: Date, limit: Int, first: Set<AuditKind>) async throws -> [OutboxEvent] {
        try await base.claimOutbox(now: now, leaseUntil: leaseUntil, limit: limit, first: first)
    }
    func completeOutbox(id: Int64) async throws { try await base.completeOutbox(id: id) }
    func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) async throws {
        try await base.retryOutbox(id: id, attempts: attempts, nextAttemptAt: nextAttemptAt)
    }
    func deadLetterOutbox(id: Int64, attempts: Int, at: Date) async throws {
        try await base.deadLetterOutbox(id: id, attempts: attempts, at: at)
    }
    func deadLetters(limit: Int) async throws -> [OutboxEvent] { try await base.deadLetters(limit: limit) }
    func replayDeadLetters(ids: [Int64], now: Date) async throws -> Int { try await base.replayDeadLetters(ids: ids, now: now) }
    func outboxStatus() async throws -> OutboxStatus { try await base.outboxStatus() }
    func signingKeys() async throws -> [SigningKeyRecord] { try await base.signingKeys() }
    func apiKey(secretHash: TokenHash) async throws -> ApiKeyRecord? { try await base.apiKey(secretHash: secretHash) }
    func apiKeys() async throws -> [ApiKeyRecord] { try await base.apiKeys() }
    func auditEvents(userID: UserID?, limit: Int) async throws -> [AuditEvent] { try await base.auditEvents(userID: userID, limit: limit) }
    func close() async throws { try await base.close() }
}
