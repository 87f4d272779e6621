import BioAuthCore
import BioAuthServer
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
import Synchronization

/// A ``BioAuthStore`` in one SQLite file: the embedded default.
///
/// Every operation is a single SQL statement (atomic consume is `DELETE … RETURNING`), run in
/// autocommit mode with `journal_mode=WAL` and `synchronous=FULL`: when a method returns, its
/// write is on disk, and a killed process loses nothing it acknowledged. SQLite is vendored by
/// SQLiteNIO, so no system package is needed.
public final class SQLiteStore: BioAuthStore {
    private let connection: SQLiteConnection
    private let threadPool: NIOThreadPool
    private let closed = Mutex(false)

    /// Named, append-only migrations.
    static let migrations: [(name: String, statements: [String])] = [
        (
            "Create core tables",
            [
                "CREATE TABLE users (id TEXT PRIMARY KEY, password_salt BLOB NOT NULL, password_rounds INTEGER NOT NULL, password_hash BLOB NOT NULL, created_at REAL NOT NULL)",
                "CREATE TABLE challenges (id BLOB PRIMARY KEY, purpose INTEGER NOT NULL, rp_id TEXT NOT NULL, user_id TEXT NOT NULL, device_id TEXT NOT NULL, nonce BLOB NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, operation_hash BLOB, registration_key BLOB, device_name TEXT)",
                "CREATE INDEX challenges_device ON challenges (device_id, expires_at)",
                "CREATE INDEX challenges_expiry ON challenges (expires_at)",
                "CREATE TABLE devices (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, public_key BLOB NOT NULL, created_at REAL NOT NULL, last_used_at REAL, revoked_at REAL)",
                "CREATE INDEX devices_user ON devices (user_id, created_at)",
                "CREATE TABLE sessions (token_hash BLOB PRIMARY KEY, id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL, device_id TEXT, kind TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, revoked_at REAL)",
                "CREATE INDEX sessions_user ON sessions (user_id, created_at)",
                "CREATE TABLE approvals (token_hash BLOB PRIMARY KEY, user_id TEXT NOT NULL, device_id TEXT NOT NULL, operation_hash BLOB NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, consumed_at REAL)",
                "CREATE TABLE counters (key TEXT PRIMARY KEY, window_start REAL NOT NULL, count INTEGER NOT NULL)",
                "CREATE TABLE audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, kind TEXT NOT NULL, user_id TEXT, device_id TEXT, reason TEXT, client TEXT, request_id TEXT)",
                "CREATE INDEX audit_user ON audit (user_id, seq)",
            ]
        )
    ]

    private init(connection: SQLiteConnection, threadPool: NIOThreadPool) {
        self.connection = connection
        self.threadPool = threadPool
    }

    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    public static func open(path: String, logger: Logger = Logger(label: "BioAuthSQLite")) async throws -> SQLiteStore {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let connection = try await SQLiteConnection.open(storage: .file(path: path), threadPool: pool, logger: logger, on: MultiThreadedEventLoopGroup.singleton.any())
        let store = SQLiteStore(connection: connection, threadPool: pool)
        try await store.query("PRAGMA journal_mode=WAL")
        try await store.query("PRAGMA synchronous=FULL")
        try await store.query("PRAGMA busy_timeout=5000")
        try await store.migrate()
        return store
    }

    /// Closes the connection. Idempotent.
    public func close() async throws {
        guard closed.withLock({ closed in defer { closed = true }; return !closed }) else { return }
        try await connection.close()
        try await threadPool.shutdownGracefully()
    }

    private func migrate() async throws {
        try await query("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        let applied = Set(try await query("SELECT name FROM migrations").compactMap { $0.column("name")?.string })
        for migration in Self.migrations where !applied.contains(migration.name) {
            try await query("BEGIN IMMEDIATE")
            do {
                for statement in migration.statements { try await query(statement) }
                try await query("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", [.text(migration.name), .float(Date().timeIntervalSince1970)])
                try await query("COMMIT")
            } catch {
                _ = try? await query("ROLLBACK")
                throw error
            }
        }
    }

    @discardableResult
    private func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        do { return try await connection.query(sql, binds) } catch let error as SQLiteError {
            if "\(error.reason)".hasPrefix("constraint") { throw StoreError(.duplicate) }
            throw error
        }
    }

    // MARK: Users

    public func insertUser(_ user: UserRecord) async throws {
        try await query(
            "INSERT INTO users (id, password_salt, password_rounds, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
            [.text(user.id), .blob(user.passwordSalt), .integer(user.passwordRounds), .blob(user.passwordHash), .date(user.createdAt)])
    }

    public func user(id: String) async throws -> UserRecord? {
        try await query("SELECT * FROM users WHERE id = ?", [.text(id)]).first.map {
            UserRecord(id: $0.string("id"), passwordSalt: $0.data("password_salt"), passwordRounds: $0.int("password_rounds"),
                       passwordHash: $0.data("password_hash"), createdAt: $0.date("created_at"))
        }
    }

    // MARK: Challenges

