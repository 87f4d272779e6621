import BioAuthServer
import BioAuthSQLite
import BioAuthTesting
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
import Testing

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-\(UUID().uuidString).sqlite").path
}

struct StoreConformanceTests {
    @Test func inMemoryStoreConforms() async throws {
        try await StoreConformance { InMemoryStore() }.run()
    }

    @Test func sqliteStoreConforms() async throws {
        try await StoreConformance { try await SQLiteStore.open(path: temporaryDatabasePath()) }.run()
    }

    /// Reopening a database keeps every row and applies no migration twice.
    @Test func sqliteStoreSurvivesReopening() async throws {
        let path = temporaryDatabasePath()
        let first = try await SQLiteStore.open(path: path)
        try await first.appendAudit(AuditEvent(at: Date(timeIntervalSince1970: 5), kind: "kept", userID: "u"))
        try await first.close()
        let second = try await SQLiteStore.open(path: path)
        #expect(try await second.auditEvents(userID: "u", limit: 10).map(\.kind) == ["kept"])
        try await second.close()
    }

    /// A row that breaks the schema is an error, never a default: a step-up challenge whose
    /// operation hash is NULL, and a session with an unknown kind.
    @Test func sqliteStoreRefusesCorruptRows() async throws {
        let path = temporaryDatabasePath()
        try await SQLiteStore.open(path: path).close()
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let raw = try await SQLiteConnection.open(storage: .file(path: path), threadPool: pool, logger: Logger(label: "raw"), on: MultiThreadedEventLoopGroup.singleton.any())
        _ = try await raw.query(
            "INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at) VALUES (?, 3, 'rp', 'u', 'd', ?, 0, 60)",
            [.blob(ByteBuffer(bytes: [1])), .blob(ByteBuffer(bytes: [2]))])
        _ = try await raw.query(
            "INSERT INTO sessions (token_hash, id, user_id, kind, created_at, expires_at) VALUES (?, 's', 'u', 'admin', 0, 60)", [.blob(ByteBuffer(bytes: [3]))])
        try await raw.close()
        try await pool.shutdownGracefully()

        let store = try await SQLiteStore.open(path: path)
        let lockout = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "c", userLimit: 1, deviceLimit: 1, clientLimit: 1)
        await #expect(throws: StoreError(.corruptRow, detail: "challenges.operation_hash")) {
            try await store.finishChallenge(id: Data([1]), lockout: lockout) { _ in .refused([]) }
        }
        await #expect(throws: StoreError(.corruptRow, detail: "sessions.kind")) { try await store.session(tokenHash: Data([3])) }
        try await store.close()
    }
}
