import BioAuthCore
import BioAuthServer
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// A ``BioAuthStore`` on PostgreSQL, for several `bioauth-server` instances sharing one database.
///
/// Every write method is one transaction on a pooled connection (PostgresNIO's `PostgresClient`).
/// Exactly-once consumption is `DELETE … RETURNING` (under READ COMMITTED a second deleter waits for
/// the first and then finds nothing); counters are single-row upserts; the outstanding-challenge cap
/// is exact because issuing takes a transaction-scoped advisory lock on the device id.
///
/// Round trips per request (each transaction adds `BEGIN` and `COMMIT`):
///
/// | Request | Statements | Transactions |
/// |---|---|---|
/// | `POST /login/challenge` | device lock, counter read, count, insert | 1 |
/// | `POST /login/finish` | delete-returning joined with the device row, counter read, one statement for the session and the device touch, the audit insert | 1 |
/// | a failed verification | delete-returning + device, counter read, 1 upsert per subject, 1 audit insert per event | 1 |
/// | bearer-token check | 1 join read | 0 |
///
/// A connection problem, a server shutting down, or no connection within ``Options/operationTimeout``
/// is ``StoreError`` `unavailable` (HTTP 503); the pool reconnects when the server returns.
public final class PostgresStore: BioAuthStore {
    /// Connection settings beyond the URL.
    public struct Options: Sendable {
        public enum TLSMode: String, Sendable, CaseIterable {
            /// Plain TCP (loopback or a private network you trust).
            case disable
            /// TLS when the server offers it, plain otherwise.
            case prefer
            /// TLS with certificate verification, or no connection.
            case require
        }

        public var tls: TLSMode
        /// Most connections this instance opens.
        public var poolSize: Int
        /// Longest wait for a connection or a statement before a request answers 503.
        public var operationTimeout: Duration

        public init(tls: TLSMode = .prefer, poolSize: Int = 20, operationTimeout: Duration = .seconds(5)) {
            self.tls = tls
            self.poolSize = poolSize
            self.operationTimeout = operationTimeout
        }
    }

    /// A `postgres://` URL, parsed. The password never appears in a description.
    public struct Location: Sendable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String?
        public var database: String?
        public var sslMode: Options.TLSMode?

        /// Parses `postgres://user[:password]@host[:port][/database][?sslmode=disable|prefer|require]`;
        /// nil for anything else.
        public init?(url text: String) {
            guard let components = URLComponents(string: text), components.scheme == "postgres" || components.scheme == "postgresql",
                let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
            else { return nil }
            self.host = host
            port = components.port ?? 5432
            username = user.removingPercentEncoding ?? user
            password = components.password.map { $0.removingPercentEncoding ?? $0 }
            let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
            database = path.isEmpty ? nil : path
            if let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value {
                guard let parsed = Options.TLSMode(rawValue: mode) else { return nil }
                sslMode = parsed
            }
        }

