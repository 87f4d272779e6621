import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import Logging

/// A `BioAuthStore` in one SQLite file: the embedded default.
///
/// Every write method is one transaction on a single connection with `journal_mode=WAL` and
/// `synchronous=FULL`: when a method returns, its writes are on disk, and a killed process loses
/// nothing it acknowledged. One thread of its own (`SQLiteWriter`) runs every write with
/// prepared statements kept for reuse, so a request costs one thread hop however many statements
/// it runs; reads run on a second connection and thread (a file only), so they neither queue
/// behind writes nor wait for an fsync. Writes commit in groups: the transactions queued while one group ran share the next
/// `COMMIT` (one fsync), each in its own savepoint. SQLite is vendored by SQLiteNIO, so no system
/// package is needed.
///
/// Statements and durable commits per request (a commit may be shared with concurrent requests):
///
/// | Request | Statements | Commits |
/// |---|---|---|
/// | `POST /login/challenge` (`WritePlan.issueChallenge(_:lockout:)`) | 1 read (the address's lockout counter), 1 insert; a group of only these commits without fsync | 1 |
/// | `POST /login/finish` (``consumeChallenge(id:lockout:decide:)``) | 1 delete-returning, 1 read (device row and lockout counters), then the login's plan: the device guard's read, session insert, device touch, audit insert (``Decisions/beforeTheWriter``: the same read first on the reading connection) | 1 |
/// | a failed verification | delete and read as above, then 1 upsert per subject (1–3), 1 audit insert per event | 1 |
/// | `POST /login/password` | 1 user read, 1 counter read (no commit), then session insert, counter delete, audit insert | 1 |
/// | bearer-token check | 1 join read | 0 |
///
/// A transaction that shares its group adds `SAVEPOINT` and `RELEASE`; the commit is shared.
public final class SQLiteStore: BioAuthStore {
    let writer: SQLiteWriter

    /// How many transactions were acknowledged, and how many `COMMIT`s waited for the disk (fsyncs)
    /// to acknowledge them — a group of only ephemeral writes (`WritePlan.isEphemeral`) takes none.
    public struct Statistics: Sendable, Hashable {
        public var transactions = 0
        public var commits = 0
    }

    public var statistics: Statistics { writer.statistics }

    /// A `PRAGMA` as the writer's connection has it now, for tests and diagnostics.
    package func pragma(_ name: String) async throws -> String {
        let name = name.filter { $0.isLetter || $0 == "_" }
        return try await writer.read { db in try db.query("PRAGMA \(name)").first.map { try $0.int(name) }.map(String.init) ?? "" }
    }

    /// Where reads run: a second connection on a thread of its own for a file (WAL lets it read the
    /// last commit while the writer writes and waits for its fsync), the writer for `:memory:`
    /// (a private database no other connection sees).
    let reader: SQLiteWriter

    /// Where finishing challenges are decided.
    public let decisions: Decisions

    private init(writer: SQLiteWriter, reader: SQLiteWriter, decisions: Decisions) {
        self.writer = writer
        self.reader = reader
        self.decisions = decisions
    }

    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    /// - Throws: `StoreError` `unavailable` if the file cannot be opened.
    public static func open(path: String, decisions: Decisions = .beforeTheWriter, logger: Logger = .discarding("BioAuthSQLite"))
        async throws -> SQLiteStore
    {
        try prepared(path: path, decisions: decisions, logger: logger)
    }

    /// A private database in memory, gone when the store closes: the same SQL, rules and
    /// conformance as a file, without durability. For tests, demos and `bioauth-server --database :memory:`.
    public static func inMemory(decisions: Decisions = .beforeTheWriter, logger: Logger = .discarding("BioAuthSQLite")) throws
        -> SQLiteStore
    {
        try prepared(path: ":memory:", decisions: decisions, logger: logger)
    }

