import BioAuthCore
import BioAuthServer
import Foundation

/// The SQL of one ``WritePlan/Mutation``, written once for both stores. A driver runs it inside
/// its transaction and reports what the shape asks for; it decides nothing.
package enum MutationStatements: Sendable {
    /// Statements to run in order.
    case run([SQL])
    /// A statement returning one row per session it revoked (``PlanOutcome/revokedSessions``).
    case revokeSessions(SQL)
    /// A statement returning one row per device it revoked (``PlanOutcome/revokedDevices``).
    case revokeDevices(SQL)
    /// One statement per subject, each returning the subject's new `count`; the driver then hands
    /// the counts to ``FailureRecord/consequences(ofCounts:)`` and applies its plan.
    case countFailure(FailureRecord, [(subject: FailureSubject, statement: SQL)])
    /// `merge` returns a row when it merged the event into the row it repeats; otherwise `insert`.
    case appendAudit(merge: SQL?, insert: SQL)
}

/// What a store checks for one ``WritePlan/Guard``, inside its transaction.
package enum GuardCheck: Sendable {
    /// Holds when the statement returns a row (read with ``SQL/Marker/forUpdate``: it stays locked).
    case rowExists(SQL)
    /// Holds when none of the statements returns a row. `userLock` names a per-user lock the store
    /// takes first where it has row locks, so that concurrent plans cannot both see the row absent;
    /// a single-writer store needs none.
    case noRows([SQL], userLock: (rule: String, userID: UserID))
    /// Holds when the address's failure limit is not reached (the store's lockout read).
    case belowFailureLimits(LockoutQuery)
    /// The statement returns the device's `attestation` (locked); ``WritePlan/Guard/isSatisfied(byAttestation:)`` decides.
    case attestation(SQL)
    /// The statement returns the device's `passkey` (locked); ``WritePlan/Guard/isSatisfied(byPasskey:)`` decides.
    case passkey(SQL)
}

