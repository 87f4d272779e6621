import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

/// A ``WritePlan`` in PostgreSQL's SQL, inside the caller's transaction. Decides nothing.
extension PostgresStore {
    /// Runs a plan inside the current transaction: the guards (each locks the row it checks, so
    /// concurrent plans on one row queue), then each mutation's statement.
    func apply(_ plan: WritePlan, _ c: PostgresConnection) async throws -> PlanOutcome {
        for condition in plan.guards where try await !holds(condition, c) { return .refused(condition) }
        var outcome = PlanOutcome.applied()
        for mutation in plan.mutations { try await run(mutation, into: &outcome, c) }
        return outcome
    }

    private func holds(_ condition: WritePlan.Guard, _ c: PostgresConnection) async throws -> Bool {
        func exists(_ query: PostgresQuery) async throws -> Bool { try await !c.query(query, logger: logger).collect().isEmpty }
        func lock(_ rule: String, _ user: UserID) async throws { try await lockUser(rule, user, c) }
        switch condition {
        case .activeDevice(let id, let user):
            return try await exists("SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL FOR UPDATE")
        case .activeDeviceKey(let id, let user, let key):
            return try await exists(
                "SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL AND public_key = \(key) FOR UPDATE")
        case .ownedDevice(let id, let user):
            return try await exists("SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user) FOR UPDATE")
        case .activeSession(let id, let user):
            return try await exists("SELECT 1 FROM sessions WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL FOR UPDATE")
        case .activeApiKey(let id): return try await exists("SELECT 1 FROM api_keys WHERE id = \(id) AND revoked_at IS NULL FOR UPDATE")
        case .approvedEnrolmentRequest(let id):
            return try await exists(
                "SELECT 1 FROM enrolment_requests WHERE id = \(id) AND approved_at IS NOT NULL AND ended_at IS NULL FOR UPDATE")
        case .belowFailureLimits(let lockout): return try await !isLockedOut(lockout, c)
        case .noDeviceEver(let user):
            try await lock("devices", user)
            return try await !exists("SELECT 1 FROM devices WHERE user_id = \(user)")
        case .userIDFree(let user):
            try await lock("user-id", user)
            guard try await !exists("SELECT 1 FROM backend_users WHERE id = \(user)") else { return false }
            return try await !exists("SELECT 1 FROM devices WHERE user_id = \(user)")
        case .noPasswordAccount(let user):
            try await lock("user-id", user)
            return try await !exists("SELECT 1 FROM users WHERE id = \(user)")
        case .appAttestCounter(let id, _, _):
            let row = try await c.query("SELECT attestation FROM devices WHERE id = \(id) FOR UPDATE", logger: logger).collect().first
            let stored = try row.flatMap { try PostgresStoredRow($0.makeRandomAccess()).optionalString("attestation") }
            return try condition.isSatisfied(byAttestation: DeviceAttestation(stored: stored))
        }
    }

