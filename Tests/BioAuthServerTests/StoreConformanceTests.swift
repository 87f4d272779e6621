import BioAuthCore
import BioAuthServer
import BioAuthSQLite
import BioAuthServerTesting
import BioAuthTesting
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
import Synchronization
import Testing

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-\(UUID().uuidString).sqlite").path
}

struct StoreConformanceTests {
    @Test(arguments: StoreConformance.Check.allCases)
    func inMemorySQLiteStoreConforms(_ check: StoreConformance.Check) async throws {
        try await StoreConformance { try SQLiteStore.inMemory() }.run(check)
    }

    /// Both places a finishing challenge can be decided, whatever this machine's default is.
    @Test(arguments: StoreConformance.Check.allCases, [SQLiteStore.Decisions.inTheWriter, .beforeTheWriter])
    func sqliteStoreConforms(_ check: StoreConformance.Check, decisions: SQLiteStore.Decisions) async throws {
        try await StoreConformance { try await SQLiteStore.open(path: temporaryDatabasePath(), decisions: decisions) }.run(check)
    }

    /// Concurrent transactions share commits; a failing one (a duplicate user) rolls back alone;
    /// every acknowledged row is there after reopening.
    @Test func sqliteGroupCommitSharesFsyncsAndIsolatesFailures() async throws {
        let path = temporaryDatabasePath()
        let store = try await SQLiteStore.open(path: path)
        let before = store.statistics
        let outcomes = await withTaskGroup(of: (UserID, Bool).self) { group in
            for index in 0..<200 {
                let id = UserID("user\(index % 150)")  // 50 duplicates
                group.addTask {
                    let user = UserRecord(
                        id: id, passwordSalt: Data([1]), passwordRounds: 1, passwordHash: Data([2]),
                        createdAt: Date(timeIntervalSince1970: 1))
                    do {
                        _ = try await store.apply(
                            .createUser(user, audit: AuditEvent(at: Date(timeIntervalSince1970: 1), kind: .userCreated, userID: id)))
                        return (id, true)
                    } catch { return (id, (error as? StoreError)?.code == .duplicate ? false : true) }
                }
            }
            return await group.reduce(into: [(UserID, Bool)]()) { $0.append($1) }
        }
        #expect(outcomes.filter(\.1).count == 150, "one success per distinct user; a duplicate fails alone")
        let after = store.statistics
        #expect(after.transactions - before.transactions == 150)
        #expect(after.commits - before.commits < 150, "concurrent transactions share commits: \(after.commits - before.commits) commits")
        try await store.close()
        let reopened = try await SQLiteStore.open(path: path)
        let lockout = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "c", clientLimit: 9)
        for index in 0..<150 {
            #expect(try await reopened.passwordLoginState(username: UserID("user\(index)"), lockout: lockout).user != nil)
        }
        #expect(
            try await reopened.auditEvents(userID: nil, limit: 1_000).count == 150, "audit rows commit with their users, and only theirs")
        try await reopened.close()
    }

    /// A closed store refuses with `unavailable` (HTTP 503), never a crash or a hang; what it
    /// acknowledged before closing is on disk.
    @Test func aClosedSQLiteStoreAnswersUnavailable() async throws {
        let path = temporaryDatabasePath()
        let store = try await SQLiteStore.open(path: path)
        _ = try await store.apply(.events([AuditEvent(at: Date(timeIntervalSince1970: 5), kind: AuditKind(stored: "kept"), userID: "u")]))
        try await store.close()
        try await store.close()
        await #expect(throws: StoreError(.unavailable, detail: "sqlite store closed")) {
            _ = try await store.apply(
                .events([AuditEvent(at: Date(timeIntervalSince1970: 6), kind: AuditKind(stored: "lost"), userID: "u")]))
        }
        await #expect(throws: StoreError(.unavailable, detail: "sqlite store closed")) {
            try await store.auditEvents(userID: "u", limit: 10)
        }
        let reopened = try await SQLiteStore.open(path: path)
        #expect(try await reopened.auditEvents(userID: "u", limit: 10).map(\.kind.description) == ["kept"])
        try await reopened.close()
    }

    /// Reopening a database keeps every row and applies no migration twice.
    @Test func sqliteStoreSurvivesReopening() async throws {
        let path = temporaryDatabasePath()
        let first = try await SQLiteStore.open(path: path)
        _ = try await first.apply(.events([AuditEvent(at: Date(timeIntervalSince1970: 5), kind: AuditKind(stored: "kept"), userID: "u")]))
        try await first.close()
        let second = try await SQLiteStore.open(path: path)
        #expect(try await second.auditEvents(userID: "u", limit: 10).map(\.kind.description) == ["kept"])
        try await second.close()
    }

    /// A row that breaks the schema is an error, never a default: a step-up challenge whose
    /// operation hash is NULL, and a session with an unknown kind.
    @Test func sqliteStoreRefusesCorruptRows() async throws {
        let path = temporaryDatabasePath()
        try await SQLiteStore.open(path: path).close()
        try await withRawSQLite(path) { raw in
            _ = try await raw.query(
                "INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at) VALUES (?, 3, 'rp', 'u', 'd', ?, 0, 60)",
                [.blob(ByteBuffer(bytes: [1])), .blob(ByteBuffer(bytes: [2]))])
            _ = try await raw.query(
                "INSERT INTO sessions (token_hash, id, user_id, kind, created_at, expires_at) VALUES (?, 's', 'u', 'admin', 0, 60)",
                [.blob(ByteBuffer(bytes: [3]))])
        }

        let store = try await SQLiteStore.open(path: path)
        let lockout = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "c", clientLimit: 1)
        await #expect(throws: StoreError(.corruptRow, detail: "challenges.operation_hash")) {
            try await store.consumeChallenge(id: ChallengeID(bytes: Data([1])), lockout: lockout) { _ in ((), WritePlan()) }
        }
        await #expect(throws: StoreError(.corruptRow, detail: "sessions.kind")) {
            try await store.session(tokenHash: TokenHash(digest: Data([3])))
        }
        try await store.close()
    }

    /// Deciding before the writer, the SQLite store verifies before its transaction, on the rows as
    /// read then, and keeps that decision only if the transaction reads the same rows: a device
    /// revoked in between is decided again, inside; with nothing changed, the decision is made once.
    @Test func aDecisionMadeBeforeTheTransactionIsMadeAgainWhenItsRowsChanged() async throws {
        let path = temporaryDatabasePath()
        let store = try await SQLiteStore.open(path: path, decisions: .beforeTheWriter)
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let raw = try await SQLiteConnection.open(
            storage: .file(path: path), threadPool: pool, logger: Logger(label: "raw"), on: MultiThreadedEventLoopGroup.singleton.any())
        _ = try await raw.query("INSERT INTO devices (id, user_id, name, public_key, created_at) VALUES ('d1', 'alice', 'Phone', x'04', 0)")
        let lockout = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "c", clientLimit: 3)
        func challenge() async throws -> ChallengeID {
            let record = ChallengeRecord(
                id: ChallengeID(bytes: SecretBytes.random(count: 16).data), binding: .login, relyingPartyID: "rp", userID: "alice",
                deviceID: "d1",
                nonce: SecretBytes.random(count: 32).data, createdAt: Date(timeIntervalSince1970: 0),
                expiresAt: Date(timeIntervalSince1970: 60))
            #expect(try await store.apply(.issueChallenge(record, lockout: lockout)).wasApplied)
            return record.id
        }
        let calls = Mutex(0)
        let unchanged = try await store.consumeChallenge(id: try await challenge(), lockout: lockout) { taken in
            calls.withLock { $0 += 1 }
            return (taken?.device?.revokedAt != nil, WritePlan())
        }
        #expect(unchanged.verdict == false && calls.withLock { $0 } == 1, "decided once, before the transaction")
        calls.withLock { $0 = 0 }
        let changed = try await store.consumeChallenge(id: try await challenge(), lockout: lockout) { taken in
            let call = calls.withLock { calls in
                calls += 1
                return calls
            }
            // Between the first decision and the transaction, someone revokes the device.
            if call == 1 { _ = try? raw.query("UPDATE devices SET revoked_at = 1 WHERE id = 'd1'").wait() }
            return (taken?.device?.revokedAt != nil, WritePlan())
        }
        #expect(changed.verdict == true && calls.withLock { $0 } == 2, "decided again on the rows the transaction read")
        try await raw.close()
        try await pool.shutdownGracefully()
        try await store.close()
    }

    /// A commit whose only writes are challenges skips its fsync (`synchronous=NORMAL`); the next
    /// commit with anything else in it is FULL again.
    @Test func onlyAChallengeOnlyCommitSkipsTheFsync() async throws {
        let store = try await SQLiteStore.open(path: temporaryDatabasePath())
        let lockout = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "c", clientLimit: 3)
        let challenge = ChallengeRecord(
            id: ChallengeID(bytes: SecretBytes.random(count: 16).data), binding: .login, relyingPartyID: "rp", userID: "alice",
            deviceID: "d1",
            nonce: SecretBytes.random(count: 32).data, createdAt: Date(timeIntervalSince1970: 0), expiresAt: Date(timeIntervalSince1970: 60)
        )
        #expect(try await store.pragma("synchronous") == "2")
        #expect(try await store.apply(.issueChallenge(challenge, lockout: lockout)).wasApplied)
        #expect(try await store.pragma("synchronous") == "1", "NORMAL: the challenge's commit did not wait for the disk")
        _ = try await store.apply(.events([AuditEvent(at: Date(timeIntervalSince1970: 1), kind: .deviceRevoked, userID: "alice")]))
        #expect(try await store.pragma("synchronous") == "2", "FULL again for an audit row")
        try await store.close()
    }
}
