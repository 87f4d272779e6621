import BioAuthCore
import BioAuthServer
import Foundation

/// The reads both stores run, written once. Those a decision takes (``RowLocks``) lock what they
/// read where the dialect has row locks (`locked`); a single-writer store reads them inside its
/// one write transaction instead.
package enum Reads {
    package static func user(_ id: UserID?) -> SQL { "SELECT * FROM users WHERE id = \(id)" }

    /// A row when the user has signed in from this address before (``PasswordAttemptRows/knownClient``).
    package static func knownClient(_ user: UserID?, _ client: String) -> SQL {
        "SELECT 1 FROM known_clients WHERE user_id = \(user) AND client = \(client)"
    }

    /// The counters of these keys that exist (`key`, `window_start`, `count`).
    package static func counters(_ keys: [String]) -> SQL {
        "SELECT key, window_start, count FROM counters WHERE key \(oneOf: keys)"
    }

    /// The address's failure count in the lockout's window (`count`; no row: none).
    package static func clientFailures(_ lockout: LockoutQuery) -> SQL {
        "SELECT count FROM counters WHERE window_start = \(lockout.windowStart) AND key = \(FailureSubject.client(lockout.client).storageKey)"
    }

    /// The approval with `signer_active`: its device is active and held the key that signed it.
    package static func approval(_ hash: TokenHash, locked: Bool) -> SQL {
        """
        SELECT a.*, EXISTS (SELECT 1 FROM devices d WHERE d.id = a.device_id AND d.revoked_at IS NULL
          AND coalesce(d.key_replaced_at, d.created_at) <= a.created_at) AS signer_active
        FROM approvals a WHERE a.token_hash = \(hash)\(lock(locked, of: "a"))
        """
    }

    package static func enrolmentRequest(_ id: EnrolmentRequestID, locked: Bool) -> SQL {
        "SELECT * FROM enrolment_requests WHERE id = \(id)\(lock(locked))"
    }

    /// Every request of the user, oldest first (a cap on them is decided on these).
    package static func enrolmentRequests(of user: UserID) -> SQL {
        "SELECT * FROM enrolment_requests WHERE user_id = \(user) ORDER BY created_at, id"
    }

    /// The user's requests that have not expired, oldest first.
    package static func enrolmentRequests(of user: UserID, now: Date) -> SQL {
        "SELECT * FROM enrolment_requests WHERE user_id = \(user) AND expires_at > \(now) ORDER BY created_at, id"
    }

    package static func deviceRemoval(_ id: DeviceRemovalID, locked: Bool) -> SQL {
        "SELECT * FROM device_removals WHERE id = \(id)\(lock(locked))"
    }

    package static func crossDeviceRequest(_ id: CrossDeviceRequestID, locked: Bool) -> SQL {
        "SELECT * FROM cross_device_requests WHERE id = \(id)\(lock(locked))"
    }

    /// The user's requests created after `since`, oldest first (a cap on them is decided on these).
    package static func crossDeviceRequests(of user: UserID, since: Date) -> SQL {
        "SELECT * FROM cross_device_requests WHERE user_id = \(user) AND created_at > \(since) ORDER BY created_at, id"
    }

    /// Up to `limit` requests waiting for a phone: those from addresses where the user signed in
    /// first, then the newest.
    package static func pendingCrossDeviceRequests(of user: UserID, now: Date, limit: Int) -> SQL {
        """
        SELECT r.* FROM cross_device_requests r
        WHERE r.user_id = \(user) AND r.approved_at IS NULL AND r.ended_at IS NULL AND r.expires_at > \(now)
        ORDER BY EXISTS (SELECT 1 FROM known_clients k WHERE k.user_id = r.user_id AND (k.client = r.requester OR k.client = r.screen_key)) DESC,
          r.created_at DESC, r.id
        LIMIT \(limit)
        """
    }

    package static func deviceRemovals(of user: UserID) -> SQL {
        "SELECT * FROM device_removals WHERE user_id = \(user) ORDER BY created_at, id"
    }

    /// Removals whose delay has passed and that have not ended, soonest first.
    package static func dueDeviceRemovals(now: Date, limit: Int) -> SQL {
        "SELECT * FROM device_removals WHERE ended_at IS NULL AND executes_at <= \(now) ORDER BY executes_at, id LIMIT \(limit)"
    }

    /// The session `condition` (on `s`) selects, joined with its device's state (``SessionState/init(row:)``).
    package static func sessionState(where condition: SQL, locked: Bool = false) -> SQL {
        "\(trusted: SessionState.joinedSelect) WHERE \(condition)\(lock(locked, of: "s"))"
    }

    /// The session whose current refresh token this is.
    package static func refreshSession(_ hash: TokenHash, locked: Bool) -> SQL {
        sessionState(where: "s.refresh_hash = \(hash)", locked: locked)
    }

    /// The session that spent this refresh token.
    package static func spendingSession(_ hash: TokenHash, locked: Bool) -> SQL {
        sessionState(where: "s.id = (SELECT session_id FROM spent_refresh_tokens WHERE token_hash = \(hash))", locked: locked)
    }

    package static func spentRefreshToken(_ hash: TokenHash) -> SQL {
        "SELECT spent_at, successor FROM spent_refresh_tokens WHERE token_hash = \(hash)"
    }

    package static func sessions(of user: UserID) -> SQL { "SELECT * FROM sessions WHERE user_id = \(user) ORDER BY created_at, id" }

    package static func device(_ id: DeviceID) -> SQL { "SELECT * FROM devices WHERE id = \(id)" }

    package static func devices(of user: UserID) -> SQL { "SELECT * FROM devices WHERE user_id = \(user) ORDER BY created_at, id" }

    package static let signingKeys: SQL = "SELECT * FROM signing_keys ORDER BY created_at, id"

    package static func apiKey(secretHash: TokenHash) -> SQL { "SELECT * FROM api_keys WHERE secret_hash = \(secretHash)" }

    package static let apiKeys: SQL = "SELECT * FROM api_keys ORDER BY created_at, id"

    package static func challenge(_ id: ChallengeID) -> SQL { "SELECT * FROM challenges WHERE id = \(id)" }

    /// The newest audit rows first, of one user or of all.
    package static func auditEvents(of user: UserID?, limit: Int) -> SQL {
        guard let user else { return "SELECT * FROM audit ORDER BY seq DESC LIMIT \(limit)" }
        return "SELECT * FROM audit WHERE user_id = \(user) ORDER BY seq DESC LIMIT \(limit)"
    }

    private static func lock(_ locked: Bool, of alias: String? = nil) -> SQL {
        guard locked else { return "" }
        return alias.map { "\(.forUpdateOf($0))" } ?? "\(.forUpdate)"
    }
}

