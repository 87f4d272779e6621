import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation

/// A ``WritePlan`` in SQLite's SQL: the guards as reads (the single writer serialises them with the
/// writes), then one statement or two per mutation. Decides nothing.
extension SQLiteHandle {
    /// Runs a plan inside the current transaction: the guards, then each mutation's statement.
    func apply(_ plan: WritePlan) throws -> PlanOutcome {
        for condition in plan.guards where try !holds(condition) { return .refused(condition) }
        var outcome = PlanOutcome.applied()
        for mutation in plan.mutations { try run(mutation, into: &outcome) }
        return outcome
    }

    private func run(_ mutation: WritePlan.Mutation, into outcome: inout PlanOutcome) throws {
        switch mutation {
        case .insertUser(let u):
            try query(
                "INSERT INTO users (id, password_salt, password_rounds, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                [.text(u.id), .blob(u.passwordSalt), .integer(u.passwordRounds), .blob(u.passwordHash), .date(u.createdAt)])
        case .insertChallenge(let c):
            let columns = c.binding.columns
            try query(
                """
                INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at, operation_hash, registration_key, device_name, replaces_device, session_id, enrolment_request_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .blob(c.id), .integer(Int(c.purpose.rawValue)), .text(c.relyingPartyID), .text(c.userID), .text(c.deviceID),
                    .blob(c.nonce),
                    .date(c.createdAt), .date(c.expiresAt), .optionalBlob(columns.operationHash), .optionalBlob(columns.publicKey),
                    .optionalText(columns.deviceName), columns.replacing.map { .integer($0 ? 1 : 0) } ?? .null, .optionalText(c.sessionID),
                    .optionalText(c.enrolmentRequestID),
                ])
        case .replacePassword(let u):
            try query(
                "UPDATE users SET password_salt = ?, password_rounds = ?, password_hash = ? WHERE id = ?",
                [.blob(u.passwordSalt), .integer(u.passwordRounds), .blob(u.passwordHash), .text(u.id)])
        case .insertSession(let s, let touched):
            try query(
                "INSERT INTO sessions (token_hash, id, user_id, device_id, kind, created_at, expires_at, revoked_at, refresh_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .blob(s.tokenHash), .text(s.id), .text(s.userID), .optionalText(s.deviceID), .text(s.kind.rawValue), .date(s.createdAt),
                    .date(s.expiresAt),
                    .optionalDate(s.revokedAt), .optionalBlob(s.refreshTokenHash),
                ])
            if let touched { try query("UPDATE devices SET last_used_at = ? WHERE id = ?", [.date(s.createdAt), .text(touched)]) }
        case .clearFailures(let subjects):
            guard !subjects.isEmpty else { return }
            let placeholders = Array(repeating: "?", count: subjects.count).joined(separator: ", ")
            try query("DELETE FROM counters WHERE key IN (\(placeholders))", subjects.map { .text($0.storageKey) })
        case .setCounter(let subject, let counter):
            try query(
                "INSERT INTO counters (key, window_start, count) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count",
                [.text(subject.storageKey), .date(counter.since), .integer(counter.count)])
        case .claimForBackend(let user, let at):
            try query("INSERT INTO backend_users (id, claimed_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", [.text(user), .date(at)])
        case .rememberClient(let user, let client, let at):
            try query(
                """
                INSERT INTO known_clients (user_id, client, last_success_at) VALUES (?, ?, ?)
                ON CONFLICT (user_id, client) DO UPDATE SET last_success_at = excluded.last_success_at WHERE last_success_at < ?
                """, [.text(user), .text(client), .date(at), .date(at.addingTimeInterval(-WritePlan.knownClientRefresh))])
        case .countFailure(let failure):
            var counts: [FailureSubject: Int] = [:]
            for subject in failure.subjects {
                counts[subject] = try query(
                    """
                    INSERT INTO counters (key, window_start, count) VALUES (?, ?, 1)
                    ON CONFLICT (key) DO UPDATE SET
                      count = CASE WHEN counters.window_start = excluded.window_start THEN counters.count + 1 ELSE 1 END,
                      window_start = excluded.window_start
                    RETURNING count
                    """,
                    [.text(subject.storageKey), .date(failure.windowStart)]
                ).first?.int("count")
            }
            let consequences = failure.consequences(ofCounts: counts)
            outcome.lockedSubjects += consequences.locked
            for mutation in consequences.plan.mutations { try run(mutation, into: &outcome) }
        case .insertDevice(let d):
            try query(
                "INSERT INTO devices (id, user_id, name, public_key, created_at, last_used_at, revoked_at, key_replaced_at, key_replaced_by, attestation, enrolled_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(d.id), .text(d.userID), .text(d.name), .blob(d.publicKey), .date(d.createdAt), .optionalDate(d.lastUsedAt),
                    .optionalDate(d.revokedAt),
                    .optionalDate(d.keyReplacedAt), .optionalText(d.keyReplacement?.rawValue), .optionalText(d.attestation?.stored),
                    .optionalText(d.enrolledBy?.rawValue),
                ])
        case .replaceDeviceKey(let id, let key, let attestation, let at, let how):
            try query(
                "UPDATE devices SET public_key = ?, attestation = ?, last_used_at = ?, key_replaced_at = ?, key_replaced_by = ? WHERE id = ?",
                [.blob(key), .optionalText(attestation?.stored), .date(at), .date(at), .text(how.rawValue), .text(id)])
        case .insertApproval(let a):
            try query(
                "INSERT INTO approvals (token_hash, user_id, device_id, operation_hash, created_at, expires_at, consumed_at, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .blob(a.tokenHash), .text(a.userID), .text(a.deviceID), .blob(a.operationHash), .date(a.createdAt), .date(a.expiresAt),
                    .optionalDate(a.consumedAt),
                    .optionalText(a.sessionID),
                ])
        case .deleteEnrolmentRequest(let id):
            try query("DELETE FROM enrolment_requests WHERE id = ?", [.text(id)])
        case .approveEnrolmentRequest(let id, let at, let device):
            try query(
                "UPDATE enrolment_requests SET approved_at = ?, approved_by_device = ? WHERE id = ?",
                [.date(at), .optionalText(device), .text(id)])
        case .setRecoveryCode(let id, let hash, let at, let sent):
            try query(
                "UPDATE enrolment_requests SET recovery_code_hash = ?, last_code_sent_at = ?, codes_sent = ? WHERE id = ?",
                [.blob(hash), .date(at), .integer(sent), .text(id)])
        case .endEnrolmentRequest(let id, let at, let ending):
            try query(
                "UPDATE enrolment_requests SET ended_at = ?, ending = ? WHERE id = ?", [.date(at), .text(ending.rawValue), .text(id)])
        case .countRecoveryAttempt(let id):
            try query("UPDATE enrolment_requests SET recovery_attempts = recovery_attempts + 1 WHERE id = ?", [.text(id)])
        case .insertDeviceRemoval(let r):
            try query(
                """
                INSERT INTO device_removals (id, user_id, device_id, session_id, requester, created_at, code_expires_at, code_hash, code_attempts, scheduled_at,
                  executes_at, ended_at, ending) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(r.id), .text(r.userID), .text(r.deviceID), .text(r.sessionID), .text(r.requester), .date(r.createdAt),
                    .date(r.codeExpiresAt),
                    .blob(r.codeHash), .integer(r.codeAttempts), .optionalDate(r.scheduledAt), .optionalDate(r.executesAt),
                    .optionalDate(r.endedAt),
                    .optionalText(r.ending?.rawValue),
                ])
        case .updateDeviceRemoval(let r):
            try query(
                "UPDATE device_removals SET code_attempts = ?, scheduled_at = ?, executes_at = ?, ended_at = ?, ending = ? WHERE id = ?",
                [
                    .integer(r.codeAttempts), .optionalDate(r.scheduledAt), .optionalDate(r.executesAt), .optionalDate(r.endedAt),
                    .optionalText(r.ending?.rawValue), .text(r.id),
                ])
        case .redeemApproval(let hash, let at):
            try query("UPDATE approvals SET consumed_at = ? WHERE token_hash = ?", [.date(at), .blob(hash)])
        case .rotateRefreshToken(let session, let spent, let replacement, let at, let sealed):
            try query("UPDATE sessions SET refresh_hash = ? WHERE id = ?", [.blob(replacement), .text(session)])
            try query(
                "INSERT INTO spent_refresh_tokens (token_hash, session_id, spent_at, successor) VALUES (?, ?, ?, ?)",
                [.blob(spent), .text(session), .date(at), .blob(sealed)])
        case .insertApiKey(let k):
            try query(
                "INSERT INTO api_keys (id, name, secret_hash, scopes, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(k.id), .text(k.name), .blob(k.secretHash), .text(k.storedScopes), .date(k.createdAt), .optionalDate(k.revokedAt)])
        case .insertSigningKey(let k):
            try query(
                "INSERT INTO signing_keys (id, private_key, created_at) VALUES (?, ?, ?)",
                [.text(k.id), .blob(k.storedKey), .date(k.createdAt)])
        case .deleteSigningKey(let id):
            try query("DELETE FROM signing_keys WHERE id = ?", [.text(id)])
        case .renameDevice(let id, let name):
            try query("UPDATE devices SET name = ? WHERE id = ?", [.text(name), .text(id)])
        case .storeAttestation(let id, let attestation):
            try query("UPDATE devices SET attestation = ? WHERE id = ?", [.text(attestation.stored), .text(id)])
        case .insertEnrolmentRequest(let r):
            try query(
                """
                INSERT INTO enrolment_requests (id, user_id, device_id, name, public_key, replaces_device, session_id, created_at, expires_at, approved_at, approved_by_device,
                  recovery_code_hash, recovery_attempts, codes_sent, last_code_sent_at, ended_at, ending, approval_hash, requester)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(r.id), .text(r.userID), .text(r.deviceID), .text(r.name), .blob(r.publicKey), .integer(r.replacing ? 1 : 0),
                    .text(r.sessionID),
                    .date(r.createdAt), .date(r.expiresAt), .optionalDate(r.approvedAt), .optionalText(r.approvedByDevice),
                    .optionalBlob(r.recoveryCodeHash),
                    .integer(r.recoveryAttempts), .integer(r.codesSent), .optionalDate(r.lastCodeSentAt), .optionalDate(r.endedAt),
                    .optionalText(r.ending?.rawValue),
                    .optionalBlob(r.approvalHash), .optionalText(r.requester),
                ])
        case .revokeApiKey(let id, let at):
            try query("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [.date(at), .text(id)])
        case .revokeDevice(let id, let at):
            try query("UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [.date(at), .text(id)])
        case .revokeDevices(let user, let at):
            outcome.revokedDevices += try query(
                "UPDATE devices SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL RETURNING id", [.date(at), .text(user)]
            ).count
        case .revokeSessions(let sessions, let at):
            let (condition, binds): (String, [SQLValue]) =
                switch sessions {
                case .one(let id, let user): ("id = ? AND user_id = ?", [.text(id), .text(user)])
                case .openedBy(let device, let user): ("device_id = ? AND user_id = ?", [.text(device), .text(user)])
                case .allOf(let user): ("user_id = ?", [.text(user)])
                case .passwordSessionsOf(let user, let except):
                    (
                        "user_id = ? AND kind = ? AND id <> ?",
                        [.text(user), .text(SessionKind.primary.rawValue), .text(except?.rawValue ?? "")]
                    )
                }
            outcome.revokedSessions += try query(
                "UPDATE sessions SET revoked_at = ? WHERE \(condition) AND revoked_at IS NULL RETURNING id", [.date(at)] + binds
            ).count
        case .withdrawApprovals(.ofDevice(let device, let user)):
            try query(
                "DELETE FROM approvals WHERE consumed_at IS NULL AND user_id = ? AND (device_id = ? OR session_id IN (SELECT id FROM sessions WHERE device_id = ?))",
                [.text(user), .text(device), .text(device)])
        case .withdrawApprovals(.obtainedBy(let session)):
            try query("DELETE FROM approvals WHERE session_id = ? AND consumed_at IS NULL", [.text(session)])
        case .withdrawApprovals(.allOf(let user)):
            try query("DELETE FROM approvals WHERE user_id = ? AND consumed_at IS NULL", [.text(user)])
        case .withdrawApprovals(.obtainedByPasswordSessionsOf(let user, let except)):
            try query(
                "DELETE FROM approvals WHERE consumed_at IS NULL AND user_id = ? AND session_id IN (SELECT id FROM sessions WHERE user_id = ? AND kind = ? AND id <> ?)",
                [.text(user), .text(user), .text(SessionKind.primary.rawValue), .text(except?.rawValue ?? "")])
        case .deleteChallenges(.ofDevice(let device, let user)):
            try query("DELETE FROM challenges WHERE device_id = ? AND user_id = ?", [.text(device), .text(user)])
        case .deleteChallenges(.allOf(let user)):
            try query("DELETE FROM challenges WHERE user_id = ?", [.text(user)])
        case .appendAudit(let event):
            try appendAuditRow(event)
        case .enqueueEvent(let e):
            try query(
                "INSERT INTO outbox (at, kind, user_id, device_id, reason, attempts, next_attempt_at) VALUES (?, ?, ?, ?, ?, 0, ?)",
                [.date(e.at), .text(e.kind), .optionalText(e.userID), .optionalText(e.deviceID), .optionalText(e.reason), .date(e.at)])
        }
    }

    private func holds(_ condition: WritePlan.Guard) throws -> Bool {
        // The single writer serialises transactions: nothing a guard reads can change before the writes.
        func exists(_ sql: String, _ binds: [SQLValue]) throws -> Bool { try !query(sql, binds).isEmpty }
        switch condition {
        case .activeDevice(let id, let user):
            return try exists("SELECT 1 FROM devices WHERE id = ? AND user_id = ? AND revoked_at IS NULL", [.text(id), .text(user)])
        case .activeDeviceKey(let id, let user, let key):
            return try exists(
                "SELECT 1 FROM devices WHERE id = ? AND user_id = ? AND revoked_at IS NULL AND public_key = ?",
                [.text(id), .text(user), .blob(key)])
        case .ownedDevice(let id, let user):
            return try exists("SELECT 1 FROM devices WHERE id = ? AND user_id = ?", [.text(id), .text(user)])
        case .activeSession(let id, let user):
            return try exists("SELECT 1 FROM sessions WHERE id = ? AND user_id = ? AND revoked_at IS NULL", [.text(id), .text(user)])
        case .activeApiKey(let id): return try exists("SELECT 1 FROM api_keys WHERE id = ? AND revoked_at IS NULL", [.text(id)])
        case .approvedEnrolmentRequest(let id):
            return try exists("SELECT 1 FROM enrolment_requests WHERE id = ? AND approved_at IS NOT NULL AND ended_at IS NULL", [.text(id)])
        case .belowFailureLimits(let lockout): return try !isLockedOut(lockout)
        case .noDeviceEver(let user): return try !exists("SELECT 1 FROM devices WHERE user_id = ?", [.text(user)])
        case .userIDFree(let user):
            return try !exists("SELECT 1 FROM backend_users WHERE id = ?", [.text(user)])
                && !exists("SELECT 1 FROM devices WHERE user_id = ?", [.text(user)])
        case .noPasswordAccount(let user): return try !exists("SELECT 1 FROM users WHERE id = ?", [.text(user)])
        case .appAttestCounter(let id, _, _):
            let stored = try query("SELECT attestation FROM devices WHERE id = ?", [.text(id)]).first?.optionalString("attestation")
            return try condition.isSatisfied(byAttestation: DeviceAttestation(stored: stored))
        }
    }

    private func appendAuditRow(_ e: AuditEvent) throws {
        if e.aggregates {
            let merged = try query(
                """
                UPDATE audit SET count = count + 1, at = ? WHERE seq = (
                  SELECT seq FROM audit WHERE \(Schema.mergedAuditKindsCondition) AND client IS ? AND kind = ? AND at >= ? AND user_id IS ? AND device_id IS ? AND reason IS ? AND api_key_id IS ?
                  ORDER BY seq DESC LIMIT 1) RETURNING seq
                """,
                [
                    .date(e.at), .optionalText(e.clientAddress), .text(e.kind),
                    .date(e.at.addingTimeInterval(-AuditEvent.aggregationWindow)),
                    .optionalText(e.userID), .optionalText(e.deviceID), .optionalText(e.reason), .optionalText(e.apiKeyID),
                ])
            if !merged.isEmpty { return }
        }
        try query(
            "INSERT INTO audit (at, kind, user_id, device_id, reason, client, request_id, api_key_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .date(e.at), .text(e.kind), .optionalText(e.userID), .optionalText(e.deviceID), .optionalText(e.reason),
                .optionalText(e.clientAddress),
                .optionalText(e.requestID), .optionalText(e.apiKeyID),
            ])
    }
}
