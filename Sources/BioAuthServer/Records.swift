import BioAuthCore
import Foundation

/// A user of the demo primary authenticator: username and a salted slow password hash.
public struct UserRecord: Sendable, Hashable {
    public var id: String
    public var passwordSalt: Data
    public var passwordRounds: Int
    public var passwordHash: Data
    public var createdAt: Date

    public init(id: String, passwordSalt: Data, passwordRounds: Int, passwordHash: Data, createdAt: Date) {
        self.id = id
        self.passwordSalt = passwordSalt
        self.passwordRounds = passwordRounds
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }
}

/// A registered device key.
public struct DeviceRecord: Sendable, Hashable {
    public var id: String
    public var userID: String
    public var name: String
    /// The 91-byte P-256 SPKI.
    public var publicKey: Data
    public var createdAt: Date
    public var lastUsedAt: Date?
    public var revokedAt: Date?

    public init(id: String, userID: String, name: String, publicKey: Data, createdAt: Date, lastUsedAt: Date? = nil, revokedAt: Date? = nil) {
        self.id = id
        self.userID = userID
        self.name = name
        self.publicKey = publicKey
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }

    public var isRevoked: Bool { revokedAt != nil }
}

/// An issued challenge: everything the signed message is rebuilt from, plus what a registration carries.
public struct ChallengeRecord: Sendable, Hashable {
    public var id: Data
    public var purpose: SignedMessage.Purpose
    public var relyingPartyID: String
    public var userID: String
    public var deviceID: String
    public var nonce: Data
    public var createdAt: Date
    /// Whole seconds: the value the device signs.
    public var expiresAt: Date
    public var operationHash: Data?
    /// Registration only: the SPKI of the key being registered, and the device's name.
    public var registrationKey: Data?
    public var deviceName: String?

    public init(
        id: Data, purpose: SignedMessage.Purpose, relyingPartyID: String, userID: String, deviceID: String, nonce: Data,
        createdAt: Date, expiresAt: Date, operationHash: Data? = nil, registrationKey: Data? = nil, deviceName: String? = nil
    ) {
        self.id = id
        self.purpose = purpose
        self.relyingPartyID = relyingPartyID
        self.userID = userID
        self.deviceID = deviceID
        self.nonce = nonce
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.operationHash = operationHash
        self.registrationKey = registrationKey
        self.deviceName = deviceName
    }

    /// The message the device signed, rebuilt from what the server stored.
    public func message() throws(WireFormatError) -> SignedMessage {
        try SignedMessage(
            purpose: purpose, relyingPartyID: relyingPartyID, challengeID: id, nonce: nonce, userID: userID, deviceID: deviceID,
            expiresAt: UInt64(max(0, expiresAt.timeIntervalSince1970)), operationHash: operationHash)
    }
}

/// How a session was opened.
public enum SessionKind: String, Sendable, Hashable, Codable {
    /// The primary login (password): may enrol devices.
    case primary
    /// A device-key login.
    case device
}

/// A session: only the SHA-256 of its token is stored.
public struct SessionRecord: Sendable, Hashable {
    public var id: String
    public var tokenHash: Data
    public var userID: String
    public var deviceID: String?
    public var kind: SessionKind
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?

    public init(id: String, tokenHash: Data, userID: String, deviceID: String?, kind: SessionKind, createdAt: Date, expiresAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.tokenHash = tokenHash
        self.userID = userID
        self.deviceID = deviceID
        self.kind = kind
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }
}

/// A one-time step-up approval: only the SHA-256 of its token is stored.
public struct ApprovalRecord: Sendable, Hashable {
    public var tokenHash: Data
    public var userID: String
    public var deviceID: String
    public var operationHash: Data
    public var createdAt: Date
    public var expiresAt: Date
    public var consumedAt: Date?

    public init(tokenHash: Data, userID: String, deviceID: String, operationHash: Data, createdAt: Date, expiresAt: Date, consumedAt: Date? = nil) {
        self.tokenHash = tokenHash
        self.userID = userID
        self.deviceID = deviceID
        self.operationHash = operationHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.consumedAt = consumedAt
    }
}

/// A security event. Holds identifiers and reason codes only, never a secret.
public struct AuditEvent: Sendable, Hashable {
    public var at: Date
    public var kind: String
    public var userID: String?
    public var deviceID: String?
    public var reason: String?
    public var clientAddress: String?
    public var requestID: String?

    public init(at: Date, kind: String, userID: String? = nil, deviceID: String? = nil, reason: String? = nil, clientAddress: String? = nil, requestID: String? = nil) {
        self.at = at
        self.kind = kind
        self.userID = userID
        self.deviceID = deviceID
        self.reason = reason
        self.clientAddress = clientAddress
        self.requestID = requestID
    }
}

/// A store failure the service handles.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }
        /// A row with the same key exists.
        public static let duplicate = Code("duplicate")
        /// The outstanding-challenge cap for the device is reached.
        public static let tooManyChallenges = Code("tooManyChallenges")
    }

    public let code: Code
    public init(_ code: Code) { self.code = code }
    public var description: String { "StoreError.\(code)" }
}
