import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

/// A ``WritePlan`` run in PostgreSQL, inside the caller's transaction: the statements are the
/// shared ones (``MutationStatements``, ``GuardCheck``); a guard's read locks the row it checks,
/// so concurrent plans on one row queue. Decides nothing.
extension PostgresStore {
    /// Runs a plan inside the current transaction: the guards, then each mutation's statements.
    func apply(_ plan: WritePlan, _ c: PostgresConnection) async throws -> PlanOutcome {
        for condition in plan.guards where try await !holds(condition, c) { return .refused(condition) }
        var outcome = PlanOutcome.applied()
        for mutation in plan.mutations { try await run(mutation, into: &outcome, c) }
        return outcome
    }

    private func holds(_ condition: WritePlan.Guard, _ c: PostgresConnection) async throws -> Bool {
        switch condition.check {
        case .rowExists(let statement): return try await !rows(statement, c).isEmpty
        case .noRows(let statements, let lock):
            try await lockUser(lock.rule, lock.userID, c)
            for statement in statements where try await !rows(statement, c).isEmpty { return false }
            return true
        case .belowFailureLimits(let lockout): return try await !isLockedOut(lockout, c)
        case .attestation(let statement):
            let stored = try await rows(statement, c).first.flatMap { try PostgresStoredRow($0).optionalString("attestation") }
            return try condition.isSatisfied(byAttestation: DeviceAttestation(stored: stored))
        case .passkey(let statement):
            let stored = try await rows(statement, c).first.flatMap { try PostgresStoredRow($0).optionalString("passkey") }
            return try condition.isSatisfied(byPasskey: PasskeyCredential(stored: stored))
        }
    }

    private func run(_ mutation: WritePlan.Mutation, into outcome: inout PlanOutcome, _ c: PostgresConnection) async throws {
        // A challenge is stored by the statement every login prepares (the fast path).
        if case .insertChallenge(let challenge) = mutation {
            _ = try await run(InsertChallengeStatement(challenge: challenge), c)
            return
        }
        switch mutation.statements(in: .postgres) {
        case .run(let statements):
            for statement in statements { _ = try await rows(statement, c) }
        case .revokeSessions(let statement):
            outcome.revokedSessions += try await rows(statement, c).count
        case .revokeDevices(let statement):
            outcome.revokedDevices += try await rows(statement, c).count
        case .countFailure(let failure, let statements):
            var counts: [FailureSubject: Int] = [:]
            for (subject, statement) in statements {
                counts[subject] = try await rows(statement, c).first.map { try PostgresStoredRow($0).int("count") }
            }
            let consequences = failure.consequences(ofCounts: counts)
            outcome.lockedSubjects += consequences.locked
            for mutation in consequences.plan.mutations { try await run(mutation, into: &outcome, c) }
        case .appendAudit(let merge, let insert):
            if let merge, try await !rows(merge, c).isEmpty { return }
            _ = try await rows(insert, c)
        }
    }

    /// Runs a statement written once for both stores, in PostgreSQL's dialect, and collects its rows.
    func rows(_ statement: SQL, _ c: PostgresConnection) async throws -> [PostgresRow] {
        try await c.query(PostgresQuery(statement), logger: logger).collect()
    }
}

extension PostgresQuery {
    /// A statement written once for both stores, rendered in PostgreSQL's dialect.
    init(_ statement: SQL) throws {
        let (text, values) = statement.rendered(in: .postgres)
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .text(let text): bindings.append(text)
            case .bytes(let data): try bindings.append(data)
            case .integer(let number): bindings.append(number)
            case .date(let date): bindings.append(date)
            case .boolean(let flag): bindings.append(flag)
            case .texts(let texts): bindings.append(texts)
            }
        }
        self.init(unsafeSQL: text, binds: bindings)
    }
}
