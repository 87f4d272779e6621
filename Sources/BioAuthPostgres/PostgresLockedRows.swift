import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import Logging
import PostgresNIO

/// The rows a decision reads (``RowLocks``), each locked until its transaction ends.
extension PostgresStore {
    func lockedRows(_ locking: RowLocks, _ c: PostgresConnection) async throws -> LockedRows {
        // Each read locks its row (FOR UPDATE): a concurrent decision on it waits for this
        // transaction and then re-reads the row as committed.
        var rows = LockedRows()
        if let hash = locking.approval,
            let row = try await c.query(
                """
                SELECT a.*, EXISTS (SELECT 1 FROM devices d WHERE d.id = a.device_id AND d.revoked_at IS NULL AND coalesce(d.key_replaced_at, d.created_at) <= a.created_at) AS signer_active
                FROM approvals a WHERE a.token_hash = \(hash) FOR UPDATE OF a
                """, logger: logger
            ).collect().first
        {
            let r = row.makeRandomAccess()
            rows.approval = try ApprovalRecord(row: PostgresStoredRow(r))
            rows.approvalSignerActive = try r.value("signer_active", Bool.self)
        }
        if let id = locking.enrolmentRequest {
            rows.enrolmentRequest = try await c.query("SELECT * FROM enrolment_requests WHERE id = \(id) FOR UPDATE", logger: logger)
                .collect().first
                .map { try EnrolmentRequestRecord(row: PostgresStoredRow($0)) }
        }
        if let hash = locking.refreshToken {
            // Only session rows are locked, so concurrent uses of one token queue on the
            // session: the later one finds the token spent.
            let select = SessionState.joinedSelect
            if let current = try await c.query("\(unescaped: select) WHERE s.refresh_hash = \(hash) FOR UPDATE OF s", logger: logger)
                .collect().first
            {
                rows.refreshSession = try SessionState(row: PostgresStoredRow(current))
            } else if let spender = try await c.query(
                "\(unescaped: select) WHERE s.id = (SELECT session_id FROM spent_refresh_tokens WHERE token_hash = \(hash)) FOR UPDATE OF s",
                logger: logger
            ).collect().first {
                rows.refreshSession = try SessionState(row: PostgresStoredRow(spender))
                rows.spentRefreshToken = try await c.query(
                    "SELECT spent_at, successor FROM spent_refresh_tokens WHERE token_hash = \(hash)", logger: logger
                ).collect().first.map { try SpentRefreshToken(row: PostgresStoredRow($0)) }
            }
        }
        if let key = locking.passwordAttempt { rows.passwordAttempt = try await passwordAttemptRows(key, c) }
        if let user = locking.enrolmentRequestsOf {
            // Parallel requests of one user queue here: a cap on them holds across instances.
            try await lockUser("enrolment-requests", user, c)
            rows.enrolmentRequests = try await c.query(
                "SELECT * FROM enrolment_requests WHERE user_id = \(user) ORDER BY created_at, id", logger: logger
            )
            .collect().map { try EnrolmentRequestRecord(row: PostgresStoredRow($0)) }
        }
        if let id = locking.deviceRemoval {
            rows.deviceRemoval = try await c.query("SELECT * FROM device_removals WHERE id = \(id) FOR UPDATE", logger: logger).collect()
                .first
                .map { try DeviceRemovalRecord(row: PostgresStoredRow($0)) }
        }
        if !locking.counters.isEmpty {
            // A counter row may not exist yet: lock its key instead, in one order (no deadlock).
            let keys = locking.counters.map(\.storageKey).sorted()
            try await c.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('counter:' || k, 0)) FROM unnest(\(keys)) AS k ORDER BY k", logger: logger)
            rows.counters = try await counters(locking.counters, c)
        }
        return rows
    }

    /// Rows not yet inserted cannot be locked: a rule counted per user takes a per-user advisory
    /// lock for the transaction, and reads in statements of its own so that their snapshots
    /// postdate the lock.
    func lockUser(_ rule: String, _ user: UserID, _ c: PostgresConnection) async throws {
        try await c.query("SELECT pg_advisory_xact_lock(hashtextextended(\(rule) || ':' || \(user), 0))", logger: logger)
    }

    /// The rows a password attempt is decided on, under the user's password lock: parallel
    /// guesses, on any instance, cannot all pass the check.
    func passwordAttemptRows(_ key: PasswordAttemptKey, _ c: PostgresConnection) async throws -> PasswordAttemptRows {
        try await lockUser("password", key.user, c)
        let user = try await c.query("SELECT * FROM users WHERE id = \(key.user)", logger: logger).collect().first.map {
            try UserRecord(row: PostgresStoredRow($0))
        }
        let known = try await !c.query("SELECT 1 FROM known_clients WHERE user_id = \(key.user) AND client = \(key.client)", logger: logger)
            .collect().isEmpty
        return PasswordAttemptRows(user: user, counters: try await counters(key.subjects, c), knownClient: known)
    }

    /// The counters of `subjects` that exist, in one statement.
    func counters(_ subjects: [FailureSubject], _ c: PostgresConnection) async throws -> [FailureSubject: FailureCounter] {
        let bySubject = Dictionary(subjects.map { ($0.storageKey, $0) }, uniquingKeysWith: { $1 })
        var counters: [FailureSubject: FailureCounter] = [:]
        let rows = try await c.query(
            "SELECT key, window_start, count FROM counters WHERE key = ANY(\(Array(bySubject.keys)))", logger: logger)
        for try await (stored, since, count) in rows.decode((String, Date, Int32).self) {
            if let subject = bySubject[stored] { counters[subject] = FailureCounter(since: since, count: Int(count)) }
        }
        return counters
    }
}
