import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation

/// A ``WritePlan`` run in SQLite: the statements are the shared ones (``MutationStatements``,
/// ``GuardCheck``); the single writer serialises the guards' reads with the writes, so no guard
/// needs a lock. Decides nothing.
extension SQLiteHandle {
    /// Runs a plan inside the current transaction: the guards, then each mutation's statements.
    func apply(_ plan: WritePlan) throws -> PlanOutcome {
        for condition in plan.guards where try !holds(condition) { return .refused(condition) }
        var outcome = PlanOutcome.applied()
        for mutation in plan.mutations { try run(mutation, into: &outcome) }
        return outcome
    }

    private func run(_ mutation: WritePlan.Mutation, into outcome: inout PlanOutcome) throws {
        switch mutation.statements(in: .sqlite) {
        case .run(let statements):
            for statement in statements { try query(statement) }
        case .revokeSessions(let statement):
            outcome.revokedSessions += try query(statement).count
        case .revokeDevices(let statement):
            outcome.revokedDevices += try query(statement).count
        case .countFailure(let failure, let statements):
            var counts: [FailureSubject: Int] = [:]
            for (subject, statement) in statements { counts[subject] = try query(statement).first?.int("count") }
            let consequences = failure.consequences(ofCounts: counts)
            outcome.lockedSubjects += consequences.locked
            for mutation in consequences.plan.mutations { try run(mutation, into: &outcome) }
        case .appendAudit(let merge, let insert):
            if let merge, try !query(merge).isEmpty { return }
            try query(insert)
        }
    }

    private func holds(_ condition: WritePlan.Guard) throws -> Bool {
        switch condition.check {
        case .rowExists(let statement): return try !query(statement).isEmpty
        case .noRows(let statements, _):
            for statement in statements where try !query(statement).isEmpty { return false }
            return true
        case .belowFailureLimits(let lockout): return try !isLockedOut(lockout)
        case .attestation(let statement):
            let stored = try query(statement).first?.optionalString("attestation")
            return try condition.isSatisfied(byAttestation: DeviceAttestation(stored: stored))
        case .passkey(let statement):
            let stored = try query(statement).first?.optionalString("passkey")
            return try condition.isSatisfied(byPasskey: PasskeyCredential(stored: stored))
        }
    }
}