extension WritePlan.Mutation {
    /// This mutation's statements in `dialect` (the dialect decides only whether two writes may
    /// share one statement).
    package func statements(in dialect: SQLDialect) -> MutationStatements {
        switch self {
        case .insertUser(let u):
            return .run([
                """
                INSERT INTO users (id, password_salt, password_rounds, password_hash, created_at)
                VALUES (\(u.id), \(u.passwordSalt), \(u.passwordRounds), \(u.passwordHash), \(u.createdAt))
                """
            ])
        case .insertChallenge(let c):
            return .run([SQL.insertChallenge(c)])
        case .replacePassword(let u):
            return .run([
                """
                UPDATE users SET password_salt = \(u.passwordSalt), password_rounds = \(u.passwordRounds), password_hash = \(u.passwordHash)
                WHERE id = \(u.id)
                """
            ])
        case .insertSession(let s, let touched):
            let insert: SQL = """
                INSERT INTO sessions (token_hash, id, user_id, device_id, kind, created_at, expires_at, revoked_at, refresh_hash, dpop_jkt)
                VALUES (\(s.tokenHash), \(s.id), \(s.userID), \(s.deviceID), \(s.kind.rawValue), \(s.createdAt), \(s.expiresAt), \(s.revokedAt),
                        \(s.refreshTokenHash), \(s.dpopThumbprint))
                """
            guard let touched else { return .run([insert]) }
            let touch: SQL = "UPDATE devices SET last_used_at = \(s.createdAt) WHERE id = \(touched)"
            // One statement where the dialect allows it: a login is the hot path.
            return .run(dialect.writingCommonTableExpressions ? ["WITH touched AS (\(touch)) \(insert)"] : [insert, touch])
        case .clearFailures(let subjects):
            guard !subjects.isEmpty else { return .run([]) }
            return .run(["DELETE FROM counters WHERE key \(oneOf: subjects.map(\.storageKey))"])
        case .setCounter(let subject, let counter):
            return .run([
                """
                INSERT INTO counters (key, window_start, count) VALUES (\(subject.storageKey), \(counter.since), \(counter.count))
                ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count
                """
            ])
        case .claimForBackend(let user, let at):
            return .run(["INSERT INTO backend_users (id, claimed_at) VALUES (\(user), \(at)) ON CONFLICT (id) DO NOTHING"])
        case .rememberClient(let user, let client, let at):
            return .run([
                """
                INSERT INTO known_clients (user_id, client, last_success_at) VALUES (\(user), \(client), \(at))
                ON CONFLICT (user_id, client) DO UPDATE SET last_success_at = excluded.last_success_at
                  WHERE known_clients.last_success_at < \(at.addingTimeInterval(-WritePlan.knownClientRefresh))
                """
            ])
        case .countFailure(let failure):
            return .countFailure(
                failure,
                failure.subjects.map { subject in
                    (
                        subject,
                        """
                        INSERT INTO counters (key, window_start, count) VALUES (\(subject.storageKey), \(failure.windowStart), 1)
                        ON CONFLICT (key) DO UPDATE SET
                          count = CASE WHEN counters.window_start = excluded.window_start THEN counters.count + 1 ELSE 1 END,
                          window_start = excluded.window_start
                        RETURNING count
                        """
                    )
                })
        case .insertDevice(let d):
            return .run([
                """
                INSERT INTO devices (id, user_id, name, public_key, created_at, last_used_at, revoked_at, key_replaced_at, key_replaced_by,
                  attestation, enrolled_by, passkey, dpop_jkt)
                VALUES (\(d.id), \(d.userID), \(d.name), \(d.publicKey), \(d.createdAt), \(d.lastUsedAt), \(d.revokedAt), \(d.keyReplacedAt),
                        \(d.keyReplacement?.rawValue), \(d.credential.attestation?.stored), \(d.enrolledBy?.rawValue), \(d.credential.passkey?.stored),
                        \(d.dpopThumbprint))
                """
            ])
        case .replaceDeviceKey(let id, let key, let attestation, let at, let how, let dpop):
            return .run([
                """
                UPDATE devices SET public_key = \(key), attestation = \(attestation?.stored), last_used_at = \(at), key_replaced_at = \(at),
                  key_replaced_by = \(how.rawValue), dpop_jkt = \(dpop)
                WHERE id = \(id)
                """
            ])
        case .renameDevice(let id, let name):
            return .run(["UPDATE devices SET name = \(name) WHERE id = \(id)"])
        case .storeAttestation(let id, let attestation):
            return .run(["UPDATE devices SET attestation = \(attestation.stored) WHERE id = \(id)"])
        case .storePasskey(let id, let passkey):
            return .run(["UPDATE devices SET passkey = \(passkey.stored) WHERE id = \(id)"])
        case .insertApproval(let a):
            return .run([
                """
                INSERT INTO approvals (token_hash, user_id, device_id, operation_hash, created_at, expires_at, consumed_at, session_id)
                VALUES (\(a.tokenHash), \(a.userID), \(a.deviceID), \(a.operationHash), \(a.createdAt), \(a.expiresAt), \(a.consumedAt),
                        \(a.sessionID))
                """
            ])
        case .redeemApproval(let hash, let at):
            return .run(["UPDATE approvals SET consumed_at = \(at) WHERE token_hash = \(hash)"])
        case .rotateRefreshToken(let session, let spent, let replacement, let at, let sealed):
            let replace: SQL = "UPDATE sessions SET refresh_hash = \(replacement) WHERE id = \(session)"
            let remember: SQL = """
                INSERT INTO spent_refresh_tokens (token_hash, session_id, spent_at, successor) VALUES (\(spent), \(session), \(at), \(sealed))
                """
            return .run(dialect.writingCommonTableExpressions ? ["WITH spent AS (\(remember)) \(replace)"] : [replace, remember])
        case .insertEnrolmentRequest(let r):
            return .run([
                """
                INSERT INTO enrolment_requests (id, user_id, device_id, name, public_key, replaces_device, session_id, created_at, expires_at,
                  approved_at, approved_by_device, recovery_code_hash, recovery_attempts, codes_sent, last_code_sent_at, ended_at, ending,
                  approval_hash, requester, passkey)
                VALUES (\(r.id), \(r.userID), \(r.deviceID), \(r.name), \(r.publicKey), \(r.replacing), \(r.sessionID), \(r.createdAt),
                        \(r.expiresAt), \(r.approvedAt), \(r.approvedByDevice), \(r.recoveryCodeHash), \(r.recoveryAttempts), \(r.codesSent),
                        \(r.lastCodeSentAt), \(r.endedAt), \(r.ending?.rawValue), \(r.approvalHash), \(r.requester), \(r.passkey?.stored))
                """
            ])
        case .deleteEnrolmentRequest(let id):
            return .run(["DELETE FROM enrolment_requests WHERE id = \(id)"])
        case .approveEnrolmentRequest(let id, let at, let device):
            return .run(["UPDATE enrolment_requests SET approved_at = \(at), approved_by_device = \(device) WHERE id = \(id)"])
        case .setRecoveryCode(let id, let hash, let at, let sent):
            return .run([
                "UPDATE enrolment_requests SET recovery_code_hash = \(hash), last_code_sent_at = \(at), codes_sent = \(sent) WHERE id = \(id)"
            ])
        case .endEnrolmentRequest(let id, let at, let ending):
            return .run(["UPDATE enrolment_requests SET ended_at = \(at), ending = \(ending.rawValue) WHERE id = \(id)"])
        case .endOpenEnrolmentRequests(let user, let at, let ending):
            return .run([
                "UPDATE enrolment_requests SET ended_at = \(at), ending = \(ending.rawValue) WHERE user_id = \(user) AND ended_at IS NULL"
            ])
        case .countRecoveryAttempt(let id):
            return .run(["UPDATE enrolment_requests SET recovery_attempts = recovery_attempts + 1 WHERE id = \(id)"])
        case .insertDeviceRemoval(let r):
            return .run([
                """
                INSERT INTO device_removals (id, user_id, device_id, session_id, requester, created_at, code_expires_at, code_hash,
                  code_attempts, scheduled_at, executes_at, ended_at, ending)
                VALUES (\(r.id), \(r.userID), \(r.deviceID), \(r.sessionID), \(r.requester), \(r.createdAt), \(r.codeExpiresAt), \(r.codeHash),
                        \(r.codeAttempts), \(r.scheduledAt), \(r.executesAt), \(r.endedAt), \(r.ending?.rawValue))
                """
            ])
        case .updateDeviceRemoval(let r):
            return .run([
                """
                UPDATE device_removals SET code_attempts = \(r.codeAttempts), scheduled_at = \(r.scheduledAt), executes_at = \(r.executesAt),
                  ended_at = \(r.endedAt), ending = \(r.ending?.rawValue)
                WHERE id = \(r.id)
                """
            ])
        case .rememberDPoPProof(let hash, let until):
            return .run(["INSERT INTO dpop_proofs (proof_hash, expires_at) VALUES (\(hash), \(until))"])
        case .insertCrossDeviceRequest(let r):
            return .run([
                """
                INSERT INTO cross_device_requests (id, user_id, requester, user_agent, created_at, expires_at, approval_hash, poll_token_hash,
                  announced, approved_at, approved_by_device, ended_at, ending, screen_key)
                VALUES (\(r.id), \(r.userID), \(r.requester), \(r.screen.description), \(r.createdAt), \(r.expiresAt), \(r.approvalHash),
                        \(r.pollTokenHash), \(r.announced), \(r.approvedAt), \(r.approvedByDevice), \(r.endedAt), \(r.ending?.rawValue),
                        \(r.screenKey))
                """
            ])
        case .updateCrossDeviceRequest(let r):
            return .run([
                """
                UPDATE cross_device_requests SET approved_at = \(r.approvedAt), approved_by_device = \(r.approvedByDevice),
                  ended_at = \(r.endedAt), ending = \(r.ending?.rawValue)
                WHERE id = \(r.id)
                """
            ])
        case .insertApiKey(let k):
            return .run([
                """
                INSERT INTO api_keys (id, name, secret_hash, scopes, created_at, revoked_at)
                VALUES (\(k.id), \(k.name), \(k.secretHash), \(k.storedScopes), \(k.createdAt), \(k.revokedAt))
                """
            ])
        case .insertSigningKey(let k):
            return .run(["INSERT INTO signing_keys (id, private_key, created_at) VALUES (\(k.id), \(k.storedKey), \(k.createdAt))"])
        case .deleteSigningKey(let id):
            return .run(["DELETE FROM signing_keys WHERE id = \(id)"])
        case .revokeApiKey(let id, let at):
            return .run(["UPDATE api_keys SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL"])
        case .revokeDevice(let id, let at):
            return .run(["UPDATE devices SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL"])
        case .revokeDevices(let user, let at):
            return .revokeDevices("UPDATE devices SET revoked_at = \(at) WHERE user_id = \(user) AND revoked_at IS NULL RETURNING id")
        case .revokeSessions(let sessions, let at):
            let selected: SQL =
                switch sessions {
                case .one(let id, let user): "id = \(id) AND user_id = \(user)"
                case .openedBy(let device, let user): "device_id = \(device) AND user_id = \(user)"
                case .allOf(let user): "user_id = \(user)"
                case .belowDevicesOf(let user, let except): SQL.sessionsBelowDevices(of: user, except: except)
                }
            return .revokeSessions("UPDATE sessions SET revoked_at = \(at) WHERE \(selected) AND revoked_at IS NULL RETURNING id")
        case .withdrawApprovals(let approvals):
            let selected: SQL =
                switch approvals {
                case .ofDevice(let device, let user):
                    "user_id = \(user) AND (device_id = \(device) OR session_id IN (SELECT id FROM sessions WHERE device_id = \(device)))"
                case .obtainedBy(let session): "session_id = \(session)"
                case .allOf(let user): "user_id = \(user)"
                case .obtainedBySessionsBelowDevicesOf(let user, let except):
                    "user_id = \(user) AND session_id IN (SELECT id FROM sessions WHERE \(SQL.sessionsBelowDevices(of: user, except: except)))"
                }
            return .run(["DELETE FROM approvals WHERE consumed_at IS NULL AND \(selected)"])
        case .deleteChallenges(.ofDevice(let device, let user)):
            return .run(["DELETE FROM challenges WHERE device_id = \(device) AND user_id = \(user)"])
        case .deleteChallenges(.allOf(let user)):
            return .run(["DELETE FROM challenges WHERE user_id = \(user)"])
        case .appendAudit(let e):
            let insert: SQL = """
                INSERT INTO audit (at, kind, user_id, device_id, reason, client, request_id, api_key_id)
                VALUES (\(e.at), \(e.kind), \(e.userID), \(e.deviceID), \(e.reason), \(e.clientAddress), \(e.requestID), \(e.apiKeyID))
                """
            guard e.aggregates else { return .appendAudit(merge: nil, insert: insert) }
            // The condition names the merged kinds word for word, so the partial index `audit_repeat` serves it.
            let merge: SQL = """
                UPDATE audit SET count = count + 1, at = \(e.at) WHERE seq = (
                  SELECT seq FROM audit WHERE \(trusted: Schema.mergedAuditKindsCondition) AND client \(.isNotDistinctFrom) \(e.clientAddress)
                    AND kind = \(e.kind) AND at >= \(e.at.addingTimeInterval(-AuditEvent.aggregationWindow))
                    AND user_id \(.isNotDistinctFrom) \(e.userID) AND device_id \(.isNotDistinctFrom) \(e.deviceID)
                    AND reason \(.isNotDistinctFrom) \(e.reason) AND api_key_id \(.isNotDistinctFrom) \(e.apiKeyID)
                  ORDER BY seq DESC LIMIT 1) RETURNING seq
                """
            return .appendAudit(merge: merge, insert: insert)
        case .enqueueEvent(let e):
            return .run([
                """
                INSERT INTO outbox (at, kind, user_id, device_id, reason, attempts, next_attempt_at)
                VALUES (\(e.at), \(e.kind), \(e.userID), \(e.deviceID), \(e.reason), 0, \(e.at))
                """
            ])
        }
    }
}