    private func run(_ mutation: WritePlan.Mutation, into outcome: inout PlanOutcome, _ c: PostgresConnection) async throws {
        switch mutation {
        case .insertUser(let u):
            try await c.query(
                """
                INSERT INTO users (id, password_salt, password_rounds, password_hash, created_at)
                VALUES (\(u.id), \(u.passwordSalt), \(u.passwordRounds), \(u.passwordHash), \(u.createdAt))
                """, logger: logger)
        case .insertChallenge(let challenge):
            _ = try await run(InsertChallengeStatement(challenge: challenge), c)
        case .replacePassword(let u):
            try await c.query(
                "UPDATE users SET password_salt = \(u.passwordSalt), password_rounds = \(u.passwordRounds), password_hash = \(u.passwordHash) WHERE id = \(u.id)",
                logger: logger)
        case .insertSession(let s, let touched):
            // One statement: a login is the hot path.
            try await c.query(
                """
                WITH touched AS (UPDATE devices SET last_used_at = \(s.createdAt) WHERE id = \(touched))
                INSERT INTO sessions (token_hash, id, user_id, device_id, kind, created_at, expires_at, revoked_at, refresh_hash)
                VALUES (\(s.tokenHash), \(s.id), \(s.userID), \(s.deviceID), \(s.kind.rawValue), \(s.createdAt), \(s.expiresAt), \(s.revokedAt), \(s.refreshTokenHash))
                """, logger: logger)
        case .clearFailures(let subjects):
            guard !subjects.isEmpty else { return }
            try await c.query("DELETE FROM counters WHERE key = ANY(\(subjects.map(\.storageKey)))", logger: logger)
        case .setCounter(let subject, let counter):
            try await c.query(
                """
                INSERT INTO counters (key, window_start, count) VALUES (\(subject.storageKey), \(counter.since), \(Int32(clamping: counter.count)))
                ON CONFLICT (key) DO UPDATE SET window_start = EXCLUDED.window_start, count = EXCLUDED.count
                """, logger: logger)
        case .claimForBackend(let user, let at):
            try await c.query(
                "INSERT INTO backend_users (id, claimed_at) VALUES (\(user), \(at)) ON CONFLICT (id) DO NOTHING", logger: logger)
        case .rememberClient(let user, let client, let at):
            try await c.query(
                """
                INSERT INTO known_clients (user_id, client, last_success_at) VALUES (\(user), \(client), \(at))
                ON CONFLICT (user_id, client) DO UPDATE SET last_success_at = EXCLUDED.last_success_at
                  WHERE known_clients.last_success_at < \(at.addingTimeInterval(-WritePlan.knownClientRefresh))
                """, logger: logger)
        case .countFailure(let failure):
            var counts: [FailureSubject: Int] = [:]
            for subject in failure.subjects {
                let rows = try await c.query(
                    """
                    INSERT INTO counters (key, window_start, count) VALUES (\(subject.storageKey), \(failure.windowStart), 1)
                    ON CONFLICT (key) DO UPDATE SET
                      count = CASE WHEN counters.window_start = EXCLUDED.window_start THEN counters.count + 1 ELSE 1 END,
                      window_start = EXCLUDED.window_start
                    RETURNING count
                    """, logger: logger)
                for try await count in rows.decode(Int32.self) { counts[subject] = Int(count) }
            }
            let consequences = failure.consequences(ofCounts: counts)
            outcome.lockedSubjects += consequences.locked
            for mutation in consequences.plan.mutations { try await run(mutation, into: &outcome, c) }
        case .insertDevice(let d):
            try await c.query(
                """
                INSERT INTO devices (id, user_id, name, public_key, created_at, last_used_at, revoked_at, key_replaced_at, key_replaced_by, attestation, enrolled_by)
                VALUES (\(d.id), \(d.userID), \(d.name), \(d.publicKey), \(d.createdAt), \(d.lastUsedAt), \(d.revokedAt), \(d.keyReplacedAt), \(d.keyReplacement?.rawValue),
                        \(d.attestation?.stored), \(d.enrolledBy?.rawValue))
                """, logger: logger)
        case .replaceDeviceKey(let id, let key, let attestation, let at, let how):
            let attested = attestation?.stored
            try await c.query(
                """
                UPDATE devices SET public_key = \(key), attestation = \(attested), last_used_at = \(at), key_replaced_at = \(at), key_replaced_by = \(how.rawValue)
                WHERE id = \(id)
                """, logger: logger)
        case .insertApproval(let a):
            try await c.query(
                """
                INSERT INTO approvals (token_hash, user_id, device_id, operation_hash, created_at, expires_at, consumed_at, session_id)
                VALUES (\(a.tokenHash), \(a.userID), \(a.deviceID), \(a.operationHash), \(a.createdAt), \(a.expiresAt), \(a.consumedAt), \(a.sessionID))
                """, logger: logger)
        case .deleteEnrolmentRequest(let id):
            try await c.query("DELETE FROM enrolment_requests WHERE id = \(id)", logger: logger)
        case .approveEnrolmentRequest(let id, let at, let device):
            try await c.query(
                "UPDATE enrolment_requests SET approved_at = \(at), approved_by_device = \(device) WHERE id = \(id)", logger: logger)
        case .setRecoveryCode(let id, let hash, let at, let sent):
            try await c.query(
                "UPDATE enrolment_requests SET recovery_code_hash = \(hash), last_code_sent_at = \(at), codes_sent = \(Int32(clamping: sent)) WHERE id = \(id)",
                logger: logger)
        case .endEnrolmentRequest(let id, let at, let ending):
            try await c.query(
                "UPDATE enrolment_requests SET ended_at = \(at), ending = \(ending.rawValue) WHERE id = \(id)", logger: logger)
        case .countRecoveryAttempt(let id):
            try await c.query("UPDATE enrolment_requests SET recovery_attempts = recovery_attempts + 1 WHERE id = \(id)", logger: logger)
        case .insertDeviceRemoval(let r):
            try await c.query(
                """
                INSERT INTO device_removals (id, user_id, device_id, session_id, requester, created_at, code_expires_at, code_hash, code_attempts, scheduled_at,
                  executes_at, ended_at, ending)
                VALUES (\(r.id), \(r.userID), \(r.deviceID), \(r.sessionID), \(r.requester), \(r.createdAt), \(r.codeExpiresAt), \(r.codeHash),
                        \(Int32(clamping: r.codeAttempts)), \(r.scheduledAt), \(r.executesAt), \(r.endedAt), \(r.ending?.rawValue))
                """, logger: logger)
        case .updateDeviceRemoval(let r):
            try await c.query(
                """
                UPDATE device_removals SET code_attempts = \(Int32(clamping: r.codeAttempts)), scheduled_at = \(r.scheduledAt), executes_at = \(r.executesAt),
                  ended_at = \(r.endedAt), ending = \(r.ending?.rawValue) WHERE id = \(r.id)
                """, logger: logger)
        case .redeemApproval(let hash, let at):
            try await c.query("UPDATE approvals SET consumed_at = \(at) WHERE token_hash = \(hash)", logger: logger)
        case .rotateRefreshToken(let session, let spent, let replacement, let at, let sealed):
            try await c.query(
                """
                WITH spent AS (INSERT INTO spent_refresh_tokens (token_hash, session_id, spent_at, successor) VALUES (\(spent), \(session), \(at), \(sealed)))
                UPDATE sessions SET refresh_hash = \(replacement) WHERE id = \(session)
                """, logger: logger)
        case .insertApiKey(let k):
            try await c.query(
                """
                INSERT INTO api_keys (id, name, secret_hash, scopes, created_at, revoked_at)
                VALUES (\(k.id), \(k.name), \(k.secretHash), \(k.storedScopes), \(k.createdAt), \(k.revokedAt))
                """, logger: logger)
        case .insertSigningKey(let k):
            try await c.query(
                "INSERT INTO signing_keys (id, private_key, created_at) VALUES (\(k.id), \(k.storedKey), \(k.createdAt))", logger: logger)
        case .deleteSigningKey(let id):
            try await c.query("DELETE FROM signing_keys WHERE id = \(id)", logger: logger)
        case .renameDevice(let id, let name):
            try await c.query("UPDATE devices SET name = \(name) WHERE id = \(id)", logger: logger)
        case .storeAttestation(let id, let attestation):
            try await c.query("UPDATE devices SET attestation = \(attestation.stored) WHERE id = \(id)", logger: logger)
        case .insertEnrolmentRequest(let r):
            try await c.query(
                """
                INSERT INTO enrolment_requests (id, user_id, device_id, name, public_key, replaces_device, session_id, created_at, expires_at, approved_at, approved_by_device,
                  recovery_code_hash, recovery_attempts, codes_sent, last_code_sent_at, ended_at, ending, approval_hash, requester)
                VALUES (\(r.id), \(r.userID), \(r.deviceID), \(r.name), \(r.publicKey), \(r.replacing), \(r.sessionID), \(r.createdAt), \(r.expiresAt), \(r.approvedAt),
                        \(r.approvedByDevice), \(r.recoveryCodeHash), \(Int32(clamping: r.recoveryAttempts)), \(Int32(clamping: r.codesSent)), \(r.lastCodeSentAt),
                        \(r.endedAt), \(r.ending?.rawValue), \(r.approvalHash), \(r.requester))
                """, logger: logger)
        case .revokeApiKey(let id, let at):
            try await c.query("UPDATE api_keys SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL", logger: logger)
        case .revokeDevice(let id, let at):
            try await c.query("UPDATE devices SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL", logger: logger)
        case .revokeDevices(let user, let at):
            outcome.revokedDevices += try await c.query(
                "UPDATE devices SET revoked_at = \(at) WHERE user_id = \(user) AND revoked_at IS NULL RETURNING id", logger: logger
            )
            .collect().count
        case .revokeSessions(let sessions, let at):
            let query: PostgresQuery =
                switch sessions {
                case .one(let id, let user):
                    "UPDATE sessions SET revoked_at = \(at) WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL RETURNING id"
                case .openedBy(let device, let user):
                    "UPDATE sessions SET revoked_at = \(at) WHERE device_id = \(device) AND user_id = \(user) AND revoked_at IS NULL RETURNING id"
                case .allOf(let user): "UPDATE sessions SET revoked_at = \(at) WHERE user_id = \(user) AND revoked_at IS NULL RETURNING id"
                case .passwordSessionsOf(let user, let except):
                    """
                    UPDATE sessions SET revoked_at = \(at)
                    WHERE user_id = \(user) AND kind = \(SessionKind.primary.rawValue) AND id <> \(except?.rawValue ?? "") AND revoked_at IS NULL RETURNING id
                    """
                }
            outcome.revokedSessions += try await c.query(query, logger: logger).collect().count
        case .withdrawApprovals(.ofDevice(let device, let user)):
            try await c.query(
                """
                DELETE FROM approvals WHERE consumed_at IS NULL AND user_id = \(user)
                  AND (device_id = \(device) OR session_id IN (SELECT id FROM sessions WHERE device_id = \(device)))
                """, logger: logger)
        case .withdrawApprovals(.obtainedBy(let session)):
            try await c.query("DELETE FROM approvals WHERE session_id = \(session) AND consumed_at IS NULL", logger: logger)
        case .withdrawApprovals(.allOf(let user)):
            try await c.query("DELETE FROM approvals WHERE user_id = \(user) AND consumed_at IS NULL", logger: logger)
        case .withdrawApprovals(.obtainedByPasswordSessionsOf(let user, let except)):
            try await c.query(
                """
                DELETE FROM approvals WHERE consumed_at IS NULL AND user_id = \(user)
                  AND session_id IN (SELECT id FROM sessions WHERE user_id = \(user) AND kind = \(SessionKind.primary.rawValue) AND id <> \(except?.rawValue ?? ""))
                """, logger: logger)
        case .deleteChallenges(.ofDevice(let device, let user)):
            try await c.query("DELETE FROM challenges WHERE device_id = \(device) AND user_id = \(user)", logger: logger)
        case .deleteChallenges(.allOf(let user)):
            try await c.query("DELETE FROM challenges WHERE user_id = \(user)", logger: logger)
        case .appendAudit(let event):
            try await appendAuditRow(event, c)
        case .enqueueEvent(let e):
            try await c.query(
                """
                INSERT INTO outbox (at, kind, user_id, device_id, reason, attempts, next_attempt_at)
                VALUES (\(e.at), \(e.kind), \(e.userID), \(e.deviceID), \(e.reason), 0, \(e.at))
                """, logger: logger)
        }
    }

