import Crypto
import Foundation
#if canImport(CommonCrypto)
    import CommonCrypto
#else
    import CryptoExtras
#endif

/// PBKDF2-HMAC-SHA256 for passwords and passcodes: salted, slow, compared in constant time.
///
/// On Apple platforms it is CommonCrypto's `CCKeyDerivationPBKDF`, so an app links no BoringSSL;
/// elsewhere swift-crypto's `KDF.Insecure.PBKDF2` (BoringSSL). Both implement RFC 8018 and give
/// the same bytes (`PasswordHashingTests` checks RFC 7914 §11's vector).
public enum SlowHash {
    /// OWASP's minimum for PBKDF2-HMAC-SHA256.
    public static let defaultRounds = 210_000

    /// Derives `outputByteCount` bytes from `secret` and `salt`.
    public static func derive(_ secret: String, salt: Data, rounds: Int, outputByteCount: Int = 32) throws -> Data {
        #if canImport(CommonCrypto)
            // CommonCrypto/CommonKeyDerivation.h: kCCPBKDF2 with kCCPRFHmacAlgSHA256; 0 is success.
            guard rounds > 0, rounds <= Int(UInt32.max) else { throw SlowHashError.invalidParameters }
            let password = Array(secret.utf8)
            let saltBytes = Array(salt)
            var output = [UInt8](repeating: 0, count: outputByteCount)
            let status = password.withUnsafeBufferPointer { passwordBytes in
                passwordBytes.withMemoryRebound(to: Int8.self) { passwordChars in
                    CCKeyDerivationPBKDF(
                        CCPBKDFAlgorithm(kCCPBKDF2), passwordChars.baseAddress, passwordChars.count, saltBytes, saltBytes.count,
                        CCPseudoRandomAlgorithm(kCCPRFHmacAlgSHA256), UInt32(rounds), &output, output.count)
                }
            }
            guard status == 0 else { throw SlowHashError.invalidParameters }
            return Data(output)
        #else
            let key = try KDF.Insecure.PBKDF2.deriveKey(
                from: Data(secret.utf8), salt: salt, using: .sha256, outputByteCount: outputByteCount, unsafeUncheckedRounds: rounds)
            return key.withUnsafeBytes { Data($0) }
        #endif
    }
}

/// PBKDF2 refused its parameters.
public enum SlowHashError: Error, Sendable { case invalidParameters }
