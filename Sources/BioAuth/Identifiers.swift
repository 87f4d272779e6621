import Foundation

/// A non-empty name: a Secure Enclave key's tag (``KeyTag``), a keychain service (``ServiceName``)
/// or an item's account (``AccountName``). The role is part of the type, so a tag cannot be passed
/// where an account is meant.
///
/// Build one from a literal (`"login"`) or, for text from elsewhere, with ``init(rawValue:)``,
/// which refuses an empty string. An empty literal is a programming error and stops the program.
public struct Identifier<Role: IdentifierRole>: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    public let rawValue: String

    /// nil for an empty string.
    public init?(rawValue: String) {
        guard !rawValue.isEmpty else { return nil }
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        precondition(!value.isEmpty, "\(Role.name) must not be empty")
        rawValue = value
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let identifier = Self(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(Role.name) must not be empty"))
        }
        self = identifier
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// What an ``Identifier`` names.
public protocol IdentifierRole: Sendable {
    static var name: String { get }
}

public enum KeyTagRole: IdentifierRole { public static let name = "a key tag" }
public enum ServiceNameRole: IdentifierRole { public static let name = "a keychain service" }
public enum AccountNameRole: IdentifierRole { public static let name = "a keychain account" }

/// The application tag of a Secure Enclave key (`kSecAttrApplicationTag`).
public typealias KeyTag = Identifier<KeyTagRole>
/// A keychain service (`kSecAttrService`): the group an app's items live in.
public typealias ServiceName = Identifier<ServiceNameRole>
/// A keychain item's account (`kSecAttrAccount`) within its service.
public typealias AccountName = Identifier<AccountNameRole>
