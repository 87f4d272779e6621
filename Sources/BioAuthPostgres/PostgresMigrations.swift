import BioAuthServer

extension PostgresStore {
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
}