    /// Opens the connection, configures it and migrates the schema on this thread, then hands the
    /// connection to the writer thread.
    private static func prepared(path: String, decisions: Decisions, logger: Logger) throws -> SQLiteStore {
        let db = try SQLiteHandle(path: path)
        do {
            try db.execute("PRAGMA journal_mode=WAL")
            try db.execute("PRAGMA synchronous=FULL")
            try db.execute("PRAGMA busy_timeout=5000")
            // Each member of a group commit runs in a savepoint; its statement journal lives in
            // memory rather than in a temporary file.
            try db.execute("PRAGMA temp_store=MEMORY")
            try migrate(db, logger: logger)
        } catch {
            db.close()
            throw error
        }
        guard path != ":memory:" else {
            let writer = SQLiteWriter(connection: db)
            return SQLiteStore(writer: writer, reader: writer, decisions: decisions)
        }
        // The reading connection is ready before either thread starts: a failure closes both.
        let reading: SQLiteHandle
        do { reading = try SQLiteHandle(path: path) } catch {
            db.close()
            throw error
        }
        do {
            try reading.execute("PRAGMA busy_timeout=5000")
            try reading.execute("PRAGMA query_only=1")
        } catch {
            reading.close()
            db.close()
            throw error
        }
        return SQLiteStore(
            writer: SQLiteWriter(connection: db), reader: SQLiteWriter(connection: reading, name: "sqlite-reader"), decisions: decisions)
    }

    /// Closes the connection after every queued transaction has committed. Idempotent.
    public func close() async throws {
        await writer.close()
        if reader !== writer { await reader.close() }
    }

    private static func migrate(_ db: SQLiteHandle, logger: Logger) throws {
        try db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        let applied = Set(try db.query("SELECT name FROM migrations").map { try $0.string("name") })
        let unknown = Schema.unknown(applied)
        guard unknown.isEmpty else {
            throw StoreError(
                .schemaTooNew, detail: "the database has migrations this binary does not know: \(unknown.joined(separator: "; "))")
        }
        for migration in Self.migrations where !applied.contains(migration.name) {
            try db.execute("BEGIN IMMEDIATE")
            do {
                for statement in migration.statements { try db.execute(statement) }
                try db.query("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", [.text(migration.name), .date(Date())])
                try db.execute("COMMIT")
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
            logger.notice("applied migration", metadata: ["migration": "\(migration.name)"])
        }
    }

    /// The type name this store declares for each ``Schema/ColumnType``.
    package static func typeName(_ type: Schema.ColumnType) -> String {
        switch type {
        case .text: "TEXT"
        case .bytes: "BLOB"
        case .date: "REAL"
        case .integer, .smallInteger, .boolean, .serial: "INTEGER"
        }
    }

    /// Every column of the database as SQLite declares it, tables by name, columns in order.
    package func declaredColumns() async throws -> [Schema.DeclaredColumn] {
        try await reader.read { db in
            try db.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'migrations' ORDER BY name"
            ).flatMap { table in
                let name = try table.string("name")
                return try db.query("SELECT name, type, \"notnull\" AS required, pk FROM pragma_table_info(?)", [.text(name)]).map {
                    column in
                    Schema.DeclaredColumn(
                        table: name, column: try column.string("name"), type: try column.string("type"),
                        nullable: try column.int("required") == 0 && column.int("pk") == 0)
                }
            }
        }
    }

    // MARK: Plans

    public func apply(_ plan: WritePlan) async throws -> PlanOutcome {
        try await writer.write(ephemeral: plan.isEphemeral) { db in try db.apply(plan) }
    }