    public func insertChallenge(_ c: ChallengeRecord, outstandingLimit limit: Int, now: Date) async throws {
        let rows = try await query(
            """
            INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at, operation_hash, registration_key, device_name)
            SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
            WHERE (SELECT COUNT(*) FROM challenges WHERE device_id = ? AND expires_at > ?) < ?
            RETURNING id
            """,
            [.blob(c.id), .integer(Int(c.purpose.rawValue)), .text(c.relyingPartyID), .text(c.userID), .text(c.deviceID), .blob(c.nonce),
             .date(c.createdAt), .date(c.expiresAt), .optionalBlob(c.operationHash), .optionalBlob(c.registrationKey),
             c.deviceName.map { .text($0) } ?? .null, .text(c.deviceID), .date(now), .integer(limit)])
        if rows.isEmpty { throw StoreError(.tooManyChallenges) }
    }

    public func consumeChallenge(id: Data) async throws -> ChallengeRecord? {
        guard let row = try await query("DELETE FROM challenges WHERE id = ? RETURNING *", [.blob(id)]).first,
            let purpose = SignedMessage.Purpose(rawValue: UInt8(truncatingIfNeeded: row.int("purpose")))
        else { return nil }
        return ChallengeRecord(
            id: row.data("id"), purpose: purpose, relyingPartyID: row.string("rp_id"), userID: row.string("user_id"), deviceID: row.string("device_id"),
            nonce: row.data("nonce"), createdAt: row.date("created_at"), expiresAt: row.date("expires_at"),
            operationHash: row.optionalData("operation_hash"), registrationKey: row.optionalData("registration_key"),
            deviceName: row.column("device_name")?.string)
    }

    public func deleteChallenges(expiredBefore date: Date) async throws -> Int {
        try await query("DELETE FROM challenges WHERE expires_at < ? RETURNING id", [.date(date)]).count
    }

    // MARK: Devices

    public func insertDevice(_ d: DeviceRecord) async throws {
        try await query(
            "INSERT INTO devices (id, user_id, name, public_key, created_at, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.text(d.id), .text(d.userID), .text(d.name), .blob(d.publicKey), .date(d.createdAt), .optionalDate(d.lastUsedAt), .optionalDate(d.revokedAt)])
    }

    private func device(_ row: SQLiteRow) -> DeviceRecord {
        DeviceRecord(id: row.string("id"), userID: row.string("user_id"), name: row.string("name"), publicKey: row.data("public_key"),
                     createdAt: row.date("created_at"), lastUsedAt: row.optionalDate("last_used_at"), revokedAt: row.optionalDate("revoked_at"))
    }

    public func device(id: String) async throws -> DeviceRecord? {
        try await query("SELECT * FROM devices WHERE id = ?", [.text(id)]).first.map(device)
    }

    public func devices(userID: String) async throws -> [DeviceRecord] {
        try await query("SELECT * FROM devices WHERE user_id = ? ORDER BY created_at, id", [.text(userID)]).map(device)
    }

    public func replaceDeviceKey(id: String, userID: String, publicKey: Data, at: Date) async throws -> Bool {
        !(try await query(
            "UPDATE devices SET public_key = ?, revoked_at = NULL, last_used_at = ? WHERE id = ? AND user_id = ? RETURNING id",
            [.blob(publicKey), .date(at), .text(id), .text(userID)]).isEmpty)
    }

    public func renameDevice(id: String, userID: String, name: String) async throws -> Bool {
        !(try await query("UPDATE devices SET name = ? WHERE id = ? AND user_id = ? RETURNING id", [.text(name), .text(id), .text(userID)]).isEmpty)
    }

    public func revokeDevice(id: String, userID: String, at: Date) async throws -> Bool {
        !(try await query(
            "UPDATE devices SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL RETURNING id",
            [.date(at), .text(id), .text(userID)]).isEmpty)
    }

    public func touchDevice(id: String, at: Date) async throws {
        try await query("UPDATE devices SET last_used_at = ? WHERE id = ?", [.date(at), .text(id)])
    }

    // MARK: Sessions

    public func insertSession(_ s: SessionRecord) async throws {
        try await query(
            "INSERT INTO sessions (token_hash, id, user_id, device_id, kind, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [.blob(s.tokenHash), .text(s.id), .text(s.userID), s.deviceID.map { .text($0) } ?? .null, .text(s.kind.rawValue),
             .date(s.createdAt), .date(s.expiresAt), .optionalDate(s.revokedAt)])
    }

    private func session(_ row: SQLiteRow) -> SessionRecord {
        SessionRecord(id: row.string("id"), tokenHash: row.data("token_hash"), userID: row.string("user_id"), deviceID: row.column("device_id")?.string,
                      kind: SessionKind(rawValue: row.string("kind")) ?? .device, createdAt: row.date("created_at"), expiresAt: row.date("expires_at"),
                      revokedAt: row.optionalDate("revoked_at"))
    }

    public func session(tokenHash: Data) async throws -> SessionRecord? {
        try await query("SELECT * FROM sessions WHERE token_hash = ?", [.blob(tokenHash)]).first.map(session)
    }

