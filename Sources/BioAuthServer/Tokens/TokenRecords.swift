import BioAuthCore
import Crypto
import Foundation

/// What a presented refresh token did (`WritePlan.refresh(_:spent:replacement:at:audit:reuseAudit:)`).
public enum RefreshRotation: Sendable, Hashable {
    /// The token was current: replaced; the session it belongs to.
    case rotated(SessionState)
    /// The token was spent moments ago (within ``TokenPolicy/refreshRetryGrace``) and its
    /// successor is still current: the same successor again, for a retry whose answer was lost.
    case repeated(SessionState, successor: SecretBytes)
    /// The token was spent already: its session (`id`) is revoked.
    case reused(sessionID: SessionID)
    /// Unknown token, or its session is revoked or expired: nothing written.
    case refused
    /// The token is bound to a DPoP key and the request's proof is missing or by another key:
    /// nothing written.
    case keyMismatch(DPoPError.Code)
}

/// A refresh token's successor, sealed under the token it replaces (AES-GCM with a key derived by
/// HKDF-SHA256 from the old token): only whoever presents the old token can open it, and the
/// database alone, which keeps the old token as a hash only, cannot.
public enum RefreshSuccessor {
    static func key(_ presented: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: presented), info: Data("BioAuth refresh successor".utf8), outputByteCount: 32)
    }

    public static func seal(_ successor: SecretBytes, under presented: Data) -> Data {
        // A fresh random nonce; sealing cannot fail for a 32-byte key.
        (try? AES.GCM.seal(successor.data, using: key(presented)).combined) ?? Data()
    }

    public static func open(_ sealed: Data, under presented: Data) -> SecretBytes? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed), let plain = try? AES.GCM.open(box, using: key(presented)) else {
            return nil
        }
        return SecretBytes(plain)
    }
}

/// A key that signs access tokens (ES256). Stored in the database so every instance signs and
/// publishes the same keys; its description never shows the private key.
public struct SigningKeyRecord: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The JWS `kid`.
    public var id: String
    /// The P-256 private key as stored: sealed by the deployment's ``SigningKeyProtection``
    /// (the raw 32-byte scalar only under ``SigningKeyProtection/plaintextInDatabase``).
    public var storedKey: Data
    public var createdAt: Date

    public init(id: String, storedKey: Data, createdAt: Date) {
        self.id = id
        self.storedKey = storedKey
        self.createdAt = createdAt
    }

    /// A new random key created at `now`, sealed by `protection`; its id is 16 random bytes,
    /// base64url, drawn again while it begins with `-` (one draw in 64), which a command line
    /// would read as an option: `keys retire ‹kid›` must be able to name every key.
    public static func generate(at now: Date, protection: SigningKeyProtection) async throws -> SigningKeyRecord {
        var id: String
        repeat { id = Base64URL.encode(SecretBytes.random(count: 16).data) } while id.hasPrefix("-")
        let sealed = try await protection.sealer.seal(SecretBytes(P256.Signing.PrivateKey().rawRepresentation), keyID: id)
        return SigningKeyRecord(id: id, storedKey: sealed, createdAt: now)
    }

    public var description: String { "SigningKeyRecord(\(id), created \(createdAt), private key: redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id, "createdAt": createdAt]) }
}
