import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

/// A statement every login runs, which PostgreSQL parses and plans once per connection instead of
/// at every execution (PostgresNIO prepares it under its `name` on first use). Each names itself:
/// PostgresNIO's default name, the type's reflected name, is computed at every execution. Each
/// writes its SQL once, as an interpolated query like any other here (``query``), the text not
/// depending on the values, so the prepared text is the query's with sample values — or, for the
/// two every login runs, with numbered parameters (``NumberedLoginStatement``). Each names the
/// columns it returns (no `*`): a migration that adds a column then cannot change the result type
/// of a statement other instances hold prepared.
protocol PreparedLoginStatement: PostgresPreparedStatement where Row == PostgresRow {
    /// The statement with its values (encoding a value may throw).
    var query: PostgresQuery { get throws }
}

extension PreparedLoginStatement {
    func makeBindings() throws -> PostgresBindings { try query.binds }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

/// A login statement whose SQL is written once with numbered parameters (`$1`, a value used twice
/// bound once) and whose values are bound by ``makeBindings()`` in that order: executing it
/// builds no SQL text. The two statements every login runs are written so.
protocol NumberedLoginStatement: PreparedLoginStatement {
    func makeBindings() throws -> PostgresBindings
}

extension NumberedLoginStatement {
    var query: PostgresQuery { get throws { PostgresQuery(unsafeSQL: Self.sql, binds: try makeBindings()) } }
}

extension PreparedLoginStatement {
    /// The statement's text, from this (sample) instance; empty if a sample value failed to encode,
    /// which the database then refuses as a statement.
    var sampleSQL: String { (try? query.sql) ?? "" }
}

extension PostgresStore {
    /// Runs a login statement on `c` and collects its rows: prepared, or as an unnamed statement
    /// when ``Options/preparedStatements`` is off (a pooler that cannot keep them).
    func run<Statement: PreparedLoginStatement>(_ statement: Statement, _ c: PostgresConnection) async throws -> [PostgresRow] {
        guard preparedStatements else { return try await c.query(try statement.query, logger: logger).collect() }
        var rows: [PostgresRow] = []
        for try await row in try await c.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }
}

/// Takes a challenge and reads, in the same statement, its device and the address's failure count.
struct TakeChallengeStatement: PreparedLoginStatement {
    let id: ChallengeID
    let lockout: LockoutQuery

    static let name = "bioauth_take_challenge"
    static let sql = TakeChallengeStatement(id: ChallengeID(bytes: Data()), lockout: .sample).sampleSQL

    var query: PostgresQuery { get throws { try .challengeWithDevice(id, lockout, taking: true) } }
}

/// Reads a challenge without taking it, with its device and the address's failure count: the rows
/// a decision is made on before the statement that takes the challenge (``FinishDeviceLogin``).
struct PeekChallengeStatement: PreparedLoginStatement {
    let id: ChallengeID
    let lockout: LockoutQuery

    static let name = "bioauth_peek_challenge"
    static let sql = PeekChallengeStatement(id: ChallengeID(bytes: Data()), lockout: .sample).sampleSQL

    var query: PostgresQuery { get throws { try .challengeWithDevice(id, lockout, taking: false) } }
}

extension LockoutQuery {
    /// A query of no address, for the prepared statements' sample text.
    static let sample = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "", clientLimit: 0)
}

extension PostgresQuery {
    /// The challenge (taken: deleted, returned; or only read), its device's columns prefixed `d_`,
    /// and the address's failure count in `client_count`.
    static func challengeWithDevice(_ id: ChallengeID, _ lockout: LockoutQuery, taking: Bool) throws -> PostgresQuery {
        try """
        WITH taken AS (\(unescaped: taking ? "DELETE FROM challenges" : "SELECT * FROM challenges") WHERE id = \(id.bytes)\(unescaped: taking ? " RETURNING *" : ""))
        SELECT taken.id, taken.purpose, taken.rp_id, taken.user_id, taken.device_id, taken.nonce, taken.created_at, taken.expires_at,
               taken.operation_hash, taken.registration_key, taken.device_name, taken.replaces_device, taken.session_id, taken.enrolment_request_id,
               taken.user_handle,
               (SELECT count FROM counters WHERE window_start = \(lockout.windowStart) AND key = \(FailureSubject.client(lockout.client).storageKey)) AS client_count,
               \(unescaped: deviceColumns)
        FROM taken LEFT JOIN devices d ON d.id = taken.device_id
        """
    }

    /// The columns of a device row `d`, prefixed `d_` (``DeviceRecord/init(row:prefix:)``).
    static let deviceColumns = """
        d.id AS d_id, d.user_id AS d_user_id, d.name AS d_name, d.public_key AS d_public_key, d.created_at AS d_created_at, \
        d.last_used_at AS d_last_used_at, d.revoked_at AS d_revoked_at, d.key_replaced_at AS d_key_replaced_at, \
        d.key_replaced_by AS d_key_replaced_by, d.attestation AS d_attestation, d.enrolled_by AS d_enrolled_by, d.passkey AS d_passkey, \
        d.dpop_jkt AS d_dpop_jkt
        """
}

