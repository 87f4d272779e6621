import BioAuthCore
import BioAuthServer
import Foundation

/// A request body: decoded strictly (unknown fields rejected).
protocol StrictBody: Decodable {
    static var fields: Set<String> { get }
}

struct CredentialsBody: StrictBody {
    var username: String
    var password: String
    static let fields: Set<String> = ["username", "password"]
}

struct RegistrationChallengeBody: StrictBody {
    var name: String
    var publicKey: String
    var replacesDeviceId: String?
    static let fields: Set<String> = ["name", "publicKey", "replacesDeviceId"]
}

struct SignatureBody: StrictBody {
    var challengeId: String
    var signature: String
    static let fields: Set<String> = ["challengeId", "signature"]
}

struct LoginChallengeBody: StrictBody {
    var userId: String
    var deviceId: String
    static let fields: Set<String> = ["userId", "deviceId"]
}

struct StepUpChallengeBody: StrictBody {
    var deviceId: String
    var operation: String
    static let fields: Set<String> = ["deviceId", "operation"]
}

struct RedeemBody: StrictBody {
    var approval: String
    var operation: String
    static let fields: Set<String> = ["approval", "operation"]
}

struct RenameBody: StrictBody {
    var name: String
    static let fields: Set<String> = ["name"]
}

// MARK: Responses (times are whole seconds since 1970-01-01T00:00:00Z)

struct SessionResponse: Encodable {
    var token: String
    var sessionId: String
    var userId: String
    var deviceId: String?
    var expiresAt: Int64

    init(_ grant: SessionGrant) {
        token = grant.token
        sessionId = grant.session.id
        userId = grant.session.userID
        deviceId = grant.session.deviceID
        expiresAt = grant.session.expiresAt.seconds
    }
}

struct DeviceResponse: Encodable {
    var id: String
    var name: String
    var publicKey: String
    var createdAt: Int64
    var lastUsedAt: Int64?
    var revokedAt: Int64?

    init(_ device: DeviceRecord) {
        id = device.id
        name = device.name
        publicKey = Base64URL.encode(device.publicKey)
        createdAt = device.createdAt.seconds
        lastUsedAt = device.lastUsedAt?.seconds
        revokedAt = device.revokedAt?.seconds
    }
}

struct SessionInfoResponse: Encodable {
    var id: String
    var kind: String
    var deviceId: String?
    var createdAt: Int64
    var expiresAt: Int64
    var current: Bool
}

struct ApprovalResponse: Encodable {
    var approval: String
    var expiresAt: Int64
}

struct RedeemedResponse: Encodable {
    var userId: String
    var deviceId: String
}

struct AuditResponse: Encodable {
    var at: Int64
    var kind: String
    var deviceId: String?
    var reason: String?
}

struct ErrorResponse: Encodable {
    var error: String
    var field: String?
    var reason: String?
}

extension Date {
    var seconds: Int64 { Int64(timeIntervalSince1970.rounded(.down)) }
}
