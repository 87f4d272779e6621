import BioAuthSQL
import BioAuthServer
import Foundation

/// Finishing a challenge: where it is decided, and the transaction that takes it.
extension SQLiteStore {
    /// Where a finishing challenge is decided — where its signature is verified
    /// (``consumeChallenge(id:lockout:decide:)``). The answer is the same either way; what differs
    /// is which thread spends the time.
    public enum Decisions: Sendable, Hashable {
        /// On the caller's thread before the transaction, on the rows the reading connection reads
        /// then; the transaction reads them again as it takes the challenge and keeps the decision
        /// only if they are the same, otherwise it decides again, inside. Verifications run beside
        /// the writer and its turns stay short, at the price of the second read and a hop to the
        /// reading thread. The default: over HTTP on two cores it serves about 8 % more logins than
        /// ``inTheWriter`` (docs/Performance.md), and more cores only widen the gap.
        case beforeTheWriter
        /// On the writer's thread, in the transaction that takes the challenge: the rows are read
        /// once, and every verification queues behind the one writer. Better only where the
        /// process shares its cores with other heavy work — the in-process benchmark, whose clients
        /// sign in the same process, does about 6 % more logins with 64 clients this way.
        case inTheWriter
    }

    public func consumeChallenge<Verdict: Sendable>(
        id: ChallengeID, lockout: LockoutQuery, decide: @escaping @Sendable (TakenChallenge?) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        // Deciding verifies a signature (and an App Attest assertion). Decided before the writer
        // (``Decisions``), it runs here, on the caller's thread, against the rows as they are now;
        // the transaction reads them again as it consumes the challenge and keeps this decision
        // only if they are the same — otherwise it decides again, inside.
        let peeked =
            decisions == .beforeTheWriter
            ? try await reader.read { db in try db.takenChallenge(id: id, lockout: lockout, consuming: false) } : nil
        let early = peeked.map { (taken: $0, decision: decide($0)) }
        return try await writer.write { db in
            let taken = try db.takenChallenge(id: id, lockout: lockout, consuming: true)
            let decision = if let early, early.taken == taken { early.decision } else { decide(taken) }
            return (decision.verdict, try db.apply(decision.plan))
        }
    }

    public func challenge(id: ChallengeID) async throws -> ChallengeRecord? {
        try await reader.read { db in try db.first(Reads.challenge(id), ChallengeRecord.init(row:)) }
    }

    public func deleteChallenges(expiredBefore date: Date) async throws -> Int {
        try await writer.write { db in try db.query("DELETE FROM challenges WHERE expires_at < ? RETURNING id", [.date(date)]).count }
    }
}

extension SQLiteHandle {
    /// The challenge `id` with the rows its verification needs (device, enrolment request, the
    /// address's lockout); taken out of the table when `consuming`. Nil if there is no such challenge.
    fileprivate func takenChallenge(id: ChallengeID, lockout: LockoutQuery, consuming: Bool) throws -> TakenChallenge? {
        let statement: SQL = consuming ? "DELETE FROM challenges WHERE id = \(id) RETURNING *" : Reads.challenge(id)
        guard let row = try query(statement).first else { return nil }
        let challenge = try ChallengeRecord(row: row)
        let state = try lockoutState(lockout, device: challenge.deviceID)
        let request = try challenge.enrolmentRequestID.flatMap { id in
            try first(Reads.enrolmentRequest(id, locked: false), EnrolmentRequestRecord.init(row:))
        }
        return TakenChallenge(challenge: challenge, device: state.device, enrolmentRequest: request, lockedOut: state.lockedOut)
    }
}