/// The failure count of the address a lockout query names (no row: none).
struct ClientFailuresStatement: PreparedLoginStatement {
    let lockout: LockoutQuery

    static let name = "bioauth_client_failures"
    static let sql = ClientFailuresStatement(lockout: .sample).sampleSQL

    var query: PostgresQuery { get throws { try PostgresQuery(Reads.clientFailures(lockout)) } }
}

/// Stores a challenge.
struct InsertChallengeStatement: PreparedLoginStatement {
    let challenge: ChallengeRecord

    static let name = "bioauth_insert_challenge"
    static let sql = InsertChallengeStatement(
        challenge: ChallengeRecord(
            id: ChallengeID(bytes: Data()), binding: .login, relyingPartyID: "", userID: UserID(""), deviceID: DeviceID(""), nonce: Data(),
            createdAt: Date(timeIntervalSince1970: 0),
            expiresAt: Date(timeIntervalSince1970: 0))
    ).sampleSQL

    var query: PostgresQuery {
        get throws {
            let ch = challenge, columns = challenge.binding.columns
            return try """
            INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at, operation_hash, registration_key, device_name, replaces_device, session_id, enrolment_request_id, user_handle)
            VALUES (\(ch.id.bytes), \(Int16(ch.binding.storedPurpose)), \(ch.relyingPartyID), \(ch.userID), \(ch.deviceID), \(ch.nonce), \(ch.createdAt), \(ch.expiresAt),
                    \(columns.operationHash), \(columns.publicKey), \(columns.deviceName), \(columns.replacing), \(ch.sessionID), \(ch.enrolmentRequestID), \(columns.userHandle))
            """
        }
    }
}

/// Stores a challenge if the address is below its failure limit (``LockoutQuery/isLockedOut(clientCount:)``
/// in SQL): ``WritePlan/issueChallenge(_:lockout:)`` in one round trip. Stored, it returns one row:
/// the columns of the challenge's device (``PostgresQuery/deviceColumns``, all NULL if there is no
/// such device), which ``PostgresIssuedChallenges`` keeps for the login; no row: refused.
/// (A NULL bind has no type, and a selected one would be read as text: the nullable non-text
/// values are cast.)
struct IssueChallengeStatement: NumberedLoginStatement {
    let challenge: ChallengeRecord
    let lockout: LockoutQuery

    /// The plan's guard and insert, or nil for any other plan.
    init?(_ plan: WritePlan) {
        guard plan.guards.count == 1, case .belowFailureLimits(let lockout) = plan.guards[0], plan.mutations.count == 1,
            case .insertChallenge(let challenge) = plan.mutations[0]
        else { return nil }
        (self.challenge, self.lockout) = (challenge, lockout)
    }

    static let name = "bioauth_issue_challenge"
    static let sql = """
        WITH stored AS (
          INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at, operation_hash, registration_key, device_name, replaces_device, session_id, enrolment_request_id, user_handle)
          SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9::bytea, $10::bytea, $11::text, $12::boolean, $13::text, $14::text, $18::bytea
          WHERE coalesce((SELECT count FROM counters WHERE window_start = $15 AND key = $16), 0) < $17
          RETURNING device_id)
        SELECT \(PostgresQuery.deviceColumns) FROM stored LEFT JOIN devices d ON d.id = stored.device_id
        """

    func makeBindings() throws -> PostgresBindings {
        let ch = challenge, columns = challenge.binding.columns
        var binds = PostgresBindings(capacity: 18)
        try binds.append(ch.id.bytes)
        binds.append(Int16(ch.binding.storedPurpose))
        binds.append(ch.relyingPartyID)
        binds.append(ch.userID)
        binds.append(ch.deviceID)
        try binds.append(ch.nonce)
        binds.append(ch.createdAt)
        binds.append(ch.expiresAt)
        try binds.append(columns.operationHash)
        try binds.append(columns.publicKey)
        binds.append(columns.deviceName)
        binds.append(columns.replacing)
        binds.append(ch.sessionID)
        binds.append(ch.enrolmentRequestID)
        binds.append(lockout.windowStart)
        binds.append(FailureSubject.client(lockout.client).storageKey)
        binds.append(lockout.clientLimit)
        try binds.append(columns.userHandle)
        return binds
    }
}