extension WritePlan.Guard {
    /// What a store checks for this guard, written once.
    package var check: GuardCheck {
        switch self {
        case .activeDevice(let id, let user):
            .rowExists("SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL\(.forUpdate)")
        case .activeDeviceKey(let id, let user, let key):
            .rowExists(
                "SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL AND public_key = \(key)\(.forUpdate)")
        case .ownedDevice(let id, let user):
            .rowExists("SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user)\(.forUpdate)")
        case .activeSession(let id, let user):
            .rowExists("SELECT 1 FROM sessions WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL\(.forUpdate)")
        case .activeApiKey(let id):
            .rowExists("SELECT 1 FROM api_keys WHERE id = \(id) AND revoked_at IS NULL\(.forUpdate)")
        case .approvedEnrolmentRequest(let id):
            .rowExists("SELECT 1 FROM enrolment_requests WHERE id = \(id) AND approved_at IS NOT NULL AND ended_at IS NULL\(.forUpdate)")
        case .belowFailureLimits(let lockout): .belowFailureLimits(lockout)
        case .noDeviceEver(let user): .noRows(["SELECT 1 FROM devices WHERE user_id = \(user)"], userLock: ("devices", user))
        case .userIDFree(let user):
            .noRows(
                ["SELECT 1 FROM backend_users WHERE id = \(user)", "SELECT 1 FROM devices WHERE user_id = \(user)"],
                userLock: ("user-id", user))
        case .noPasswordAccount(let user): .noRows(["SELECT 1 FROM users WHERE id = \(user)"], userLock: ("user-id", user))
        case .appAttestCounter(let id, _, _): .attestation("SELECT attestation FROM devices WHERE id = \(id)\(.forUpdate)")
        case .passkeyCounter(let id, _, _): .passkey("SELECT passkey FROM devices WHERE id = \(id)\(.forUpdate)")
        }
    }
}

extension SQL {
    /// Inserts a challenge (every column; an existing id is a `duplicate`).
    package static func insertChallenge(_ c: ChallengeRecord) -> SQL {
        let columns = c.binding.columns
        return """
            INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at, operation_hash, registration_key,
              device_name, replaces_device, session_id, enrolment_request_id, user_handle)
            VALUES (\(c.id), \(c.binding.storedPurpose), \(c.relyingPartyID), \(c.userID), \(c.deviceID), \(c.nonce), \(c.createdAt),
                    \(c.expiresAt), \(columns.operationHash), \(columns.publicKey), \(columns.deviceName), \(columns.replacing), \(c.sessionID),
                    \(c.enrolmentRequestID), \(columns.userHandle))
            """
    }

    /// The condition on `sessions` selecting the user's primary (password) sessions but `except`.
    static func sessionsBelowDevices(of user: UserID, except: SessionID?) -> SQL {
        let sessions: SQL = "user_id = \(user) AND kind \(oneOf: [SessionKind.primary.rawValue, SessionKind.crossDevice.rawValue])"
        guard let except else { return sessions }
        return "\(sessions) AND id <> \(except)"
    }
}