/// What a sweep deletes, written once: each `DELETE` and the ``SweepResult`` count it adds to
/// (nil: deleted, not reported). A store runs them in order, in one transaction, counting the
/// rows each deletes.
package enum SweepStatements {
    package static func deletions(windowsBefore: Date, runsBefore: Date, auditBefore: Date, sessionsBefore: Date)
        -> [(delete: SQL, counted: WritableKeyPath<SweepResult, Int>?)]
    {
        let (runs, daily) = FailureSubject.longLivedKeyPatterns
        let ended: SQL = "SELECT id FROM sessions WHERE expires_at < \(sessionsBefore) OR revoked_at < \(sessionsBefore)"
        return [
            (
                """
                DELETE FROM counters WHERE (key NOT LIKE \(runs) AND key NOT LIKE \(daily) AND window_start < \(windowsBefore))
                  OR ((key LIKE \(runs) OR key LIKE \(daily)) AND window_start < \(runsBefore))
                """, \.counters
            ),
            ("DELETE FROM audit WHERE at < \(auditBefore)", \.auditRows),
            ("DELETE FROM approvals WHERE expires_at < \(windowsBefore)", \.approvals),
            ("DELETE FROM enrolment_requests WHERE expires_at < \(windowsBefore)", \.enrolmentRequests),
            ("DELETE FROM cross_device_requests WHERE expires_at < \(windowsBefore)", nil),
            ("DELETE FROM dpop_proofs WHERE expires_at < \(windowsBefore)", nil),
            ("DELETE FROM outbox WHERE at < \(auditBefore)", nil),
            ("DELETE FROM known_clients WHERE last_success_at < \(auditBefore)", nil),
            (
                """
                DELETE FROM device_removals WHERE (ended_at IS NOT NULL AND ended_at < \(auditBefore))
                  OR (scheduled_at IS NULL AND code_expires_at < \(auditBefore))
                """, nil
            ),
            ("DELETE FROM spent_refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE expires_at < \(windowsBefore))", nil),
            ("DELETE FROM spent_refresh_tokens WHERE session_id IN (\(ended))", nil),
            ("DELETE FROM sessions WHERE id IN (\(ended))", \.sessions),
        ]
    }
}
