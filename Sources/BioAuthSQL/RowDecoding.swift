import BioAuthCore
import BioAuthServer
import Foundation

/// A result row of a SQL store, read by column name. Each dialect adapts its own row type; the
/// record decoders below are written once for both. A missing column, or a value of the wrong
/// type, throws ``StoreError`` `corruptRow`; the optional readers return nil only for NULL.
package protocol StoredRow {
    func optionalString(_ column: String) throws(StoreError) -> String?
    func optionalData(_ column: String) throws(StoreError) -> Data?
    func optionalInt(_ column: String) throws(StoreError) -> Int?
    func optionalDate(_ column: String) throws(StoreError) -> Date?
    func optionalBool(_ column: String) throws(StoreError) -> Bool?
}

extension StoredRow {
    package func string(_ column: String) throws(StoreError) -> String { try required(column, optionalString(column)) }
    package func data(_ column: String) throws(StoreError) -> Data { try required(column, optionalData(column)) }
    package func int(_ column: String) throws(StoreError) -> Int { try required(column, optionalInt(column)) }
    package func date(_ column: String) throws(StoreError) -> Date { try required(column, optionalDate(column)) }
    package func bool(_ column: String) throws(StoreError) -> Bool { try required(column, optionalBool(column)) }
    package func id<Record>(_ column: String) throws(StoreError) -> RecordID<Record> { RecordID(try string(column)) }
    package func optionalID<Record>(_ column: String) throws(StoreError) -> RecordID<Record>? {
        try optionalString(column).map { RecordID($0) }
    }
    package func tokenHash(_ column: String) throws(StoreError) -> TokenHash { TokenHash(digest: try data(column)) }
    package func optionalTokenHash(_ column: String) throws(StoreError) -> TokenHash? {
        try optionalData(column).map(TokenHash.init(digest:))
    }

    private func required<T>(_ column: String, _ value: T?) throws(StoreError) -> T {
        guard let value else { throw StoreError(.corruptRow, detail: "column \(column)") }
        return value
    }
}

// One decoder per record, from the columns `Schema` describes.

extension UserRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        self.init(
            id: try r.id("id"), passwordSalt: try r.data("password_salt"), passwordRounds: try r.int("password_rounds"),
            passwordHash: try r.data("password_hash"), createdAt: try r.date("created_at"))
    }
}

extension ChallengeRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        let binding = try ChallengeRecord.Binding(
            purpose: try r.int("purpose"), publicKey: try r.optionalData("registration_key"),
            deviceName: try r.optionalString("device_name"),
            replacing: try r.optionalBool("replaces_device"), operationHash: try r.optionalData("operation_hash"),
            userHandle: try r.optionalData("user_handle"))
        self.init(
            id: ChallengeID(bytes: try r.data("id")), binding: binding, relyingPartyID: try r.string("rp_id"), userID: try r.id("user_id"),
            deviceID: try r.id("device_id"),
            nonce: try r.data("nonce"), createdAt: try r.date("created_at"), expiresAt: try r.date("expires_at"),
            sessionID: try r.optionalID("session_id"),
            enrolmentRequestID: try r.optionalID("enrolment_request_id"))
    }
}

extension ApprovalRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        self.init(
            tokenHash: try r.tokenHash("token_hash"), userID: try r.id("user_id"), deviceID: try r.id("device_id"),
            operationHash: try r.data("operation_hash"),
            createdAt: try r.date("created_at"), expiresAt: try r.date("expires_at"), consumedAt: try r.optionalDate("consumed_at"),
            sessionID: try r.optionalID("session_id"))
    }
}

extension ApiKeyRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        guard let scopes = ApiKeyRecord.scopes(stored: try r.string("scopes")) else {
            throw StoreError(.corruptRow, detail: "api_keys.scopes")
        }
        self.init(
            id: try r.id("id"), name: try r.string("name"), secretHash: try r.tokenHash("secret_hash"), scopes: scopes,
            createdAt: try r.date("created_at"),
            revokedAt: try r.optionalDate("revoked_at"))
    }
}

extension EnrolmentRequestRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        self.init(
            id: try r.id("id"), userID: try r.id("user_id"), deviceID: try r.id("device_id"), name: try r.string("name"),
            publicKey: try r.data("public_key"),
            replacing: try r.bool("replaces_device"), sessionID: try r.id("session_id"), createdAt: try r.date("created_at"),
            expiresAt: try r.date("expires_at"), approvedAt: try r.optionalDate("approved_at"),
            approvedByDevice: try r.optionalID("approved_by_device"),
            recoveryCodeHash: try r.optionalTokenHash("recovery_code_hash"), recoveryAttempts: try r.int("recovery_attempts"),
            codesSent: try r.int("codes_sent"),
            lastCodeSentAt: try r.optionalDate("last_code_sent_at"), endedAt: try r.optionalDate("ended_at"),
            ending: try EnrolmentRequestEnding(stored: try r.optionalString("ending")),
            approvalHash: try r.optionalTokenHash("approval_hash"),
            requester: try r.optionalString("requester"), passkey: try PasskeyCredential(stored: try r.optionalString("passkey")))
    }
}

