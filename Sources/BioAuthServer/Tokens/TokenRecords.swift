import BioAuthCore
import Crypto
import Foundation

/// What a presented refresh token did (``WritePlan/refresh(_:spent:replacement:at:audit:reuseAudit:)``).
public enum RefreshRotation: Sendable, Hashable {
    /// The token was current: replaced; the session it belongs to.
    case rotated(SessionState)
    /// The token was spent already: its session (`id`) is revoked.
    case reused(sessionID: SessionID)
    /// Unknown token, or its session is revoked or expired: nothing written.
    case refused
}

/// A key that signs access tokens (ES256). Stored in the database so every instance signs and
/// publishes the same keys; its description never shows the private key.
public struct SigningKeyRecord: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The JWS `kid`.
    public var id: String
    /// The P-256 private key's raw 32-byte scalar.
    public var privateKey: Data
    public var createdAt: Date

    public init(id: String, privateKey: Data, createdAt: Date) {
        self.id = id
        self.privateKey = privateKey
        self.createdAt = createdAt
    }

    /// A new random key created at `now`; its id is 16 random bytes, base64url.
    public static func generate(at now: Date) -> SigningKeyRecord {
        SigningKeyRecord(id: Base64URL.encode(SecretBytes.random(count: 16).data), privateKey: P256.Signing.PrivateKey().rawRepresentation, createdAt: now)
    }

    public var description: String { "SigningKeyRecord(\(id), created \(createdAt), private key: redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id, "createdAt": createdAt]) }
}