    public func sessions(userID: String) async throws -> [SessionRecord] {
        try await query("SELECT * FROM sessions WHERE user_id = ? ORDER BY created_at, id", [.text(userID)]).map(session)
    }

    public func revokeSession(id: String, userID: String, at: Date) async throws -> Bool {
        !(try await query(
            "UPDATE sessions SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL RETURNING id",
            [.date(at), .text(id), .text(userID)]).isEmpty)
    }

    public func revokeSessions(userID: String, deviceID: String?, at: Date) async throws -> Int {
        if let deviceID {
            return try await query(
                "UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND device_id = ? AND revoked_at IS NULL RETURNING id",
                [.date(at), .text(userID), .text(deviceID)]).count
        }
        return try await query("UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL RETURNING id", [.date(at), .text(userID)]).count
    }

    // MARK: Approvals

    public func insertApproval(_ a: ApprovalRecord) async throws {
        try await query(
            "INSERT INTO approvals (token_hash, user_id, device_id, operation_hash, created_at, expires_at, consumed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.blob(a.tokenHash), .text(a.userID), .text(a.deviceID), .blob(a.operationHash), .date(a.createdAt), .date(a.expiresAt), .optionalDate(a.consumedAt)])
    }

    public func consumeApproval(tokenHash: Data, operationHash: Data, now: Date) async throws -> ApprovalRecord? {
        try await query(
            "UPDATE approvals SET consumed_at = ? WHERE token_hash = ? AND operation_hash = ? AND consumed_at IS NULL AND expires_at > ? RETURNING *",
            [.date(now), .blob(tokenHash), .blob(operationHash), .date(now)]
        ).first.map {
            ApprovalRecord(tokenHash: $0.data("token_hash"), userID: $0.string("user_id"), deviceID: $0.string("device_id"),
                           operationHash: $0.data("operation_hash"), createdAt: $0.date("created_at"), expiresAt: $0.date("expires_at"),
                           consumedAt: $0.optionalDate("consumed_at"))
        }
    }

    // MARK: Counters

    public func incrementCounter(key: String, windowStart: Date) async throws -> Int {
        try await query(
            """
            INSERT INTO counters (key, window_start, count) VALUES (?, ?, 1)
            ON CONFLICT (key) DO UPDATE SET
              count = CASE WHEN counters.window_start = excluded.window_start THEN counters.count + 1 ELSE 1 END,
              window_start = excluded.window_start
            RETURNING count
            """,
            [.text(key), .date(windowStart)]
        ).first?.int("count") ?? 0
    }

    public func counter(key: String, windowStart: Date) async throws -> Int {
        try await query("SELECT count FROM counters WHERE key = ? AND window_start = ?", [.text(key), .date(windowStart)]).first?.int("count") ?? 0
    }

    public func resetCounter(key: String) async throws {
        try await query("DELETE FROM counters WHERE key = ?", [.text(key)])
    }

    // MARK: Audit

    public func appendAudit(_ e: AuditEvent) async throws {
        try await query(
            "INSERT INTO audit (at, kind, user_id, device_id, reason, client, request_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.date(e.at), .text(e.kind), .optionalText(e.userID), .optionalText(e.deviceID), .optionalText(e.reason), .optionalText(e.clientAddress), .optionalText(e.requestID)])
    }

    public func auditEvents(userID: String?, limit: Int) async throws -> [AuditEvent] {
        let rows =
            if let userID {
                try await query("SELECT * FROM audit WHERE user_id = ? ORDER BY seq DESC LIMIT ?", [.text(userID), .integer(limit)])
            } else {
                try await query("SELECT * FROM audit ORDER BY seq DESC LIMIT ?", [.integer(limit)])
            }
        return rows.map {
            AuditEvent(at: $0.date("at"), kind: $0.string("kind"), userID: $0.column("user_id")?.string, deviceID: $0.column("device_id")?.string,
                       reason: $0.column("reason")?.string, clientAddress: $0.column("client")?.string, requestID: $0.column("request_id")?.string)
        }
    }
}

extension SQLiteData {
    static func blob(_ data: Data) -> SQLiteData { .blob(ByteBuffer(bytes: data)) }
    static func optionalBlob(_ data: Data?) -> SQLiteData { data.map { .blob($0) } ?? .null }
    static func date(_ date: Date) -> SQLiteData { .float(date.timeIntervalSince1970) }
    static func optionalDate(_ date: Date?) -> SQLiteData { date.map { .date($0) } ?? .null }
    static func optionalText(_ text: String?) -> SQLiteData { text.map { .text($0) } ?? .null }
}

extension SQLiteRow {
    func string(_ name: String) -> String { column(name)?.string ?? "" }
    func int(_ name: String) -> Int { column(name)?.integer ?? 0 }
    func data(_ name: String) -> Data { optionalData(name) ?? Data() }
    func optionalData(_ name: String) -> Data? { column(name)?.blob.map { Data($0.readableBytesView) } }
    func date(_ name: String) -> Date { optionalDate(name) ?? Date(timeIntervalSince1970: 0) }
    func optionalDate(_ name: String) -> Date? { column(name)?.double.map { Date(timeIntervalSince1970: $0) } }
}
