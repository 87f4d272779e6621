import BioAuthCore
import Crypto
import Foundation

/// Seals the private keys that sign access tokens before they are stored, and opens them when
/// they are loaded: what keeps a copy of the database, or one of its backups, from minting tokens.
/// ``KeyEncryptionKey`` holds the key-encryption key in the process; a KMS or HSM can stand behind
/// this protocol instead (seal and open are calls to it).
public protocol SigningKeySealer: Sendable {
    /// Names the key that seals — for the key list and the logs, never the key itself (e.g.
    /// `kek:3f2a91c0d4e5b6a7`, `kms:…`, `plaintext`).
    var identifier: String { get }
    /// The stored form of a new signing key's 32-byte private scalar.
    func seal(_ privateKey: SecretBytes, keyID: String) async throws -> Data
    /// The private scalar of a stored key; throws for one this sealer did not seal.
    func open(_ sealed: Data, keyID: String) async throws -> SecretBytes
}

/// How the deployment protects its signing keys in the database (``TokenPolicy/signingKeys``).
public struct SigningKeyProtection: Sendable, Hashable, CustomStringConvertible {
    public let sealer: any SigningKeySealer

    public init(_ sealer: any SigningKeySealer) { self.sealer = sealer }

    /// Sealed with AES-256-GCM under `key` (``KeyEncryptionKey``).
    public static func keyEncryptionKey(_ key: KeyEncryptionKey) -> SigningKeyProtection { SigningKeyProtection(key) }

    /// **Weaker:** the private keys are stored as they are. Whoever reads the database or a backup
    /// can sign access tokens every service accepts until the keys rotate out (`docs/ThreatModel.md`).
    /// The library's default for an embedding app that sets nothing; `bioauth-server` uses it only
    /// with `--insecure-plaintext-signing-keys`.
    public static let plaintextInDatabase = SigningKeyProtection(PlaintextSigningKeys())

    public var description: String { sealer.identifier }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.sealer.identifier == rhs.sealer.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(sealer.identifier) }
}

/// A 256-bit key-encryption key: each signing key is stored as `BAK1` ‖ the first 8 bytes of
/// SHA-256(KEK) ‖ a 12-byte nonce ‖ AES-256-GCM ciphertext and tag of the scalar, with
/// `bioauth signing key ‹kid›` as associated data — so a sealed key moved to another id does not open.
public struct KeyEncryptionKey: SigningKeySealer, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let key: SymmetricKey
    /// The first 8 bytes of SHA-256 of the key: what each sealed key carries to name it.
    let fingerprintBytes: Data
    /// `fingerprintBytes` in hex: names the key without revealing it.
    public var fingerprint: String { fingerprintBytes.map { String(format: "%02x", $0) }.joined() }

    static let magic = Data("BAK1".utf8)

    /// Fails unless `key` is 32 bytes.
    public init?(_ key: SecretBytes) {
        guard key.data.count == 32 else { return nil }
        self.key = SymmetricKey(data: key.data)
        fingerprintBytes = Data(SHA256.hash(data: key.data).prefix(8))
    }

    /// The key from its text form: 32 bytes in standard or URL-safe base64 (what
    /// `bioauth-server keys generate-kek` prints); nil for anything else.
    public init?(base64 text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed) ?? Base64URL.decode(trimmed) else { return nil }
        self.init(SecretBytes(data))
    }

    /// A new random key.
    public static func random() -> KeyEncryptionKey { KeyEncryptionKey(SecretBytes.random(count: 32))! }

    /// The key's text form, for the operator's secret store; never logged.
    public var base64: String { key.withUnsafeBytes { Data($0).base64EncodedString() } }

    public var identifier: String { "kek:" + fingerprint }
    public var description: String { "KeyEncryptionKey(\(identifier))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["fingerprint": fingerprint]) }

    static func associatedData(_ keyID: String) -> Data { Data("bioauth signing key \(keyID)".utf8) }

    public func seal(_ privateKey: SecretBytes, keyID: String) async throws -> Data {
        let box = try AES.GCM.seal(privateKey.data, using: key, authenticating: Self.associatedData(keyID))
        guard let combined = box.combined else { throw SigningKeyUnavailable(keyID: keyID, reason: .notSealedByThisKey) }
        return Self.magic + fingerprintBytes + combined
    }

    public func open(_ sealed: Data, keyID: String) async throws -> SecretBytes {
        let stored = StoredSigningKey(sealed)
        guard case .sealed(let fingerprint) = stored.form else { throw SigningKeyUnavailable(keyID: keyID, reason: .plaintext) }
        guard fingerprint == self.fingerprint else {
            throw SigningKeyUnavailable(keyID: keyID, reason: .anotherKeyEncryptionKey(fingerprint))
        }
        do {
            let box = try AES.GCM.SealedBox(combined: Data(sealed.dropFirst(12)))
            return SecretBytes(try AES.GCM.open(box, using: key, authenticating: Self.associatedData(keyID)))
        } catch { throw SigningKeyUnavailable(keyID: keyID, reason: .notSealedByThisKey) }
    }
}