    private func appendAuditRow(_ e: AuditEvent, _ c: PostgresConnection) async throws {
        if e.aggregates {
            let merged = try await c.query(
                """
                UPDATE audit SET count = count + 1, at = \(e.at) WHERE seq = (
                  SELECT seq FROM audit WHERE \(unescaped: Schema.mergedAuditKindsCondition) AND client IS NOT DISTINCT FROM \(e.clientAddress) AND kind = \(e.kind)
                    AND at >= \(e.at.addingTimeInterval(-AuditEvent.aggregationWindow)) AND user_id IS NOT DISTINCT FROM \(e.userID)
                    AND device_id IS NOT DISTINCT FROM \(e.deviceID) AND reason IS NOT DISTINCT FROM \(e.reason)
                    AND api_key_id IS NOT DISTINCT FROM \(e.apiKeyID)
                  ORDER BY seq DESC LIMIT 1) RETURNING seq
                """, logger: logger
            ).collect()
            if !merged.isEmpty { return }
        }
        try await c.query(
            """
            INSERT INTO audit (at, kind, user_id, device_id, reason, client, request_id, api_key_id)
            VALUES (\(e.at), \(e.kind), \(e.userID), \(e.deviceID), \(e.reason), \(e.clientAddress), \(e.requestID), \(e.apiKeyID))
            """, logger: logger)
    }
}