extension DeviceRemovalRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        let ending = try r.optionalString("ending")
        guard ending.map({ DeviceRemovalEnding(rawValue: $0) != nil }) ?? true else {
            throw StoreError(.corruptRow, detail: "device_removals.ending")
        }
        self.init(
            id: try r.id("id"), userID: try r.id("user_id"), deviceID: try r.id("device_id"), sessionID: try r.id("session_id"),
            requester: try r.string("requester"),
            createdAt: try r.date("created_at"), codeExpiresAt: try r.date("code_expires_at"), codeHash: try r.tokenHash("code_hash"),
            codeAttempts: try r.int("code_attempts"), scheduledAt: try r.optionalDate("scheduled_at"),
            executesAt: try r.optionalDate("executes_at"),
            endedAt: try r.optionalDate("ended_at"), ending: ending.flatMap(DeviceRemovalEnding.init(rawValue:)))
    }
}

extension CrossDeviceRequestRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        let ending = try r.optionalString("ending")
        guard ending.map({ CrossDeviceEnding(rawValue: $0) != nil }) ?? true else {
            throw StoreError(.corruptRow, detail: "cross_device_requests.ending")
        }
        self.init(
            id: try r.id("id"), userID: try r.id("user_id"), requester: try r.string("requester"),
            screen: ScreenLabel(stored: try r.string("user_agent")),
            createdAt: try r.date("created_at"), expiresAt: try r.date("expires_at"), approvalHash: try r.tokenHash("approval_hash"),
            pollTokenHash: try r.tokenHash("poll_token_hash"), announced: try r.bool("announced"),
            approvedAt: try r.optionalDate("approved_at"), approvedByDevice: try r.optionalID("approved_by_device"),
            endedAt: try r.optionalDate("ended_at"), ending: ending.flatMap(CrossDeviceEnding.init(rawValue:)),
            screenKey: try r.optionalString("screen_key"))
    }
}

extension DeviceRecord {
    /// `prefix` names the columns of a joined device row (`d_id`, …).
    package init(row r: some StoredRow, prefix: String = "") throws(StoreError) {
        self.init(
            id: try r.id(prefix + "id"), userID: try r.id(prefix + "user_id"), name: try r.string(prefix + "name"),
            publicKey: try r.data(prefix + "public_key"),
            createdAt: try r.date(prefix + "created_at"), lastUsedAt: try r.optionalDate(prefix + "last_used_at"),
            revokedAt: try r.optionalDate(prefix + "revoked_at"), keyReplacedAt: try r.optionalDate(prefix + "key_replaced_at"),
            keyReplacement: try EnrolmentProof(stored: try r.optionalString(prefix + "key_replaced_by")),
            credential: try DeviceCredential(
                attestation: try DeviceAttestation(stored: try r.optionalString(prefix + "attestation")),
                passkey: try PasskeyCredential(stored: try r.optionalString(prefix + "passkey"))),
            enrolledBy: try EnrolmentProof(stored: try r.optionalString(prefix + "enrolled_by"), column: "enrolled_by"),
            dpopThumbprint: try r.optionalString(prefix + "dpop_jkt"))
    }
}

extension SessionRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        self.init(
            id: try r.id("id"), tokenHash: try r.tokenHash("token_hash"), userID: try r.id("user_id"),
            deviceID: try r.optionalID("device_id"),
            kind: try SessionKind(stored: try r.string("kind")), createdAt: try r.date("created_at"), expiresAt: try r.date("expires_at"),
            revokedAt: try r.optionalDate("revoked_at"), refreshTokenHash: try r.optionalTokenHash("refresh_hash"),
            dpopThumbprint: try r.optionalString("dpop_jkt"))
    }
}

extension SessionState {
    /// A session row joined with its device's `id AS device_row` and `revoked_at AS device_revoked_at`.
    package init(row r: some StoredRow) throws(StoreError) {
        let session = try SessionRecord(row: r)
        let deviceFound = try r.optionalString("device_row") != nil, deviceRevoked = try r.optionalDate("device_revoked_at") != nil
        self.init(session: session, deviceActive: session.deviceID == nil || (deviceFound && !deviceRevoked))
    }

    /// The join that ``init(row:)`` reads, for a `WHERE` on `s`.
    package static let joinedSelect =
        "SELECT s.*, d.id AS device_row, d.revoked_at AS device_revoked_at FROM sessions s LEFT JOIN devices d ON d.id = s.device_id"
}

extension SigningKeyRecord {
    package init(row r: some StoredRow) throws(StoreError) {
        self.init(id: try r.string("id"), storedKey: try r.data("private_key"), createdAt: try r.date("created_at"))
    }
}

extension AuditEvent {
    /// An audit row (`client`, `request_id` and `count` present), or an outbox row (`withOrigin`
    /// false: only what ``AuditEvent/delivered`` keeps).
    package init(row r: some StoredRow, withOrigin: Bool = true) throws(StoreError) {
        self.init(
            at: try r.date("at"), kind: AuditKind(stored: try r.string("kind")), userID: try r.optionalID("user_id"),
            deviceID: try r.optionalID("device_id"),
            reason: try r.optionalString("reason").map(AuditReason.init(stored:)),
            clientAddress: withOrigin ? try r.optionalString("client") : nil,
            requestID: withOrigin ? try r.optionalString("request_id").map(BioAuthRequestID.init) : nil,
            count: withOrigin ? try r.int("count") : 1,
            apiKeyID: withOrigin ? try r.optionalID("api_key_id") : nil)
    }
}

extension SpentRefreshToken {
    package init(row r: some StoredRow) throws(StoreError) {
        self.init(spentAt: try r.optionalDate("spent_at"), sealedSuccessor: try r.optionalData("successor"))
    }
}