        public var description: String { "postgres://\(username)@\(host):\(port)/\(database ?? "")" }
    }

    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger
    private let timeout: Duration
    private let closed = Mutex(false)

    /// Append-only migrations, applied in order under an advisory lock and recorded by version and name in
    /// `bioauth_migrations`. Their names are ``Schema/migrations`` and the result is
    /// ``Schema/tables`` (`SchemaTests`).
    package static let migrations: [(version: Int, name: String, statements: [String])] = [
        (
            1, "Create core tables",
            [
                "CREATE TABLE users (id TEXT PRIMARY KEY, password_salt BYTEA NOT NULL, password_rounds INTEGER NOT NULL, password_hash BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL)",
                "CREATE TABLE challenges (id BYTEA PRIMARY KEY, purpose SMALLINT NOT NULL, rp_id TEXT NOT NULL, user_id TEXT NOT NULL, device_id TEXT NOT NULL, nonce BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, operation_hash BYTEA, registration_key BYTEA, device_name TEXT)",
                "CREATE INDEX challenges_device ON challenges (device_id, expires_at)",
                "CREATE INDEX challenges_expiry ON challenges (expires_at)",
                "CREATE TABLE devices (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, public_key BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL, last_used_at TIMESTAMPTZ, revoked_at TIMESTAMPTZ)",
                "CREATE INDEX devices_user ON devices (user_id, created_at)",
                "CREATE TABLE sessions (token_hash BYTEA PRIMARY KEY, id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL, device_id TEXT, kind TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, revoked_at TIMESTAMPTZ)",
                "CREATE INDEX sessions_user ON sessions (user_id, created_at)",
                "CREATE TABLE approvals (token_hash BYTEA PRIMARY KEY, user_id TEXT NOT NULL, device_id TEXT NOT NULL, operation_hash BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, consumed_at TIMESTAMPTZ)",
                "CREATE TABLE counters (key TEXT PRIMARY KEY, window_start TIMESTAMPTZ NOT NULL, count INTEGER NOT NULL)",
                "CREATE TABLE audit (seq BIGSERIAL PRIMARY KEY, at TIMESTAMPTZ NOT NULL, kind TEXT NOT NULL, user_id TEXT, device_id TEXT, reason TEXT, client TEXT, request_id TEXT)",
                "CREATE INDEX audit_user ON audit (user_id, seq)",
            ]
        ),
        (
            2, "Registration challenges say whether they replace a device's key",
            [
                "ALTER TABLE challenges ADD COLUMN replaces_device BOOLEAN",
                "UPDATE challenges SET replaces_device = FALSE WHERE purpose = 1",
            ]
        ),
        (
            3, "Approvals remember the session that obtained them",
            [
                "ALTER TABLE approvals ADD COLUMN session_id TEXT",
                "CREATE INDEX approvals_session ON approvals (session_id)",
                "CREATE INDEX approvals_device ON approvals (device_id)",
            ]
        ),
        (
            4, "Repeated failures are one audit row with a count",
            [
                "ALTER TABLE audit ADD COLUMN count INTEGER NOT NULL DEFAULT 1",
                "CREATE INDEX audit_repeat ON audit (client, kind, at)",
                "CREATE INDEX audit_at ON audit (at)",
            ]
        ),
        (5, "Challenges remember the session that asked for them", ["ALTER TABLE challenges ADD COLUMN session_id TEXT"]),
        (
            6, "Enrolment requests wait for an approval or a recovery code",
            [
                "CREATE TABLE enrolment_requests (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, device_id TEXT NOT NULL, name TEXT NOT NULL, public_key BYTEA NOT NULL, replaces_device BOOLEAN NOT NULL, session_id TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, approved_at TIMESTAMPTZ, approved_by_device TEXT, recovery_code_hash BYTEA, recovery_attempts INTEGER NOT NULL)",
                "CREATE INDEX enrolment_requests_user ON enrolment_requests (user_id, created_at)",
                "CREATE INDEX enrolment_requests_expiry ON enrolment_requests (expires_at)",
                "ALTER TABLE challenges ADD COLUMN enrolment_request_id TEXT",
            ]
        ),
        (
            7, "API keys for the backend API",
            ["CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_hash BYTEA NOT NULL UNIQUE, scopes TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, revoked_at TIMESTAMPTZ)"]
        ),
        (
            8, "Access tokens: signing keys, refresh tokens",
            [
                "CREATE TABLE signing_keys (id TEXT PRIMARY KEY, private_key BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL)",
                "ALTER TABLE sessions ADD COLUMN refresh_hash BYTEA",
                "CREATE UNIQUE INDEX sessions_refresh ON sessions (refresh_hash)",
                "CREATE TABLE spent_refresh_tokens (token_hash BYTEA PRIMARY KEY, session_id TEXT NOT NULL)",
                "CREATE INDEX spent_refresh_tokens_session ON spent_refresh_tokens (session_id)",
            ]
        ),
        (
            9, "The event outbox",
            [
                "CREATE TABLE outbox (id BIGSERIAL PRIMARY KEY, at TIMESTAMPTZ NOT NULL, kind TEXT NOT NULL, user_id TEXT, device_id TEXT, reason TEXT, attempts INTEGER NOT NULL, next_attempt_at TIMESTAMPTZ NOT NULL, lease_until TIMESTAMPTZ)",
                "CREATE INDEX outbox_due ON outbox (next_attempt_at)",
            ]
        ),
    ]

    /// Any constant: the advisory lock every starting instance takes while it migrates.
    static let migrationLock: Int64 = 0x6269_6f61_7574_68  // "bioauth"

    private init(client: PostgresClient, runner: Task<Void, Never>, logger: Logger, timeout: Duration) {
        self.client = client
        self.runner = runner
        self.logger = logger
        self.timeout = timeout
    }

    /// Connects, starts the pool and applies pending migrations (safe when several instances
    /// start at once).
    public static func open(_ location: Location, options: Options = Options(), logger: Logger = Logger(label: "BioAuthPostgres")) async throws -> PostgresStore {
        let tls: PostgresClient.Configuration.TLS =
            switch location.sslMode ?? options.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password, database: location.database, tls: tls)
        configuration.options.maximumConnections = max(1, options.poolSize)
        configuration.options.connectTimeout = options.operationTimeout
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let runner = Task { await client.run() }
        let store = PostgresStore(client: client, runner: runner, logger: logger, timeout: options.operationTimeout)
        do { try await store.migrate() } catch {
            try? await store.close()
            throw error
        }
        return store
    }

    /// Stops the pool. Idempotent.
    public func close() async throws {
        guard
            closed.withLock({ closed in
                defer { closed = true }; return !closed
            })
        else { return }
        runner.cancel()
        await runner.value
    }

    private func migrate() async throws {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: self.logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS bioauth_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)",
                logger: self.logger)
            var applied = Set<Int>(), names: [String] = []
            for try await (version, name) in try await connection.query("SELECT version, name FROM bioauth_migrations", logger: self.logger).decode((Int, String).self) {
                applied.insert(version)
                names.append(name)
            }
            let unknown = Schema.unknown(names)
            guard unknown.isEmpty else {
                throw StoreError(.schemaTooNew, detail: "the database has migrations this binary does not know: \(unknown.joined(separator: "; "))")
            }
            for migration in Self.migrations where !applied.contains(migration.version) {
                for statement in migration.statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger) }
                try await connection.query(
                    "INSERT INTO bioauth_migrations (version, name, applied_at) VALUES (\(migration.version), \(migration.name), \(Date()))", logger: self.logger)
            }
        }
    }

    // MARK: Plumbing

    /// Runs `body` in one transaction, bounded by the operation timeout; classifies failures.
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await bounded { try await self.client.withTransaction(logger: self.logger) { connection in try await body(connection) } }
    }

    /// Runs one statement outside a transaction (reads).
    private func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await bounded { try await self.client.query(query, logger: self.logger).collect() }
    }

    private func bounded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await withThrowingTaskGroup(of: T.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: self.timeout)
                    throw StoreError(.unavailable, detail: "postgres timeout")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch {
            throw Self.classify(error)
        }
    }

    /// Classifies by SQLSTATE and PostgresNIO's error codes, never by message text.
    static func classify(_ error: any Error) -> any Error {
        if error is StoreError { return error }
        if let transaction = error as? PostgresTransactionError {
            // What failed first decides: BEGIN, the body, or COMMIT.
            if let cause = transaction.beginError ?? transaction.closureError ?? transaction.commitError { return classify(cause) }
            return StoreError(.unavailable, detail: "postgres transaction")
        }
        if error is PostgresDecodingError { return StoreError(.corruptRow, detail: "postgres decoding") }
        if error is CancellationError { return StoreError(.unavailable, detail: "postgres cancelled") }
        guard let error = error as? PSQLError else { return error }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            if state == "23505" { return StoreError(.duplicate, detail: "postgres 23505") }
            // 08: connection exception; 57P0x: shutdown or not yet accepting; 53: insufficient
            // resources; 40001/40P01: serialisation failure or deadlock, safe to retry.
            if state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") || state == "40001" || state == "40P01" {
                return StoreError(.unavailable, detail: "postgres \(state)")
            }
            return error
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed, .queryCancelled, .sslUnsupported,
            .failedToAddSSLHandler:
            return StoreError(.unavailable, detail: "postgres \(error.code)")
        default:
            return error
        }
    }

    /// The type name PostgreSQL reports (`information_schema.columns.data_type`) for each ``Schema/ColumnType``.
    package static func typeName(_ type: Schema.ColumnType) -> String {
        switch type {
        case .text: "text"
        case .bytes: "bytea"
        case .date: "timestamp with time zone"
        case .integer: "integer"
        case .smallInteger: "smallint"
        case .boolean: "boolean"
        case .serial: "bigint"
        }
    }

    /// Every column of the database's tables as PostgreSQL reports it, tables by name, columns in order.
    package func declaredColumns() async throws -> [Schema.DeclaredColumn] {
        var columns: [Schema.DeclaredColumn] = []
        let rows = try await client.query(
            """
            SELECT table_name::text, column_name::text, data_type::text, is_nullable::text FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name <> 'bioauth_migrations' ORDER BY table_name, ordinal_position
            """, logger: logger)
        for try await (table, column, type, nullable) in rows.decode((String, String, String, String).self) {
            columns.append(Schema.DeclaredColumn(table: table, column: column, type: type, nullable: nullable == "YES"))
        }
        return columns
    }

    // MARK: Plans

    public func apply(_ plan: WritePlan) async throws -> PlanOutcome {
        try await transaction { c in try await self.apply(plan, c) }
    }

    public func decide<Verdict: Sendable>(
        locking: RowLocks, _ decide: @escaping @Sendable (LockedRows) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        try await transaction { c in
            // Each read locks its row (FOR UPDATE): a concurrent decision on it waits for this
            // transaction and then re-reads the row as committed.
            var rows = LockedRows()
            if let hash = locking.approval,
                let row = try await c.query(
                    """
                    SELECT a.*, EXISTS (SELECT 1 FROM devices d WHERE d.id = a.device_id AND d.revoked_at IS NULL) AS signer_active
                    FROM approvals a WHERE a.token_hash = \(hash) FOR UPDATE OF a
                    """, logger: self.logger
                ).collect().first
            {
                let r = row.makeRandomAccess()
                rows.approval = try Self.approval(r)
                rows.approvalSignerActive = try r.value("signer_active", Bool.self)
            }
            if let id = locking.enrolmentRequest {
                rows.enrolmentRequest = try await c.query("SELECT * FROM enrolment_requests WHERE id = \(id) FOR UPDATE", logger: self.logger).collect().first
                    .map { try Self.enrolmentRequest($0.makeRandomAccess()) }
            }
            if let hash = locking.refreshToken {
                // Only session rows are locked, so concurrent uses of one token queue on the
                // session: the later one finds the token spent.
                let select = "SELECT s.*, d.id AS device_row, d.revoked_at AS device_revoked_at FROM sessions s LEFT JOIN devices d ON d.id = s.device_id"
                if let current = try await c.query("\(unescaped: select) WHERE s.refresh_hash = \(hash) FOR UPDATE OF s", logger: self.logger).collect().first {
                    rows.refreshSession = try Self.sessionState(current)
                } else if let spender = try await c.query(
                    "\(unescaped: select) WHERE s.id = (SELECT session_id FROM spent_refresh_tokens WHERE token_hash = \(hash)) FOR UPDATE OF s", logger: self.logger
                ).collect().first {
                    rows.refreshSession = try Self.sessionState(spender)
                    rows.refreshTokenSpent = true
                }
            }
            let decision = decide(rows)
            return (decision.verdict, try await self.apply(decision.plan, c))
        }
    }

    // MARK: Users

    public func passwordLoginState(username: String, lockout: LockoutQuery) async throws -> PasswordLoginState {
        try await transaction { c in
            let user = try await c.query("SELECT * FROM users WHERE id = \(username)", logger: self.logger).collect().first.map { try Self.user($0.makeRandomAccess()) }
            return PasswordLoginState(user: user, lockedOut: try await self.isLockedOut(lockout, user: username, c))
        }
    }

    public func beginPasswordAttempt(username: String, lockout: LockoutQuery, run: PasswordRunPolicy, now: Date) async throws -> PasswordAttempt {
        try await transaction { c in
            let keys = [FailureSubject.client(lockout.client), .password(username), .passwordRun(username)].map(\.storageKey)
            // Serialises this user's attempts across instances: parallel guesses cannot all pass the check.
            try await c.query("SELECT pg_advisory_xact_lock(hashtextextended(\(keys[1]), 0))", logger: self.logger)
            let user = try await c.query("SELECT * FROM users WHERE id = \(username)", logger: self.logger).collect().first.map { try Self.user($0.makeRandomAccess()) }
            var entries: [String: (Date, Int)] = [:]
            for row in try await c.query("SELECT key, window_start, count FROM counters WHERE key = ANY(\(keys))", logger: self.logger).collect() {
                let r = row.makeRandomAccess()
                entries[try r.value("key", String.self)] = (try r.value("window_start", Date.self), Int(try r.value("count", Int32.self)))
            }
            let decision = run.decide(
                lockout: lockout, user: username, now: now, client: entries[keys[0]], password: entries[keys[1]], run: entries[keys[2]])
            switch decision {
            case .refused(let until): return PasswordAttempt(user: user, refusedUntil: until, reached: [])
            case .counted(let password, let runCount, let reached):
                try await c.query(
                    """
                    INSERT INTO counters (key, window_start, count) VALUES (\(keys[1]), \(lockout.windowStart), \(Int32(clamping: password))),
                      (\(keys[2]), \(now), \(Int32(clamping: runCount)))
                    ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count
                    """, logger: self.logger)
                return PasswordAttempt(user: user, refusedUntil: nil, reached: reached)
            }
        }
    }

    // MARK: Challenges

    public func issueChallenge(_ ch: ChallengeRecord, limits: ChallengeLimits) async throws -> ChallengeIssue {
        try await transaction { c in
            // Serialises issuers for one device, so the cap is exact across instances.
            try await c.query("SELECT pg_advisory_xact_lock(hashtext(\(ch.deviceID)))", logger: self.logger)
            if try await self.isLockedOut(limits.lockout, user: ch.userID, c) { return .lockedOut }
            let outstanding =
                try await c.query(
                    """
                    SELECT COUNT(*) FROM challenges WHERE device_id = \(ch.deviceID) AND user_id = \(ch.userID) AND expires_at > \(limits.now)
                      AND EXISTS (SELECT 1 FROM devices WHERE id = \(ch.deviceID))
                    """, logger: self.logger
                ).collect().first.map { try $0.makeRandomAccess()[0].decode(Int.self) } ?? 0
            guard outstanding < limits.outstandingPerDevice else { return .tooManyChallenges }
            let columns = ch.binding.columns
            try await c.query(
                """
                INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at, operation_hash, registration_key, device_name, replaces_device, session_id, enrolment_request_id)
                VALUES (\(ch.id), \(Int16(ch.purpose.rawValue)), \(ch.relyingPartyID), \(ch.userID), \(ch.deviceID), \(ch.nonce), \(ch.createdAt), \(ch.expiresAt),
                        \(columns.operationHash), \(columns.publicKey), \(columns.deviceName), \(columns.replacing), \(ch.sessionID), \(ch.enrolmentRequestID))
                """, logger: self.logger)
            return .issued
        }
    }

    public func consumeChallenge<Verdict: Sendable>(
        id: Data, lockout: LockoutQuery, decide: @escaping @Sendable (TakenChallenge?) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        try await transaction { c in
            var taken: TakenChallenge?
            if let row = try await c.query(
                """
                WITH taken AS (DELETE FROM challenges WHERE id = \(id) RETURNING *)
                SELECT taken.*, d.id AS d_id, d.user_id AS d_user_id, d.name AS d_name, d.public_key AS d_public_key, d.created_at AS d_created_at,
                       d.last_used_at AS d_last_used_at, d.revoked_at AS d_revoked_at
                FROM taken LEFT JOIN devices d ON d.id = taken.device_id
                """, logger: self.logger
            ).collect().first {
                let r = row.makeRandomAccess()
                let challenge = try Self.challenge(r)
                let device = try r.optional("d_id", String.self) == nil ? nil : try Self.device(r, prefix: "d_")
                taken = TakenChallenge(
                    challenge: challenge, device: device, lockedOut: try await self.isLockedOut(lockout, user: challenge.userID, c))
            }
            let decision = decide(taken)
            return (decision.verdict, try await self.apply(decision.plan, c))
        }
    }

    public func sweep(windowsBefore: Date, runsBefore: Date, auditBefore: Date, sessionsBefore: Date) async throws -> SweepResult {
        try await transaction { c in
            let runs = FailureSubject.passwordRun("").storageKey + "%"
            func count(_ query: PostgresQuery) async throws -> Int {
                try await c.query(query, logger: self.logger).collect().first.map { try $0.makeRandomAccess()[0].decode(Int.self) } ?? 0
            }
            let counters = try await count(
                """
                WITH gone AS (DELETE FROM counters WHERE (key NOT LIKE \(runs) AND window_start < \(windowsBefore))
                  OR (key LIKE \(runs) AND window_start < \(runsBefore)) RETURNING 1) SELECT COUNT(*) FROM gone
                """)
            let audit = try await count("WITH gone AS (DELETE FROM audit WHERE at < \(auditBefore) RETURNING 1) SELECT COUNT(*) FROM gone")
            let approvals = try await count("WITH gone AS (DELETE FROM approvals WHERE expires_at < \(windowsBefore) RETURNING 1) SELECT COUNT(*) FROM gone")
            let requests = try await count(
                "WITH gone AS (DELETE FROM enrolment_requests WHERE expires_at < \(windowsBefore) RETURNING 1) SELECT COUNT(*) FROM gone")
            _ = try await count("WITH gone AS (DELETE FROM outbox WHERE at < \(auditBefore) RETURNING 1) SELECT COUNT(*) FROM gone")
            _ = try await count(
                """
                WITH gone AS (DELETE FROM spent_refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE expires_at < \(windowsBefore)) RETURNING 1)
                SELECT COUNT(*) FROM gone
                """)
            _ = try await count(
                """
                WITH gone AS (DELETE FROM spent_refresh_tokens WHERE session_id IN (
                  SELECT id FROM sessions WHERE expires_at < \(sessionsBefore) OR revoked_at < \(sessionsBefore)) RETURNING 1)
                SELECT COUNT(*) FROM gone
                """)
            let sessions = try await count(
                "WITH gone AS (DELETE FROM sessions WHERE expires_at < \(sessionsBefore) OR revoked_at < \(sessionsBefore) RETURNING 1) SELECT COUNT(*) FROM gone")
            return SweepResult(counters: counters, auditRows: audit, approvals: approvals, enrolmentRequests: requests, sessions: sessions)
        }
    }

    public func deleteChallenges(expiredBefore date: Date) async throws -> Int {
        try await rows("WITH gone AS (DELETE FROM challenges WHERE expires_at < \(date) RETURNING 1) SELECT COUNT(*) FROM gone")
            .first.map { try $0.makeRandomAccess()[0].decode(Int.self) } ?? 0
    }

    // MARK: Devices

    public func device(id: String) async throws -> DeviceRecord? {
        try await rows("SELECT * FROM devices WHERE id = \(id)").first.map { try Self.device($0.makeRandomAccess()) }
    }

    public func devices(userID: String) async throws -> [DeviceRecord] {
        try await rows("SELECT * FROM devices WHERE user_id = \(userID) ORDER BY created_at, id").map { try Self.device($0.makeRandomAccess()) }
    }

    // MARK: Sessions

    public func session(tokenHash: Data) async throws -> SessionState? {
        try await rows(
            """
            SELECT s.*, d.id AS device_row, d.revoked_at AS device_revoked_at
            FROM sessions s LEFT JOIN devices d ON d.id = s.device_id WHERE s.token_hash = \(tokenHash)
            """
        ).first.map(Self.sessionState)
    }

    public func session(id: String) async throws -> SessionState? {
        try await rows(
            """
            SELECT s.*, d.id AS device_row, d.revoked_at AS device_revoked_at
            FROM sessions s LEFT JOIN devices d ON d.id = s.device_id WHERE s.id = \(id)
            """
        ).first.map(Self.sessionState)
    }

    static func sessionState(_ row: PostgresRow) throws -> SessionState {
        let r = row.makeRandomAccess()
        let session = try Self.session(r)
        let deviceActive = try session.deviceID == nil || (r.optional("device_row", String.self) != nil && r.optional("device_revoked_at", Date.self) == nil)
        return SessionState(session: session, deviceActive: deviceActive)
    }

    public func sessions(userID: String) async throws -> [SessionRecord] {
        try await rows("SELECT * FROM sessions WHERE user_id = \(userID) ORDER BY created_at, id").map { try Self.session($0.makeRandomAccess()) }
    }

    // MARK: Approvals

    // MARK: Outbox

    public func claimOutbox(now: Date, leaseUntil: Date, limit: Int) async throws -> [OutboxEvent] {
        try await transaction { c in
            // SKIP LOCKED: instances claiming at once take different events.
            try await c.query(
                """
                UPDATE outbox SET lease_until = \(leaseUntil) WHERE id IN (
                  SELECT id FROM outbox WHERE next_attempt_at <= \(now) AND (lease_until IS NULL OR lease_until <= \(now))
                  ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING *
                """, logger: self.logger
            ).collect().map { row in
                let r = row.makeRandomAccess()
                return OutboxEvent(
                    id: try r.value("id"),
                    event: AuditEvent(
                        at: try r.value("at"), kind: try r.value("kind"), userID: try r.optional("user_id", String.self),
                        deviceID: try r.optional("device_id", String.self), reason: try r.optional("reason", String.self)),
                    attempts: Int(try r.value("attempts", Int32.self)))
            }.sorted { $0.id < $1.id }
        }
    }

    public func completeOutbox(id: Int64) async throws {
        _ = try await transaction { c in try await c.query("DELETE FROM outbox WHERE id = \(id)", logger: self.logger) }
    }

    public func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) async throws {
        _ = try await transaction { c in
            try await c.query(
                "UPDATE outbox SET attempts = \(attempts), next_attempt_at = \(nextAttemptAt), lease_until = NULL WHERE id = \(id)", logger: self.logger)
        }
    }

    // MARK: Signing keys

    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await rows("SELECT * FROM signing_keys ORDER BY created_at, id").map { row in
            let r = row.makeRandomAccess()
            return SigningKeyRecord(id: try r.value("id"), privateKey: try r.value("private_key"), createdAt: try r.value("created_at"))
        }
    }

    // MARK: API keys

    public func apiKey(secretHash: Data) async throws -> ApiKeyRecord? {
        try await rows("SELECT * FROM api_keys WHERE secret_hash = \(secretHash)").first.map { try Self.apiKey($0.makeRandomAccess()) }
    }

    public func apiKeys() async throws -> [ApiKeyRecord] {
        try await rows("SELECT * FROM api_keys ORDER BY created_at, id").map { try Self.apiKey($0.makeRandomAccess()) }
    }

    // MARK: Enrolment requests

    public func enrolmentRequest(id: String) async throws -> EnrolmentRequestRecord? {
        try await rows("SELECT * FROM enrolment_requests WHERE id = \(id)").first.map { try Self.enrolmentRequest($0.makeRandomAccess()) }
    }

    public func enrolmentRequests(userID: String, now: Date) async throws -> [EnrolmentRequestRecord] {
        try await rows("SELECT * FROM enrolment_requests WHERE user_id = \(userID) AND expires_at > \(now) ORDER BY created_at, id")
            .map { try Self.enrolmentRequest($0.makeRandomAccess()) }
    }

    // MARK: Audit

    public func auditEvents(userID: String?, limit: Int) async throws -> [AuditEvent] {
        let query: PostgresQuery =
            if let userID { "SELECT * FROM audit WHERE user_id = \(userID) ORDER BY seq DESC LIMIT \(limit)" } else {
                "SELECT * FROM audit ORDER BY seq DESC LIMIT \(limit)"
            }
        return try await rows(query).map { row in
            let r = row.makeRandomAccess()
            return AuditEvent(
                at: try r.value("at"), kind: try r.value("kind"), userID: try r.optional("user_id", String.self), deviceID: try r.optional("device_id", String.self),
                reason: try r.optional("reason", String.self), clientAddress: try r.optional("client", String.self),
                requestID: try r.optional("request_id", String.self), count: Int(try r.value("count", Int32.self)))
        }
    }

    // MARK: Statements inside a transaction

    /// Runs a plan inside the current transaction: the guards (each locks the row it checks, so
    /// concurrent plans on one row queue), then each mutation's statement.
    private func apply(_ plan: WritePlan, _ c: PostgresConnection) async throws -> PlanOutcome {
        for condition in plan.guards {
            let query: PostgresQuery
            switch condition {
            case .activeDevice(let id, let user): query = "SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL FOR UPDATE"
            case .ownedDevice(let id, let user): query = "SELECT 1 FROM devices WHERE id = \(id) AND user_id = \(user) FOR UPDATE"
            case .activeSession(let id, let user): query = "SELECT 1 FROM sessions WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL FOR UPDATE"
            case .activeApiKey(let id): query = "SELECT 1 FROM api_keys WHERE id = \(id) AND revoked_at IS NULL FOR UPDATE"
            case .approvedEnrolmentRequest(let id): query = "SELECT 1 FROM enrolment_requests WHERE id = \(id) AND approved_at IS NOT NULL FOR UPDATE"
            case .fewerPendingEnrolmentRequests(let user, let limit, let now):
                // Rows not yet inserted cannot be locked: a per-user advisory lock serialises the
                // count and the insert. Its own statement: the count's snapshot must postdate the lock.
                try await c.query("SELECT pg_advisory_xact_lock(hashtextextended('enrolment-requests:' || \(user), 0))", logger: logger)
                query = "SELECT 1 WHERE (SELECT COUNT(*) FROM enrolment_requests WHERE user_id = \(user) AND expires_at > \(now) AND approved_at IS NULL) < \(limit)"
            }
            if try await c.query(query, logger: logger).collect().isEmpty { return .refused(condition) }
        }
        var outcome = PlanOutcome.applied()
        for mutation in plan.mutations { try await run(mutation, into: &outcome, c) }
        return outcome
    }

    private func run(_ mutation: WritePlan.Mutation, into outcome: inout PlanOutcome, _ c: PostgresConnection) async throws {
        switch mutation {
        case .insertUser(let u):
            try await c.query(
                """
                INSERT INTO users (id, password_salt, password_rounds, password_hash, created_at)
                VALUES (\(u.id), \(u.passwordSalt), \(u.passwordRounds), \(u.passwordHash), \(u.createdAt))
                """, logger: logger)
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
                INSERT INTO devices (id, user_id, name, public_key, created_at, last_used_at, revoked_at)
                VALUES (\(d.id), \(d.userID), \(d.name), \(d.publicKey), \(d.createdAt), \(d.lastUsedAt), \(d.revokedAt))
                """, logger: logger)
        case .replaceDeviceKey(let id, let key, let at):
            try await c.query("UPDATE devices SET public_key = \(key), last_used_at = \(at) WHERE id = \(id)", logger: logger)
        case .insertApproval(let a):
            try await c.query(
                """
                INSERT INTO approvals (token_hash, user_id, device_id, operation_hash, created_at, expires_at, consumed_at, session_id)
                VALUES (\(a.tokenHash), \(a.userID), \(a.deviceID), \(a.operationHash), \(a.createdAt), \(a.expiresAt), \(a.consumedAt), \(a.sessionID))
                """, logger: logger)
        case .deleteEnrolmentRequest(let id):
            try await c.query("DELETE FROM enrolment_requests WHERE id = \(id)", logger: logger)
        case .approveEnrolmentRequest(let id, let at, let device):
            try await c.query("UPDATE enrolment_requests SET approved_at = \(at), approved_by_device = \(device) WHERE id = \(id)", logger: logger)
        case .setRecoveryCode(let id, let hash):
            try await c.query("UPDATE enrolment_requests SET recovery_code_hash = \(hash) WHERE id = \(id)", logger: logger)
        case .countRecoveryAttempt(let id):
            try await c.query("UPDATE enrolment_requests SET recovery_attempts = recovery_attempts + 1 WHERE id = \(id)", logger: logger)
        case .redeemApproval(let hash, let at):
            try await c.query("UPDATE approvals SET consumed_at = \(at) WHERE token_hash = \(hash)", logger: logger)
        case .rotateRefreshToken(let session, let spent, let replacement):
            try await c.query(
                """
                WITH spent AS (INSERT INTO spent_refresh_tokens (token_hash, session_id) VALUES (\(spent), \(session)))
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
                "INSERT INTO signing_keys (id, private_key, created_at) VALUES (\(k.id), \(k.privateKey), \(k.createdAt))", logger: logger)
        case .renameDevice(let id, let name):
            try await c.query("UPDATE devices SET name = \(name) WHERE id = \(id)", logger: logger)
        case .insertEnrolmentRequest(let r):
            try await c.query(
                """
                INSERT INTO enrolment_requests (id, user_id, device_id, name, public_key, replaces_device, session_id, created_at, expires_at, approved_at, approved_by_device, recovery_code_hash, recovery_attempts)
                VALUES (\(r.id), \(r.userID), \(r.deviceID), \(r.name), \(r.publicKey), \(r.replacing), \(r.sessionID), \(r.createdAt), \(r.expiresAt), \(r.approvedAt),
                        \(r.approvedByDevice), \(r.recoveryCodeHash), \(Int32(clamping: r.recoveryAttempts)))
                """, logger: logger)
        case .revokeApiKey(let id, let at):
            try await c.query("UPDATE api_keys SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL", logger: logger)
        case .revokeDevice(let id, let at):
            try await c.query("UPDATE devices SET revoked_at = \(at) WHERE id = \(id) AND revoked_at IS NULL", logger: logger)
        case .revokeSessions(let sessions, let at):
            let query: PostgresQuery =
                switch sessions {
                case .one(let id, let user): "UPDATE sessions SET revoked_at = \(at) WHERE id = \(id) AND user_id = \(user) AND revoked_at IS NULL RETURNING id"
                case .openedBy(let device, let user):
                    "UPDATE sessions SET revoked_at = \(at) WHERE device_id = \(device) AND user_id = \(user) AND revoked_at IS NULL RETURNING id"
                case .allOf(let user): "UPDATE sessions SET revoked_at = \(at) WHERE user_id = \(user) AND revoked_at IS NULL RETURNING id"
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
                  SELECT seq FROM audit WHERE client IS NOT DISTINCT FROM \(e.clientAddress) AND kind = \(e.kind)
                    AND at >= \(e.at.addingTimeInterval(-AuditEvent.aggregationWindow)) AND user_id IS NOT DISTINCT FROM \(e.userID)
                    AND device_id IS NOT DISTINCT FROM \(e.deviceID) AND reason IS NOT DISTINCT FROM \(e.reason)
                  ORDER BY seq DESC LIMIT 1) RETURNING seq
                """, logger: logger
            ).collect()
            if !merged.isEmpty { return }
        }
        try await c.query(
            """
            INSERT INTO audit (at, kind, user_id, device_id, reason, client, request_id)
            VALUES (\(e.at), \(e.kind), \(e.userID), \(e.deviceID), \(e.reason), \(e.clientAddress), \(e.requestID))
            """, logger: logger)
    }

    private func isLockedOut(_ lockout: LockoutQuery, user: String?, _ c: PostgresConnection) async throws -> Bool {
        let subjects = lockout.subjects(user: user).map(\.subject)
        let keys = Dictionary(subjects.map { ($0.storageKey, $0) }, uniquingKeysWith: { $1 })
        var counts: [FailureSubject: Int] = [:]
        let rows = try await c.query(
            "SELECT key, count FROM counters WHERE window_start = \(lockout.windowStart) AND key = ANY(\(Array(keys.keys)))", logger: logger)
        for try await (key, count) in rows.decode((String, Int32).self) {
            if let subject = keys[key] { counts[subject] = Int(count) }
        }
        return lockout.isLockedOut(counts, user: user)
    }

    // MARK: Rows

    static func user(_ r: PostgresRandomAccessRow) throws -> UserRecord {
        UserRecord(
            id: try r.value("id"), passwordSalt: try r.value("password_salt"), passwordRounds: Int(try r.value("password_rounds", Int32.self)),
            passwordHash: try r.value("password_hash"), createdAt: try r.value("created_at"))
    }

    static func challenge(_ r: PostgresRandomAccessRow) throws -> ChallengeRecord {
        let binding = try ChallengeRecord.Binding(
            purpose: Int(try r.value("purpose", Int16.self)), publicKey: try r.optional("registration_key", Data.self),
            deviceName: try r.optional("device_name", String.self), replacing: try r.optional("replaces_device", Bool.self),
            operationHash: try r.optional("operation_hash", Data.self))
        return ChallengeRecord(
            id: try r.value("id"), binding: binding, relyingPartyID: try r.value("rp_id"), userID: try r.value("user_id"), deviceID: try r.value("device_id"),
            nonce: try r.value("nonce"), createdAt: try r.value("created_at"), expiresAt: try r.value("expires_at"),
            sessionID: try r.optional("session_id", String.self), enrolmentRequestID: try r.optional("enrolment_request_id", String.self))
    }

    static func approval(_ r: PostgresRandomAccessRow) throws -> ApprovalRecord {
        ApprovalRecord(
            tokenHash: try r.value("token_hash"), userID: try r.value("user_id"), deviceID: try r.value("device_id"),
            operationHash: try r.value("operation_hash"), createdAt: try r.value("created_at"), expiresAt: try r.value("expires_at"),
            consumedAt: try r.optional("consumed_at", Date.self), sessionID: try r.optional("session_id", String.self))
    }

    static func apiKey(_ r: PostgresRandomAccessRow) throws -> ApiKeyRecord {
        guard let scopes = ApiKeyRecord.scopes(stored: try r.value("scopes")) else { throw StoreError(.corruptRow, detail: "api_keys.scopes") }
        return ApiKeyRecord(
            id: try r.value("id"), name: try r.value("name"), secretHash: try r.value("secret_hash"), scopes: scopes,
            createdAt: try r.value("created_at"), revokedAt: try r.optional("revoked_at", Date.self))
    }

    static func enrolmentRequest(_ r: PostgresRandomAccessRow) throws -> EnrolmentRequestRecord {
        EnrolmentRequestRecord(
            id: try r.value("id"), userID: try r.value("user_id"), deviceID: try r.value("device_id"), name: try r.value("name"),
            publicKey: try r.value("public_key"), replacing: try r.value("replaces_device"), sessionID: try r.value("session_id"),
            createdAt: try r.value("created_at"), expiresAt: try r.value("expires_at"), approvedAt: try r.optional("approved_at", Date.self),
            approvedByDevice: try r.optional("approved_by_device", String.self), recoveryCodeHash: try r.optional("recovery_code_hash", Data.self),
            recoveryAttempts: Int(try r.value("recovery_attempts", Int32.self)))
    }

    static func device(_ r: PostgresRandomAccessRow, prefix: String = "") throws -> DeviceRecord {
        DeviceRecord(
            id: try r.value(prefix + "id"), userID: try r.value(prefix + "user_id"), name: try r.value(prefix + "name"),
            publicKey: try r.value(prefix + "public_key"), createdAt: try r.value(prefix + "created_at"),
            lastUsedAt: try r.optional(prefix + "last_used_at", Date.self), revokedAt: try r.optional(prefix + "revoked_at", Date.self))
    }

    static func session(_ r: PostgresRandomAccessRow) throws -> SessionRecord {
        SessionRecord(
            id: try r.value("id"), tokenHash: try r.value("token_hash"), userID: try r.value("user_id"), deviceID: try r.optional("device_id", String.self),
            kind: try SessionKind(stored: try r.value("kind")), createdAt: try r.value("created_at"), expiresAt: try r.value("expires_at"),
            revokedAt: try r.optional("revoked_at", Date.self), refreshTokenHash: try r.optional("refresh_hash", Data.self))
    }
}

/// Strict column access: a missing column or a NULL where the schema forbids one is
/// ``StoreError`` `corruptRow`, never a default.
extension PostgresRandomAccessRow {
    func value<T: PostgresDecodable>(_ name: String, _: T.Type = T.self) throws -> T {
        guard let value = try optional(name, T.self) else { throw StoreError(.corruptRow, detail: "column \(name)") }
        return value
    }

    func optional<T: PostgresDecodable>(_ name: String, _: T.Type) throws -> T? {
        guard contains(name) else { throw StoreError(.corruptRow, detail: "missing column \(name)") }
        let cell = self[name]
        guard cell.bytes != nil else { return nil }
        do { return try cell.decode(T.self) } catch { throw StoreError(.corruptRow, detail: "column \(name)") }
    }
}
