import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

/// Finishing a challenge: decided on the rows as read, then applied where they still hold.
extension PostgresStore {
    /// Reads the challenge with its device and the address's count (one round trip, no
    /// transaction) and decides on them, so that the signature is verified outside any transaction.
    /// A device login's plan is then applied by one statement that takes the challenge and writes
    /// the login behind its guards (`FinishDeviceLogin`): two round trips and one commit in all.
    /// Any other plan — and a login whose challenge another request took first, whose address
    /// reached its failure limit or whose key was revoked since — runs in a transaction that takes the challenge and keeps
    /// the early decision only if it reads the same rows; otherwise it decides again, inside.
    ///
    /// A login challenge this instance issued is decided on the rows remembered when it was stored
    /// (`PostgresIssuedChallenges`) and goes straight to the statement: one round trip. If the
    /// statement does not take it, or the plan is not a device login's, it is read and decided again.
    public func consumeChallenge<Verdict: Sendable>(
        id: ChallengeID, lockout: LockoutQuery, decide: @escaping @Sendable (TakenChallenge?) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        if let remembered = issued.take(id) {
            let decision = decide(remembered)
            if let statement = FinishDeviceLogin(challengeID: id, lockout: lockout, plan: decision.plan),
                let finished = try await bounded({ try await self.client.withConnection { c in try await self.finish(statement, c) } })
            {
                return (decision.verdict, finished)
            }
        }
        // One connection for the read, the decision and the statement: a second lease from the pool
        // costs more than the verification it would spare the connection.
        let (early, finished) = try await bounded {
            try await self.client.withConnection {
                c -> ((taken: TakenChallenge, decision: (verdict: Verdict, plan: WritePlan))?, PlanOutcome?) in
                guard let peeked = try await self.takenChallenge(id, lockout, taking: false, c) else { return (nil, nil) }
                let early = (taken: peeked, decision: decide(peeked))
                guard let statement = FinishDeviceLogin(challengeID: id, lockout: lockout, plan: early.decision.plan) else {
                    return (early, nil)
                }
                return (early, try await self.finish(statement, c))
            }
        }
        if let early, let finished { return (early.decision.verdict, finished) }
        return try await transaction { c in
            let taken = try await self.takenChallenge(id, lockout, taking: true, c)
            let decision = if let early, early.taken == taken { early.decision } else { decide(taken) }
            return (decision.verdict, try await self.apply(decision.plan, c))
        }
    }

    /// A device login's one statement: its outcome, or nil if it took nothing — another request
    /// took the challenge, or the address reached its limit, or the device's key changed since.
    private func finish(_ statement: FinishDeviceLogin, _ c: PostgresConnection) async throws -> PlanOutcome? {
        let row = try await run(statement, c).first
        let counts: (Int32, Int32) = try row.map { try $0.decode((Int32, Int32).self) } ?? (0, 0)
        guard counts.0 == 1 else { return nil }
        return counts.1 == 1 ? .applied() : .refused(statement.refusal)
    }

    /// The challenge (deleted when `taking`), its device, its enrolment request (locked when
    /// `taking`) and the lockout state; nil if no challenge has the id.
    private func takenChallenge(_ id: ChallengeID, _ lockout: LockoutQuery, taking: Bool, _ c: PostgresConnection) async throws
        -> TakenChallenge?
    {
        let rows =
            taking
            ? try await run(TakeChallengeStatement(id: id, lockout: lockout), c)
            : try await run(PeekChallengeStatement(id: id, lockout: lockout), c)
        guard let row = rows.first else { return nil }
        let r = row.makeRandomAccess()
        let challenge = try ChallengeRecord(row: PostgresStoredRow(r))
        let device = try r.joinedDevice()
        var request: EnrolmentRequestRecord?
        if let requestID = challenge.enrolmentRequestID {
            request = try await first(Reads.enrolmentRequest(requestID, locked: taking), c, EnrolmentRequestRecord.init(row:))
        }
        let failures = try r.optional("client_count", Int32.self).map(Int.init) ?? 0
        return TakenChallenge(
            challenge: challenge, device: device, enrolmentRequest: request, lockedOut: lockout.isLockedOut(clientCount: failures))
    }
}
