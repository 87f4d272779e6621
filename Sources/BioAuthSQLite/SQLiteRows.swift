import BioAuthCore
import BioAuthServer
import Foundation

/// One decoder per record, from the columns `Schema` describes; a NULL or unknown value is ``StoreError`` `corruptRow`, never a default.
extension SQLiteStore {
    static func user(_ row: SQLRow) throws -> UserRecord {
        UserRecord(
            id: try row.string("id"), passwordSalt: try row.data("password_salt"), passwordRounds: try row.int("password_rounds"),
            passwordHash: try row.data("password_hash"), createdAt: try row.date("created_at"))
    }

    static func challenge(_ row: SQLRow) throws -> ChallengeRecord {
        let binding = try ChallengeRecord.Binding(
            purpose: try row.int("purpose"), publicKey: try row.optionalData("registration_key"), deviceName: try row.optionalString("device_name"),
            replacing: try row.optionalInt("replaces_device").map { $0 != 0 }, operationHash: try row.optionalData("operation_hash"))
        return ChallengeRecord(
            id: try row.data("id"), binding: binding, relyingPartyID: try row.string("rp_id"), userID: try row.string("user_id"),
            deviceID: try row.string("device_id"), nonce: try row.data("nonce"), createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"),
            sessionID: try row.optionalString("session_id"), enrolmentRequestID: try row.optionalString("enrolment_request_id"))
    }

    static func approval(_ row: SQLRow) throws -> ApprovalRecord {
        ApprovalRecord(
            tokenHash: try row.data("token_hash"), userID: try row.string("user_id"), deviceID: try row.string("device_id"),
            operationHash: try row.data("operation_hash"), createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"),
            consumedAt: try row.optionalDate("consumed_at"), sessionID: try row.optionalString("session_id"))
    }

    static func apiKey(_ row: SQLRow) throws -> ApiKeyRecord {
        guard let scopes = ApiKeyRecord.scopes(stored: try row.string("scopes")) else { throw StoreError(.corruptRow, detail: "api_keys.scopes") }
        return ApiKeyRecord(
            id: try row.string("id"), name: try row.string("name"), secretHash: try row.data("secret_hash"), scopes: scopes,
            createdAt: try row.date("created_at"), revokedAt: try row.optionalDate("revoked_at"))
    }

    static func enrolmentRequest(_ row: SQLRow) throws -> EnrolmentRequestRecord {
        EnrolmentRequestRecord(
            id: try row.string("id"), userID: try row.string("user_id"), deviceID: try row.string("device_id"), name: try row.string("name"),
            publicKey: try row.data("public_key"), replacing: try row.int("replaces_device") != 0, sessionID: try row.string("session_id"),
            createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"), approvedAt: try row.optionalDate("approved_at"),
            approvedByDevice: try row.optionalString("approved_by_device"), recoveryCodeHash: try row.optionalData("recovery_code_hash"),
            recoveryAttempts: try row.int("recovery_attempts"))
    }

    static func device(_ row: SQLRow) throws -> DeviceRecord {
        DeviceRecord(
            id: try row.string("id"), userID: try row.string("user_id"), name: try row.string("name"), publicKey: try row.data("public_key"),
            createdAt: try row.date("created_at"), lastUsedAt: try row.optionalDate("last_used_at"), revokedAt: try row.optionalDate("revoked_at"))
    }

    static func session(_ row: SQLRow) throws -> SessionRecord {
        SessionRecord(
            id: try row.string("id"), tokenHash: try row.data("token_hash"), userID: try row.string("user_id"), deviceID: try row.optionalString("device_id"),
            kind: try SessionKind(stored: try row.string("kind")), createdAt: try row.date("created_at"), expiresAt: try row.date("expires_at"),
            revokedAt: try row.optionalDate("revoked_at"), refreshTokenHash: try row.optionalData("refresh_hash"))
    }
}