    public func decide<Verdict: Sendable>(
        locking: RowLocks, _ decide: @escaping @Sendable (LockedRows) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        // The single writer serialises transactions: what is read here cannot change before the plan runs.
        try await writer.write { db in
            var rows = LockedRows()
            if let hash = locking.approval, let row = try db.query(Reads.approval(hash, locked: false)).first {
                rows.approval = try ApprovalRecord(row: row)
                rows.approvalSignerActive = try row.bool("signer_active")
            }
            if let id = locking.enrolmentRequest {
                rows.enrolmentRequest = try db.first(Reads.enrolmentRequest(id, locked: false), EnrolmentRequestRecord.init(row:))
            }
            if let hash = locking.refreshToken {
                if let current = try db.first(Reads.refreshSession(hash, locked: false), SessionState.init(row:)) {
                    rows.refreshSession = current
                } else if let spender = try db.first(Reads.spendingSession(hash, locked: false), SessionState.init(row:)) {
                    rows.refreshSession = spender
                    rows.spentRefreshToken = try db.first(Reads.spentRefreshToken(hash), SpentRefreshToken.init(row:))
                }
            }
            if let key = locking.passwordAttempt { rows.passwordAttempt = try db.passwordAttemptRows(key) }
            if let user = locking.enrolmentRequestsOf {
                rows.enrolmentRequests = try db.all(Reads.enrolmentRequests(of: user), EnrolmentRequestRecord.init(row:))
            }
            if let id = locking.deviceRemoval {
                rows.deviceRemoval = try db.first(Reads.deviceRemoval(id, locked: false), DeviceRemovalRecord.init(row:))
            }
            if let id = locking.crossDeviceRequest {
                rows.crossDeviceRequest = try db.first(Reads.crossDeviceRequest(id, locked: false), CrossDeviceRequestRecord.init(row:))
            }
            if let of = locking.crossDeviceRequestsOf {
                rows.crossDeviceRequests = try db.all(
                    Reads.crossDeviceRequests(of: of.userID, since: of.since), CrossDeviceRequestRecord.init(row:))
                rows.crossDeviceRequesterKnown =
                    try !db.query(Reads.knownClient(of.userID, of.client)).isEmpty
                    || of.screenKey.map { try !db.query(Reads.knownClient(of.userID, $0)).isEmpty } ?? false
            }
            rows.counters = try db.counters(locking.counters)
            let decision = decide(rows)
            return (decision.verdict, try db.apply(decision.plan))
        }
    }

    // MARK: Users

    public func passwordLoginState(username: UserID?, lockout: LockoutQuery) async throws -> PasswordLoginState {
        try await reader.read { db in
            PasswordLoginState(
                user: try db.first(Reads.user(username), UserRecord.init(row:)), lockedOut: try db.isLockedOut(lockout),
                knownClient: try !db.query(Reads.knownClient(username, lockout.client)).isEmpty)
        }
    }

    public func sweep(windowsBefore: Date, runsBefore: Date, auditBefore: Date, sessionsBefore: Date) async throws -> SweepResult {
        try await writer.write { db in
            var result = SweepResult(counters: 0, auditRows: 0, approvals: 0, enrolmentRequests: 0, sessions: 0)
            let deletions = SweepStatements.deletions(
                windowsBefore: windowsBefore, runsBefore: runsBefore, auditBefore: auditBefore, sessionsBefore: sessionsBefore)
            for (delete, counted) in deletions {
                let counting: SQL = "\(delete) RETURNING 1"
                let deleted = try db.query(counting).count
                if let counted { result[keyPath: counted] += deleted }
            }
            return result
        }
    }

    // MARK: Reads

    public func device(id: DeviceID) async throws -> DeviceRecord? {
        try await reader.read { db in try db.first(Reads.device(id), { try DeviceRecord(row: $0) }) }
    }

    public func devices(userID: UserID) async throws -> [DeviceRecord] {
        try await reader.read { db in try db.all(Reads.devices(of: userID), { try DeviceRecord(row: $0) }) }
    }

    public func session(tokenHash: TokenHash) async throws -> SessionState? {
        try await reader.read { db in try db.first(Reads.sessionState(where: "s.token_hash = \(tokenHash)"), SessionState.init(row:)) }
    }

    public func session(id: SessionID) async throws -> SessionState? {
        try await reader.read { db in try db.first(Reads.sessionState(where: "s.id = \(id)"), SessionState.init(row:)) }
    }

