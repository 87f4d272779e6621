import Crypto
import CryptoExtras
import Foundation

/// PBKDF2-HMAC-SHA256 for passwords and passcodes: salted, slow, compared in constant time.
public enum SlowHash {
    /// OWASP's minimum for PBKDF2-HMAC-SHA256.
    public static let defaultRounds = 210_000

    /// Derives `outputByteCount` bytes from `secret` and `salt`.
    public static func derive(_ secret: String, salt: Data, rounds: Int, outputByteCount: Int = 32) throws -> Data {
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Data(secret.utf8), salt: salt, using: .sha256, outputByteCount: outputByteCount, unsafeUncheckedRounds: rounds)
        return key.withUnsafeBytes { Data($0) }
    }
}