/// A device login finished in one statement and one commit, outside any transaction of ours: the
/// challenge is taken if the address is still below its failure limit (``LockoutQuery/isLockedOut(clientCount:)``
/// in SQL) and the device, as the statement sees it, is active with the key that verified; only
/// then are the login's writes made — the session, its device's last use, the known address (its
/// time moved only when older than ``WritePlan/knownClientRefresh``), the audit row — behind the
/// plan's one guard (``WritePlan/Guard/activeDeviceKey(id:userID:publicKey:)``), which is the
/// device update's condition: it locks the row and, if a revocation or re-key holds it, re-reads
/// it once that commits. Every insert selects from that update, so a refused guard writes nothing
/// but the challenge's deletion. It answers `taken` and `inserted` (0 or 1 each); not taken, the
/// login is decided again on the rows as they are (a key revoked or replaced before the statement
/// is then a counted failure, as if it had been read so).
///
/// Recognised from the plan decided on the peeked or remembered rows (``WritePlan/login(_:from:clearing:rehashed:audit:)``
/// for a device session from a known address, its audit event not merging and not queued, behind
/// that one guard); nil for any other. (A NULL bind has no type, and a selected one would be read
/// as text: the nullable non-text values are cast.)
struct FinishDeviceLogin: NumberedLoginStatement {
    let challengeID: ChallengeID
    let lockout: LockoutQuery
    let refusal: WritePlan.Guard
    let session: SessionRecord
    let device: DeviceID
    let publicKey: Data
    let client: String
    let at: Date
    let audit: AuditEvent

    init?(challengeID: ChallengeID, lockout: LockoutQuery, plan: WritePlan) {
        guard plan.guards.count == 1, case .activeDeviceKey(let device, let user, let publicKey) = plan.guards[0] else { return nil }
        let mutations = plan.mutations
        guard mutations.count == 3, case .insertSession(let session, let touched?) = mutations[0], touched == device,
            session.userID == user,
            case .rememberClient(user, let client, let at) = mutations[1], case .appendAudit(let audit) = mutations[2], !audit.aggregates
        else { return nil }
        (self.challengeID, self.lockout, self.refusal) = (challengeID, lockout, plan.guards[0])
        (self.session, self.device, self.publicKey, self.client, self.at, self.audit) = (session, device, publicKey, client, at, audit)
    }

    static let name = "bioauth_finish_device_login"
    static let sql = """
        WITH taken AS (
          DELETE FROM challenges WHERE id = $1
            AND coalesce((SELECT count FROM counters WHERE window_start = $2 AND key = $3), 0) < $4
            AND EXISTS (SELECT 1 FROM devices WHERE id = $5 AND user_id = $6 AND revoked_at IS NULL AND public_key = $7)
          RETURNING id),
        touched AS (
          UPDATE devices SET last_used_at = $8
          WHERE id = $5 AND user_id = $6 AND revoked_at IS NULL AND public_key = $7 AND EXISTS (SELECT 1 FROM taken)
          RETURNING id),
        known AS (
          INSERT INTO known_clients (user_id, client, last_success_at) SELECT $6, $9, $10 FROM touched
          ON CONFLICT (user_id, client) DO UPDATE SET last_success_at = EXCLUDED.last_success_at
            WHERE known_clients.last_success_at < $11),
        audited AS (
          INSERT INTO audit (at, kind, user_id, device_id, reason, client, request_id, api_key_id)
          SELECT $12, $13, $14, $15, $16, $17, $18, $19 FROM touched),
        inserted AS (
          INSERT INTO sessions (token_hash, id, user_id, device_id, kind, created_at, expires_at, revoked_at, refresh_hash, dpop_jkt)
          SELECT $20, $21, $6, $22, $23, $8, $24, $25::timestamptz, $26::bytea, $27::text
          FROM touched RETURNING 1)
        SELECT (SELECT count(*) FROM taken)::int AS taken, (SELECT count(*) FROM inserted)::int AS inserted
        """

    func makeBindings() throws -> PostgresBindings {
        let (s, e) = (session, audit)
        var binds = PostgresBindings(capacity: 27)
        try binds.append(challengeID.bytes)  // $1
        binds.append(lockout.windowStart)
        binds.append(FailureSubject.client(lockout.client).storageKey)
        binds.append(lockout.clientLimit)
        binds.append(device)  // $5
        binds.append(s.userID)
        try binds.append(publicKey)
        binds.append(s.createdAt)  // $8: the device's last use and the session's creation
        binds.append(client)
        binds.append(at)  // $10
        binds.append(at.addingTimeInterval(-WritePlan.knownClientRefresh))
        binds.append(e.at)
        binds.append(e.kind)
        binds.append(e.userID)
        binds.append(e.deviceID)  // $15
        binds.append(e.reason?.description)
        binds.append(e.clientAddress)
        binds.append(e.requestID?.rawValue)
        binds.append(e.apiKeyID)
        binds.append(s.tokenHash)  // $20
        binds.append(s.id)
        binds.append(s.deviceID)
        binds.append(s.kind.rawValue)
        binds.append(s.expiresAt)
        binds.append(s.revokedAt)  // $25
        binds.append(s.refreshTokenHash)
        binds.append(s.dpopThumbprint)  // $27
        return binds
    }
}