    public func sessions(userID: UserID) async throws -> [SessionRecord] {
        try await reader.read { db in try db.all(Reads.sessions(of: userID), SessionRecord.init(row:)) }
    }

    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await reader.read { db in try db.all(Reads.signingKeys, SigningKeyRecord.init(row:)) }
    }

    public func apiKey(secretHash: TokenHash) async throws -> ApiKeyRecord? {
        try await reader.read { db in try db.first(Reads.apiKey(secretHash: secretHash), ApiKeyRecord.init(row:)) }
    }

    public func apiKeys() async throws -> [ApiKeyRecord] {
        try await reader.read { db in try db.all(Reads.apiKeys, ApiKeyRecord.init(row:)) }
    }

    public func enrolmentRequest(id: EnrolmentRequestID) async throws -> EnrolmentRequestRecord? {
        try await reader.read { db in try db.first(Reads.enrolmentRequest(id, locked: false), EnrolmentRequestRecord.init(row:)) }
    }

    public func enrolmentRequests(userID: UserID, now: Date) async throws -> [EnrolmentRequestRecord] {
        try await reader.read { db in try db.all(Reads.enrolmentRequests(of: userID, now: now), EnrolmentRequestRecord.init(row:)) }
    }

    public func crossDeviceRequest(id: CrossDeviceRequestID) async throws -> CrossDeviceRequestRecord? {
        try await reader.read { db in try db.first(Reads.crossDeviceRequest(id, locked: false), CrossDeviceRequestRecord.init(row:)) }
    }

    public func pendingCrossDeviceRequests(userID: UserID, now: Date, limit: Int) async throws -> [CrossDeviceRequestRecord] {
        try await reader.read { db in
            try db.all(Reads.pendingCrossDeviceRequests(of: userID, now: now, limit: limit), CrossDeviceRequestRecord.init(row:))
        }
    }

    public func deviceRemovals(userID: UserID) async throws -> [DeviceRemovalRecord] {
        try await reader.read { db in try db.all(Reads.deviceRemovals(of: userID), DeviceRemovalRecord.init(row:)) }
    }

    public func dueDeviceRemovals(now: Date, limit: Int) async throws -> [DeviceRemovalRecord] {
        try await reader.read { db in try db.all(Reads.dueDeviceRemovals(now: now, limit: limit), DeviceRemovalRecord.init(row:)) }
    }

    public func auditEvents(userID: UserID?, limit: Int) async throws -> [AuditEvent] {
        try await reader.read { db in try db.all(Reads.auditEvents(of: userID, limit: limit)) { try AuditEvent(row: $0) } }
    }
}

/// The statements a transaction is made of, run on the writer thread.
extension SQLiteHandle {
    /// The first row's record, decoded; nil for no row.
    func first<Record>(_ statement: SQL, _ decode: (SQLRow) throws -> Record) throws -> Record? {
        try query(statement).first.map(decode)
    }

    /// Every row's record, decoded, in the statement's order.
    func all<Record>(_ statement: SQL, _ decode: (SQLRow) throws -> Record) throws -> [Record] {
        try query(statement).map(decode)
    }

    func isLockedOut(_ lockout: LockoutQuery) throws -> Bool {
        lockout.isLockedOut(clientCount: try query(Reads.clientFailures(lockout)).first?.int("count") ?? 0)
    }

    /// In one statement: whether the client's failure limit is reached, and the row of `device`.
    func lockoutState(_ lockout: LockoutQuery, device: DeviceID) throws -> (lockedOut: Bool, device: DeviceRecord?) {
        let statement: SQL = """
            SELECT (\(Reads.clientFailures(lockout))) AS client_count, d.* FROM (SELECT 1) LEFT JOIN devices d ON d.id = \(device)
            """
        guard let row = try query(statement).first else { throw StoreError(.corruptRow, detail: "lockout state") }
        let stored = try row.optionalString("id") != nil ? DeviceRecord(row: row) : nil
        return (lockout.isLockedOut(clientCount: try row.optionalInt("client_count") ?? 0), stored)
    }

    /// The rows a password attempt is decided on (the single writer serialises the decision).
    fileprivate func passwordAttemptRows(_ key: PasswordAttemptKey) throws -> PasswordAttemptRows {
        PasswordAttemptRows(
            user: try first(Reads.user(key.user), UserRecord.init(row:)), counters: try counters(key.subjects),
            knownClient: try !query(Reads.knownClient(key.user, key.client)).isEmpty)
    }

    /// The counters of `subjects` that exist, in one statement.
    fileprivate func counters(_ subjects: [FailureSubject]) throws -> [FailureSubject: FailureCounter] {
        guard !subjects.isEmpty else { return [:] }
        let bySubject = Dictionary(subjects.map { ($0.storageKey, $0) }, uniquingKeysWith: { $1 })
        var counters: [FailureSubject: FailureCounter] = [:]
        for row in try query(Reads.counters(Array(bySubject.keys))) {
            if let subject = bySubject[try row.string("key")] {
                counters[subject] = FailureCounter(since: try row.date("window_start"), count: try row.int("count"))
            }
        }
        return counters
    }
}
