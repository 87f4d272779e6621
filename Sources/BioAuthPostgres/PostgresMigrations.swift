import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

extension PostgresStore {
    /// Append-only migrations, applied in order under an advisory lock and recorded by version and name in
    /// `bioauth_migrations`. Their names are ``Schema/migrations`` and the result is
    /// ``Schema/tables`` (`SchemaTests`).
    package static let migrations: [(version: Int, name: String, statements: [String])] =
        releasedMigrations
        + Schema.sharedMigrations.enumerated().map {
            (releasedMigrations.count + $0.offset + 1, $0.element.name, $0.element.statements(in: .postgres))
        }

    /// The migrations released in PostgreSQL's own words, before ``Schema/sharedMigrations``.
    static let releasedMigrations: [(version: Int, name: String, statements: [String])] = [
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
            [
                "CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_hash BYTEA NOT NULL UNIQUE, scopes TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, revoked_at TIMESTAMPTZ)"
            ]
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
        // The per-device challenge quota is gone; nothing reads this index, every challenge paid for it.
        (10, "Challenges are not counted per device", ["DROP INDEX challenges_device"]),
        (
            11, "Addresses where a user signed in",
            [
                "CREATE TABLE known_clients (user_id TEXT NOT NULL, client TEXT NOT NULL, last_success_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (user_id, client))",
                "CREATE INDEX known_clients_age ON known_clients (last_success_at)",
            ]
        ),
        (
            12, "Devices remember when and how their key was replaced",
            ["ALTER TABLE devices ADD COLUMN key_replaced_at TIMESTAMPTZ", "ALTER TABLE devices ADD COLUMN key_replaced_by TEXT"]
        ),
        (
            13, "Spent refresh tokens remember when, and their successor sealed under them",
            [
                "ALTER TABLE spent_refresh_tokens ADD COLUMN spent_at TIMESTAMPTZ",
                "ALTER TABLE spent_refresh_tokens ADD COLUMN successor BYTEA",
            ]
        ),
        (
            14, "Enrolment requests count their recovery codes and can end",
            [
                "ALTER TABLE enrolment_requests ADD COLUMN codes_sent INTEGER NOT NULL DEFAULT 0",
                "ALTER TABLE enrolment_requests ADD COLUMN last_code_sent_at TIMESTAMPTZ",
                "ALTER TABLE enrolment_requests ADD COLUMN ended_at TIMESTAMPTZ",
                "ALTER TABLE enrolment_requests ADD COLUMN ending TEXT",
            ]
        ),
        (
            15, "Enrolment requests keep the hash of the text an approval signs, binding code included",
            ["ALTER TABLE enrolment_requests ADD COLUMN approval_hash BYTEA"]
        ),
        (
            16, "User ids the app's backend vouched for",
            ["CREATE TABLE backend_users (id TEXT PRIMARY KEY, claimed_at TIMESTAMPTZ NOT NULL)"]
        ),
        (17, "Devices keep what their key's attestation proved", ["ALTER TABLE devices ADD COLUMN attestation TEXT"]),
        (18, "Devices remember how their enrolment was allowed", ["ALTER TABLE devices ADD COLUMN enrolled_by TEXT"]),
        (19, "Audit rows name the API key that acted", ["ALTER TABLE audit ADD COLUMN api_key_id TEXT"]),
        (20, "Outbox events the receiver kept refusing wait as dead letters", ["ALTER TABLE outbox ADD COLUMN dead_at TIMESTAMPTZ"]),
        // A challenge lives two minutes and a lost one costs a device a new request: its insert and
        // delete need not wait for the write-ahead log's fsync (a crash empties the table).
        (21, "Challenges are not kept through a crash", ["ALTER TABLE challenges SET UNLOGGED"]),
        (
            22, "Only failures are indexed for merging repeats",
            ["DROP INDEX audit_repeat", "CREATE INDEX audit_repeat ON audit (client, kind, at) WHERE \(Schema.mergedAuditKindsCondition)"]
        ),
        (23, "Enrolment requests remember the address that asked", ["ALTER TABLE enrolment_requests ADD COLUMN requester TEXT"]),
        (
            24, "Device removals wait out a delay the owner's devices can cancel",
            [
                "CREATE TABLE device_removals (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, device_id TEXT NOT NULL, session_id TEXT NOT NULL, requester TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, code_expires_at TIMESTAMPTZ NOT NULL, code_hash BYTEA NOT NULL, code_attempts INTEGER NOT NULL, scheduled_at TIMESTAMPTZ, executes_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, ending TEXT)",
                "CREATE INDEX device_removals_user ON device_removals (user_id, created_at)",
                "CREATE INDEX device_removals_due ON device_removals (executes_at) WHERE ended_at IS NULL",
            ]
        ),
    ]

    /// Applies the migrations this database lacks, under the migration lock (instances that start
    /// together migrate once); refuses a database with migrations this binary does not know.
    func migrate() async throws {
        try await transaction { connection in
            // A migration may take longer than a request's bounds (an index on a large table).
            try await connection.query("SET LOCAL statement_timeout = 0", logger: self.logger)
            try await connection.query("SET LOCAL lock_timeout = 0", logger: self.logger)
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: self.logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS bioauth_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)",
                logger: self.logger)
            var applied = Set<Int>(), names: [String] = []
            for try await (version, name) in try await connection.query("SELECT version, name FROM bioauth_migrations", logger: self.logger)
                .decode((Int, String).self)
            {
                applied.insert(version)
                names.append(name)
            }
            let unknown = Schema.unknown(names)
            guard unknown.isEmpty else {
                throw StoreError(
                    .schemaTooNew, detail: "the database has migrations this binary does not know: \(unknown.joined(separator: "; "))")
            }
            for migration in Self.migrations where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger)
                }
                try await connection.query(
                    "INSERT INTO bioauth_migrations (version, name, applied_at) VALUES (\(migration.version), \(migration.name), \(Date()))",
                    logger: self.logger)
                self.logger.notice("applied migration", metadata: ["migration": "\(migration.version) \(migration.name)"])
            }
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
}
