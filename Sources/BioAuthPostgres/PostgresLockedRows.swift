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
        if let hash = locking.approval, let row = try await self.rows(Reads.approval(hash, locked: true), c).first {
            let r = PostgresStoredRow(row)
            rows.approval = try ApprovalRecord(row: r)
            rows.approvalSignerActive = try r.bool("signer_active")
        }
        if let id = locking.enrolmentRequest {
            rows.enrolmentRequest = try await first(Reads.enrolmentRequest(id, locked: true), c, EnrolmentRequestRecord.init(row:))
        }
        if let hash = locking.refreshToken {
            // Only session rows are locked, so concurrent uses of one token queue on the
            // session: the later one finds the token spent.
            if let current = try await first(Reads.refreshSession(hash, locked: true), c, SessionState.init(row:)) {
                rows.refreshSession = current
            } else if let spender = try await first(Reads.spendingSession(hash, locked: true), c, SessionState.init(row:)) {
                rows.refreshSession = spender
                rows.spentRefreshToken = try await first(Reads.spentRefreshToken(hash), c, SpentRefreshToken.init(row:))
            }
        }
        if let key = locking.passwordAttempt { rows.passwordAttempt = try await passwordAttemptRows(key, c) }
        if let user = locking.enrolmentRequestsOf {
            // Parallel requests of one user queue here: a cap on them holds across instances.
            try await lockUser("enrolment-requests", user, c)
            rows.enrolmentRequests = try await self.rows(Reads.enrolmentRequests(of: user), c).map {
                try EnrolmentRequestRecord(row: PostgresStoredRow($0))
            }
        }
        if let id = locking.deviceRemoval {
            rows.deviceRemoval = try await first(Reads.deviceRemoval(id, locked: true), c, DeviceRemovalRecord.init(row:))
        }
        if let id = locking.crossDeviceRequest {
            rows.crossDeviceRequest = try await first(Reads.crossDeviceRequest(id, locked: true), c, CrossDeviceRequestRecord.init(row:))
        }
        if let of = locking.crossDeviceRequestsOf {
            // Parallel requests for one user queue here: the per-requester cap and the user's
            // announcements hold across instances.
            try await lockUser("cross-device", of.userID, c)
            rows.crossDeviceRequests = try await self.rows(Reads.crossDeviceRequests(of: of.userID, since: of.since), c).map {
                try CrossDeviceRequestRecord(row: PostgresStoredRow($0))
            }
            rows.crossDeviceRequesterKnown = try await !self.rows(Reads.knownClient(of.userID, of.client), c).isEmpty
            if !rows.crossDeviceRequesterKnown, let screen = of.screenKey {
                rows.crossDeviceRequesterKnown = try await !self.rows(Reads.knownClient(of.userID, screen), c).isEmpty
            }
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
        return PasswordAttemptRows(
            user: try await first(Reads.user(key.user), c, UserRecord.init(row:)), counters: try await counters(key.subjects, c),
            knownClient: try await !rows(Reads.knownClient(key.user, key.client), c).isEmpty)
    }

    /// The counters of `subjects` that exist, in one statement.
    func counters(_ subjects: [FailureSubject], _ c: PostgresConnection) async throws -> [FailureSubject: FailureCounter] {
        let bySubject = Dictionary(subjects.map { ($0.storageKey, $0) }, uniquingKeysWith: { $1 })
        var counters: [FailureSubject: FailureCounter] = [:]
        for row in try await rows(Reads.counters(Array(bySubject.keys)), c).map(PostgresStoredRow.init) {
            if let subject = bySubject[try row.string("key")] {
                counters[subject] = FailureCounter(since: try row.date("window_start"), count: try row.int("count"))
            }
        }
        return counters
    }
}