/// ``SigningKeyProtection/plaintextInDatabase``: the scalar as it is.
public struct PlaintextSigningKeys: SigningKeySealer {
    public init() {}
    public var identifier: String { "plaintext" }
    public func seal(_ privateKey: SecretBytes, keyID: String) async throws -> Data { privateKey.data }
    public func open(_ sealed: Data, keyID: String) async throws -> SecretBytes {
        guard StoredSigningKey(sealed).form == .plaintext else {
            throw SigningKeyUnavailable(keyID: keyID, reason: .sealedButNoKeyEncryptionKey)
        }
        return SecretBytes(sealed)
    }
}

/// What a stored signing key is, read without any key (for `bioauth-server keys list`).
public struct StoredSigningKey: Sendable, Hashable {
    public enum Form: Sendable, Hashable {
        /// The raw 32-byte scalar (``SigningKeyProtection/plaintextInDatabase``, or a key stored
        /// before sealing existed).
        case plaintext
        /// Sealed by the ``KeyEncryptionKey`` with this fingerprint.
        case sealed(keyEncryptionKey: String)
        /// Neither: another sealer's format (a KMS) or damage.
        case other
    }
    public let form: Form

    public init(_ stored: Data) {
        if stored.count == 32 {
            form = .plaintext
        } else if stored.count == 4 + 8 + 12 + 32 + 16, stored.prefix(4) == KeyEncryptionKey.magic {
            form = .sealed(keyEncryptionKey: stored.dropFirst(4).prefix(8).map { String(format: "%02x", $0) }.joined())
        } else {
            form = .other
        }
    }
}

/// A stored signing key this deployment cannot open: it is neither used nor published.
public struct SigningKeyUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// Stored in the clear while a key-encryption key is configured: sealing refuses it, so
        /// that a key written into the database by someone else is never used. Retire it.
        case plaintext
        /// Sealed under another key-encryption key (its fingerprint).
        case anotherKeyEncryptionKey(String)
        /// Sealed, and no key-encryption key is configured.
        case sealedButNoKeyEncryptionKey
        /// The sealed bytes do not open with this key and id.
        case notSealedByThisKey
    }
    public let keyID: String
    public let reason: Reason
    public var description: String { "signing key \(keyID) cannot be used: \(reason)" }
}

/// Where `bioauth-server` keeps the key-encryption key of a SQLite database file that names none:
/// outside the database's directory, so that a copy of that directory — a backup, a snapshot —
/// holds the sealed keys without the key that opens them.
public enum DefaultKEKLocation {
    /// `$XDG_STATE_HOME/bioauth-server/`, else `$HOME/.local/state/bioauth-server/`, then the
    /// database file's name and the first 8 bytes of SHA-256 of its absolute path, in hex, with
    /// `.signing-kek`. nil when `environment` names neither directory.
    public static func file(forSQLiteDatabase path: String, environment: [String: String]) -> String? {
        let base: String
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            base = state
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            base = home + "/.local/state"
        } else {
            return nil
        }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        let digest = SHA256.hash(data: Data(absolute.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        return "\(base)/bioauth-server/\(URL(fileURLWithPath: absolute).lastPathComponent)-\(digest).signing-kek"
    }

    /// Where earlier versions kept it: beside the database file, in the same directory.
    public static func besideDatabase(_ path: String) -> String { path + ".signing-kek" }
}
