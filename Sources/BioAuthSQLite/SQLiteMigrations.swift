import BioAuthSQL
import BioAuthServer
import Foundation

extension SQLiteStore {
    /// Every migration, applied in order; each is recorded by name in `migrations`. Their names
    /// are ``Schema/migrations`` and the result is ``Schema/tables`` (`SchemaTests`).
    package static let migrations: [(name: String, statements: [String])] =
        releasedMigrations + Schema.sharedMigrations.map { ($0.name, $0.statements(in: .sqlite)) }

    /// The migrations released in SQLite's own words, before ``Schema/sharedMigrations``.
    static let releasedMigrations: [(name: String, statements: [String])] = [
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
        ),
        (
            "Registration challenges say whether they replace a device's key",
            [
                "ALTER TABLE challenges ADD COLUMN replaces_device INTEGER",
                "UPDATE challenges SET replaces_device = 0 WHERE purpose = 1",
            ]
        ),
        (
            "Approvals remember the session that obtained them",
            [
                "ALTER TABLE approvals ADD COLUMN session_id TEXT",
                "CREATE INDEX approvals_session ON approvals (session_id)",
                "CREATE INDEX approvals_device ON approvals (device_id)",
            ]
        ),
        (
            "Repeated failures are one audit row with a count",
            [
                "ALTER TABLE audit ADD COLUMN count INTEGER NOT NULL DEFAULT 1",
                "CREATE INDEX audit_repeat ON audit (client, kind, at)",
                "CREATE INDEX audit_at ON audit (at)",
            ]
        ),
        (
            "Challenges remember the session that asked for them",
            ["ALTER TABLE challenges ADD COLUMN session_id TEXT"]
        ),
        (
            "Enrolment requests wait for an approval or a recovery code",
            [
                "CREATE TABLE enrolment_requests (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, device_id TEXT NOT NULL, name TEXT NOT NULL, public_key BLOB NOT NULL, replaces_device INTEGER NOT NULL, session_id TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, approved_at REAL, approved_by_device TEXT, recovery_code_hash BLOB, recovery_attempts INTEGER NOT NULL)",
                "CREATE INDEX enrolment_requests_user ON enrolment_requests (user_id, created_at)",
                "CREATE INDEX enrolment_requests_expiry ON enrolment_requests (expires_at)",
                "ALTER TABLE challenges ADD COLUMN enrolment_request_id TEXT",
            ]
        ),
        (
            "API keys for the backend API",
            [
                "CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_hash BLOB NOT NULL UNIQUE, scopes TEXT NOT NULL, created_at REAL NOT NULL, revoked_at REAL)"
            ]
        ),
        (
            "Access tokens: signing keys, refresh tokens",
            [
                "CREATE TABLE signing_keys (id TEXT PRIMARY KEY, private_key BLOB NOT NULL, created_at REAL NOT NULL)",
                "ALTER TABLE sessions ADD COLUMN refresh_hash BLOB",
                "CREATE UNIQUE INDEX sessions_refresh ON sessions (refresh_hash)",
                "CREATE TABLE spent_refresh_tokens (token_hash BLOB PRIMARY KEY, session_id TEXT NOT NULL)",
                "CREATE INDEX spent_refresh_tokens_session ON spent_refresh_tokens (session_id)",
            ]
        ),
        (
            "The event outbox",
            [
                "CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, kind TEXT NOT NULL, user_id TEXT, device_id TEXT, reason TEXT, attempts INTEGER NOT NULL, next_attempt_at REAL NOT NULL, lease_until REAL)",
                "CREATE INDEX outbox_due ON outbox (next_attempt_at)",
            ]
        ),
        // The per-device challenge quota is gone; nothing reads this index, every challenge paid for it.
        ("Challenges are not counted per device", ["DROP INDEX challenges_device"]),
        (
            "Addresses where a user signed in",
            [
                "CREATE TABLE known_clients (user_id TEXT NOT NULL, client TEXT NOT NULL, last_success_at REAL NOT NULL, PRIMARY KEY (user_id, client))",
                "CREATE INDEX known_clients_age ON known_clients (last_success_at)",
            ]
        ),
        (
            "Devices remember when and how their key was replaced",
            ["ALTER TABLE devices ADD COLUMN key_replaced_at REAL", "ALTER TABLE devices ADD COLUMN key_replaced_by TEXT"]
        ),
        (
            "Spent refresh tokens remember when, and their successor sealed under them",
            ["ALTER TABLE spent_refresh_tokens ADD COLUMN spent_at REAL", "ALTER TABLE spent_refresh_tokens ADD COLUMN successor BLOB"]
        ),
        (
            "Enrolment requests count their recovery codes and can end",
            [
                "ALTER TABLE enrolment_requests ADD COLUMN codes_sent INTEGER NOT NULL DEFAULT 0",
                "ALTER TABLE enrolment_requests ADD COLUMN last_code_sent_at REAL",
                "ALTER TABLE enrolment_requests ADD COLUMN ended_at REAL",
                "ALTER TABLE enrolment_requests ADD COLUMN ending TEXT",
            ]
        ),
        (
            "Enrolment requests keep the hash of the text an approval signs, binding code included",
            ["ALTER TABLE enrolment_requests ADD COLUMN approval_hash BLOB"]
        ),
        ("User ids the app's backend vouched for", ["CREATE TABLE backend_users (id TEXT PRIMARY KEY, claimed_at REAL NOT NULL)"]),
        ("Devices keep what their key's attestation proved", ["ALTER TABLE devices ADD COLUMN attestation TEXT"]),
        ("Devices remember how their enrolment was allowed", ["ALTER TABLE devices ADD COLUMN enrolled_by TEXT"]),
        ("Audit rows name the API key that acted", ["ALTER TABLE audit ADD COLUMN api_key_id TEXT"]),
        ("Outbox events the receiver kept refusing wait as dead letters", ["ALTER TABLE outbox ADD COLUMN dead_at REAL"]),
        // SQLite has no unlogged table: a commit whose only writes are challenges skips its fsync
        // instead (SQLiteWriter, WritePlan.isEphemeral). Recorded so both stores list the same migrations.
        ("Challenges are not kept through a crash", []),
        (
            "Only failures are indexed for merging repeats",
            ["DROP INDEX audit_repeat", "CREATE INDEX audit_repeat ON audit (client, kind, at) WHERE \(Schema.mergedAuditKindsCondition)"]
        ),
        ("Enrolment requests remember the address that asked", ["ALTER TABLE enrolment_requests ADD COLUMN requester TEXT"]),
        (
            "Device removals wait out a delay the owner's devices can cancel",
            [
                "CREATE TABLE device_removals (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, device_id TEXT NOT NULL, session_id TEXT NOT NULL, requester TEXT NOT NULL, created_at REAL NOT NULL, code_expires_at REAL NOT NULL, code_hash BLOB NOT NULL, code_attempts INTEGER NOT NULL, scheduled_at REAL, executes_at REAL, ended_at REAL, ending TEXT)",
                "CREATE INDEX device_removals_user ON device_removals (user_id, created_at)",
                "CREATE INDEX device_removals_due ON device_removals (executes_at) WHERE ended_at IS NULL",
            ]
        ),
    ]
}
