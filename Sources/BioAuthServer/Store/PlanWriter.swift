import Foundation

/// Where the server writes what it decided. Every plan reaches the store published
/// (``WritePlan/publishing(_:)``) with the events this deployment delivers
/// (``ServerConfiguration/publishedEvents``): an event no sink reads would cost a row, its index
/// entries and a later delete on every login. Flows read through the store itself and write only
/// through this (`FlowTests` checks the sources).
struct PlanWriter: Sendable {
    let store: any BioAuthStore
    let published: Set<AuditKind>

    func apply(_ plan: WritePlan) async throws -> PlanOutcome { try await store.apply(plan.publishing(published)) }

    func decide<Verdict: Sendable>(
        locking: RowLocks, _ decide: @escaping @Sendable (LockedRows) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        try await store.decide(locking: locking) { [published] rows in
            let decided = decide(rows)
            return (decided.verdict, decided.plan.publishing(published))
        }
    }

    func consumeChallenge<Verdict: Sendable>(
        id: ChallengeID, lockout: LockoutQuery, decide: @escaping @Sendable (TakenChallenge?) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        try await store.consumeChallenge(id: id, lockout: lockout) { [published] taken in
            let decided = decide(taken)
            return (decided.verdict, decided.plan.publishing(published))
        }
    }

    /// Reads the decision's rows locked, decides, and applies its plan, in one transaction.
    func run<Decision: RowDecision>(_ decision: Decision) async throws -> Decision.Verdict {
        try await self.decide(locking: decision.locks) { rows in decision.decide(rows) }.verdict
    }
}
