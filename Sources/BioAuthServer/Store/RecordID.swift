import BioAuthCore
import Crypto
import Foundation

/// The id of a stored record of one kind: a ``UserID`` cannot be passed where a ``DeviceID`` is
/// meant. Ids are opaque text (the server makes device, session and request ids; user ids are
/// usernames or your backend's ids); storage keeps ``rawValue``.
public struct RecordID<Record>: RawRepresentable, Hashable, Comparable, Sendable, Codable,
    CustomStringConvertible
{
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A new random id: a lower-case version 4 UUID, its 122 random bits from `SecretBytes.random(count:)`
    /// (Foundation's `UUID()` opens and reads `/dev/urandom` at each call on Linux).
    public static func random() -> Self {
        var bytes = [UInt8](SecretBytes.random(count: 16).data)
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 9562 variant
        let uuid = bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
        return Self(UUID(uuid: uuid).uuidString.lowercased())
    }

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A user: a username of the demo password login, or an id your backend owns.
public typealias UserID = RecordID<UserRecord>
/// A registered device key.
public typealias DeviceID = RecordID<DeviceRecord>
/// A session.
public typealias SessionID = RecordID<SessionRecord>
/// A request to enrol another device.
public typealias EnrolmentRequestID = RecordID<EnrolmentRequestRecord>
/// A scheduled device removal's id (``DeviceRemovalRecord``).
public typealias DeviceRemovalID = RecordID<DeviceRemovalRecord>
/// A backend API key.
public typealias ApiKeyID = RecordID<ApiKeyRecord>

/// The SHA-256 of a bearer secret (a session, refresh or approval token, an API-key secret, a
/// recovery code): what the server stores and looks rows up by, never the secret itself. Its
/// description, debug description and `dump()` show no bytes: a lookup key is not for logs.
public struct TokenHash: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The 32-byte digest.
    public let digest: Data

    /// The hash of `secret`.
    public init(of secret: some DataProtocol) { digest = Data(SHA256.hash(data: secret)) }
    /// The hash of a secret.
    public init(of secret: SecretBytes) { self.init(of: secret.data) }
    /// The hash of a secret's UTF-8 text.
    public init(ofText secret: String) { self.init(of: Data(secret.utf8)) }
    /// A stored digest.
    public init(digest: Data) { self.digest = digest }

    public var description: String { "TokenHash(\(digest.count) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": digest.count]) }
}

/// A challenge's id: 16 random bytes, base64url on the wire. Whoever holds it may finish the
/// pending proof it names, so its description, debug description and `dump()` show no bytes.
public struct ChallengeID: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The 16 bytes.
    public let bytes: Data

    /// The id a challenge was sent with (`challengeId`), or `invalid_request` naming that field.
    public init(_ text: String) throws(ServerError) {
        bytes = try Validate.base64URL(text, field: "challengeId", count: 16...16)
    }

    /// An id as stored.
    package init(bytes: Data) { self.bytes = bytes }

    /// A new random id.
    static func random() -> ChallengeID { ChallengeID(bytes: SecretBytes.random(count: 16).data) }

    public var description: String { "ChallengeID(\(bytes.count) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": bytes.count]) }
}
