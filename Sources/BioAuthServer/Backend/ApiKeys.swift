import BioAuthCore
import Crypto
import Foundation

/// What an API key lets the app's backend do. Extensible: a new scope is a new static value.
public struct ApiKeyScope: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let description: String
    private init(_ name: String) { description = name }

    /// `POST /v1/backend/enrolment-grants`: enrol a first device for a user id the backend vouches for.
    public static let enrolmentGrants = ApiKeyScope("enrolment-grants")
    /// `POST /v1/backend/approvals/redeem`: redeem a step-up approval before acting on it.
    public static let approvals = ApiKeyScope("approvals")
    /// `POST /v1/introspect`: ask whether an access token is active.
    public static let introspect = ApiKeyScope("introspect")
    /// `/v1/backend/users/{userId}/…`: list a user's devices, sessions and pending enrolment
    /// requests; revoke a device, a session or all of them; cancel a pending request.
    public static let users = ApiKeyScope("users")
    /// `POST /v1/backend/users/{userId}/enrolment-requests/{id}/approve`: vouch for a new
    /// device or a new key after the backend's own account recovery.
    public static let recovery = ApiKeyScope("recovery")
    /// Every scope, in the order the CLI lists them.
    public static let all: [ApiKeyScope] = [.enrolmentGrants, .approvals, .introspect, .users, .recovery]

    /// The scope with this name; nil for an unknown one.
    public init?(name: String) {
        guard let scope = Self.all.first(where: { $0.description == name }) else { return nil }
        self = scope
    }

    public static func < (lhs: ApiKeyScope, rhs: ApiKeyScope) -> Bool { lhs.description < rhs.description }
}

/// A stored API key: its id, name and scopes, and the SHA-256 of its secret (never the secret).
public struct ApiKeyRecord: Sendable, Hashable {
    public var id: ApiKeyID
    public var name: String
    public var secretHash: TokenHash
    public var scopes: Set<ApiKeyScope>
    public var createdAt: Date
    public var revokedAt: Date?

    public init(id: ApiKeyID, name: String, secretHash: TokenHash, scopes: Set<ApiKeyScope>, createdAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.name = name
        self.secretHash = secretHash
        self.scopes = scopes
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

}

/// An API key's secret as handed to its owner once: `bioauth_sk_` and 43 base64url characters
/// (32 random bytes). Its description is redacted.
public struct ApiKeySecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let prefix = "bioauth_sk_"
    /// The whole key, to show once and to send as `Authorization: Bearer`.
    public let value: String

    /// A new random key.
    public init() {
        value = Self.prefix + Base64URL.encode(Data((0..<32).map { _ in UInt8.random(in: .min ... .max) }))
    }

    /// A key as presented; nil unless it has the key's exact shape.
    public init?(presented: String) {
        guard presented.hasPrefix(Self.prefix), let bytes = Base64URL.decode(String(presented.dropFirst(Self.prefix.count))),
            bytes.count == 32
        else { return nil }
        value = presented
    }

    /// What the store keeps and looks up: SHA-256 of the key (a 256-bit random key needs no salt).
    public var hash: TokenHash { TokenHash(ofText: value) }

    public var description: String { "ApiKeySecret(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: []) }
}
