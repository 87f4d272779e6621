import BioAuthCore
import BioAuthServer
import Foundation
import PostgresNIO

/// One decoder per record, from the columns `Schema` describes.
extension PostgresStore {
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
