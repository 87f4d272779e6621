import BioAuthServer
import Foundation

/// The database both SQL stores keep, described once. Each store writes its own dialect's
/// statements for it; `SchemaTests` holds both stores' migrated databases to this description and
/// their migration lists to ``migrations``.
package enum Schema {
    /// Every migration by name, in the order applied: the released histories, then
    /// ``sharedMigrations``. A database that records a migration not in this list was written by a
    /// newer BioAuth, and the stores refuse to open it (``StoreError/Code/schemaTooNew``).
    package static var migrations: [String] { releasedMigrations + sharedMigrations.map(\.name) }

    /// The migrations each store wrote in its own dialect, by name. Released history: a name never
    /// changes and nothing is appended here.
    package static let releasedMigrations: [String] = [
        "Create core tables",
        "Registration challenges say whether they replace a device's key",
        "Approvals remember the session that obtained them",
        "Repeated failures are one audit row with a count",
        "Challenges remember the session that asked for them",
        "Enrolment requests wait for an approval or a recovery code",
        "API keys for the backend API",
        "Access tokens: signing keys, refresh tokens",
        "The event outbox",
        "Challenges are not counted per device",
        "Addresses where a user signed in",
        "Devices remember when and how their key was replaced",
        "Spent refresh tokens remember when, and their successor sealed under them",
        "Enrolment requests count their recovery codes and can end",
        "Enrolment requests keep the hash of the text an approval signs, binding code included",
        "User ids the app's backend vouched for",
        "Devices keep what their key's attestation proved",
        "Devices remember how their enrolment was allowed",
        "Audit rows name the API key that acted",
        "Outbox events the receiver kept refusing wait as dead letters",
        "Challenges are not kept through a crash",
        "Only failures are indexed for merging repeats",
        "Enrolment requests remember the address that asked",
        "Device removals wait out a delay the owner's devices can cancel",
    ]

    /// The migrations after the released histories, each written once (``SchemaChange``) and
    /// applied by both stores in their dialect. Append only. A new column is one line in
    /// ``tables``, one migration here, and the statements that use it.
    package static let sharedMigrations: [SchemaMigration] = [
        SchemaMigration("Devices may be passkeys", [.addColumn("devices", .init("passkey", .text, nullable: true))]),
        SchemaMigration(
            "Enrolment requests may carry a passkey waiting for its approval",
            [.addColumn("enrolment_requests", .init("passkey", .text, nullable: true))]),
        SchemaMigration(
            "Sign-ins started on another screen wait for a phone",
            [
                .createTable(crossDeviceRequests),
                .createIndex(
                    name: "cross_device_requests_user", table: "cross_device_requests", columns: ["user_id", "created_at"], where: nil),
            ]),
        SchemaMigration(
            "DPoP keys bind devices and sessions; proofs are remembered for their window",
            [
                .addColumn("devices", .init("dpop_jkt", .text, nullable: true)),
                .addColumn("sessions", .init("dpop_jkt", .text, nullable: true)),
                .createTable(dpopProofs),
                .createIndex(name: "dpop_proofs_expiry", table: "dpop_proofs", columns: ["expires_at"], where: nil),
            ]),
        SchemaMigration(
            "A screen a phone let in before is remembered by its token",
            [.addColumn("cross_device_requests", .init("screen_key", .text, nullable: true))]),
        SchemaMigration(
            "Passkey registrations name a random user handle",
            [.addColumn("challenges", .init("user_handle", .bytes, nullable: true))]),
    ]

    static let dpopProofs = Table("dpop_proofs", [.init("proof_hash", .bytes), .init("expires_at", .date)])

    static let crossDeviceRequests = Table(
        "cross_device_requests",
        [
            .init("id", .text), .init("user_id", .text), .init("requester", .text), .init("user_agent", .text),
            .init("created_at", .date), .init("expires_at", .date), .init("approval_hash", .bytes), .init("poll_token_hash", .bytes),
            .init("announced", .boolean), .init("approved_at", .date, nullable: true), .init("approved_by_device", .text, nullable: true),
            .init("ended_at", .date, nullable: true), .init("ending", .text, nullable: true),
        ])

    /// The kinds whose repeats merge into one audit row (``AuditEvent/aggregates``) as the index
    /// `audit_repeat` covers them since "Only failures are indexed for merging repeats": a
    /// success's row costs no entry in an index only the merging reads. The merging query names
    /// them in the same words, so the database can use the partial index. `SchemaTests` holds this
    /// to `AuditKind.failures`: a new failure kind needs a migration that rebuilds the index.
    package static let mergedAuditKinds = [
        "apikey.rejected",
        "approval.rejected",
        "backend.refused",
        "challenge.refused",
        "device.enrollment.failed",
        "enrolment.recovery.rejected",
        "lockout",
        "login.failed",
        "password.login.failed",
        "primary.login.failed",
        "rate.limited",
        "session.rejected",
        "stepup.failed",
        "token.refresh.rejected",
    ]

    /// `kind IN ('…', …)` over ``mergedAuditKinds``: the partial index's predicate and the merging
    /// query's condition, word for word (the names are fixed ASCII, never user input).
    package static var mergedAuditKindsCondition: String {
        "kind IN (\(mergedAuditKinds.map { "'\($0)'" }.joined(separator: ", ")))"
    }

    package enum ColumnType: Sendable, Hashable {
        case text, bytes, date, integer, smallInteger, boolean
        /// A generated row number.
        case serial
    }

    package struct Column: Sendable, Hashable {
        package var name: String
        package var type: ColumnType
        package var nullable: Bool

        package init(_ name: String, _ type: ColumnType, nullable: Bool = false) {
            self.name = name
            self.type = type
            self.nullable = nullable
        }
    }

    package struct Table: Sendable, Hashable {
        package var name: String
        package var columns: [Column]

        package init(_ name: String, _ columns: [Column]) {
            self.name = name
            self.columns = columns
        }
    }

    /// Every table after the last migration, by name, columns in order.
    package static let tables: [Table] = [
        Table(
            "api_keys",
            [
                .init("id", .text), .init("name", .text), .init("secret_hash", .bytes), .init("scopes", .text), .init("created_at", .date),
                .init("revoked_at", .date, nullable: true),
            ]),
        Table(
            "approvals",
            [
                .init("token_hash", .bytes), .init("user_id", .text), .init("device_id", .text), .init("operation_hash", .bytes),
                .init("created_at", .date),
                .init("expires_at", .date), .init("consumed_at", .date, nullable: true), .init("session_id", .text, nullable: true),
            ]),
        Table(
            "audit",
            [
                .init("seq", .serial), .init("at", .date), .init("kind", .text), .init("user_id", .text, nullable: true),
                .init("device_id", .text, nullable: true),
                .init("reason", .text, nullable: true), .init("client", .text, nullable: true), .init("request_id", .text, nullable: true),
                .init("count", .integer),
                .init("api_key_id", .text, nullable: true),
            ]),
        Table("backend_users", [.init("id", .text), .init("claimed_at", .date)]),
        Table(
            "challenges",
            [
                .init("id", .bytes), .init("purpose", .smallInteger), .init("rp_id", .text), .init("user_id", .text),
                .init("device_id", .text),
                .init("nonce", .bytes), .init("created_at", .date), .init("expires_at", .date),
                .init("operation_hash", .bytes, nullable: true),
                .init("registration_key", .bytes, nullable: true), .init("device_name", .text, nullable: true),
                .init("replaces_device", .boolean, nullable: true),
                .init("session_id", .text, nullable: true), .init("enrolment_request_id", .text, nullable: true),
                .init("user_handle", .bytes, nullable: true),
            ]),
        Table("counters", [.init("key", .text), .init("window_start", .date), .init("count", .integer)]),
        Table(crossDeviceRequests.name, crossDeviceRequests.columns + [.init("screen_key", .text, nullable: true)]),
        Table(
            "device_removals",
            [
                .init("id", .text), .init("user_id", .text), .init("device_id", .text), .init("session_id", .text),
                .init("requester", .text),
                .init("created_at", .date), .init("code_expires_at", .date), .init("code_hash", .bytes), .init("code_attempts", .integer),
                .init("scheduled_at", .date, nullable: true), .init("executes_at", .date, nullable: true),
                .init("ended_at", .date, nullable: true),
                .init("ending", .text, nullable: true),
            ]),
        Table(
            "devices",
            [
                .init("id", .text), .init("user_id", .text), .init("name", .text), .init("public_key", .bytes), .init("created_at", .date),
                .init("last_used_at", .date, nullable: true), .init("revoked_at", .date, nullable: true),
                .init("key_replaced_at", .date, nullable: true),
                .init("key_replaced_by", .text, nullable: true), .init("attestation", .text, nullable: true),
                .init("enrolled_by", .text, nullable: true), .init("passkey", .text, nullable: true),
                .init("dpop_jkt", .text, nullable: true),
            ]),
        dpopProofs,
        Table(
            "enrolment_requests",
            [
                .init("id", .text), .init("user_id", .text), .init("device_id", .text), .init("name", .text), .init("public_key", .bytes),
                .init("replaces_device", .boolean), .init("session_id", .text), .init("created_at", .date), .init("expires_at", .date),
                .init("approved_at", .date, nullable: true), .init("approved_by_device", .text, nullable: true),
                .init("recovery_code_hash", .bytes, nullable: true),
                .init("recovery_attempts", .integer), .init("codes_sent", .integer), .init("last_code_sent_at", .date, nullable: true),
                .init("ended_at", .date, nullable: true), .init("ending", .text, nullable: true),
                .init("approval_hash", .bytes, nullable: true),
                .init("requester", .text, nullable: true), .init("passkey", .text, nullable: true),
            ]),
        Table("known_clients", [.init("user_id", .text), .init("client", .text), .init("last_success_at", .date)]),
        Table(
            "outbox",
            [
                .init("id", .serial), .init("at", .date), .init("kind", .text), .init("user_id", .text, nullable: true),
                .init("device_id", .text, nullable: true),
                .init("reason", .text, nullable: true), .init("attempts", .integer), .init("next_attempt_at", .date),
                .init("lease_until", .date, nullable: true),
                .init("dead_at", .date, nullable: true),
            ]),
        Table(
            "sessions",
            [
                .init("token_hash", .bytes), .init("id", .text), .init("user_id", .text), .init("device_id", .text, nullable: true),
                .init("kind", .text),
                .init("created_at", .date), .init("expires_at", .date), .init("revoked_at", .date, nullable: true),
                .init("refresh_hash", .bytes, nullable: true), .init("dpop_jkt", .text, nullable: true),
            ]),
        Table("signing_keys", [.init("id", .text), .init("private_key", .bytes), .init("created_at", .date)]),
        Table(
            "spent_refresh_tokens",
            [
                .init("token_hash", .bytes), .init("session_id", .text), .init("spent_at", .date, nullable: true),
                .init("successor", .bytes, nullable: true),
            ]),
        Table(
            "users",
            [
                .init("id", .text), .init("password_salt", .bytes), .init("password_rounds", .integer), .init("password_hash", .bytes),
                .init("created_at", .date),
            ]),
    ]

    /// A column as a database declares it, in the store's own type names (`SchemaTests`).
    package struct DeclaredColumn: Sendable, Hashable {
        package var table: String
        package var column: String
        package var type: String
        package var nullable: Bool

        package init(table: String, column: String, type: String, nullable: Bool) {
            self.table = table
            self.column = column
            self.type = type
            self.nullable = nullable
        }
    }

    /// The columns ``tables`` describes, in a dialect's type names.
    package static func declared(typeName: (ColumnType) -> String) -> [DeclaredColumn] {
        tables.flatMap { table in
            table.columns.map { DeclaredColumn(table: table.name, column: $0.name, type: typeName($0.type), nullable: $0.nullable) }
        }
    }

    /// The migrations a database records beyond what this binary knows; empty when it may be opened.
    package static func unknown(_ applied: some Sequence<String>) -> [String] {
        applied.filter { !migrations.contains($0) }.sorted()
    }
}
