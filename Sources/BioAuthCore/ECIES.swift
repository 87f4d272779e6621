import Crypto
import Foundation

/// Apple's `eciesEncryptionCofactorVariableIVX963SHA256AESGCM`, byte for byte.
///
/// Layout (`OSX/sec/Security/SecKeyAdaptors.m` l.815–1060 in apple-oss-distributions/Security,
/// apple-oss-distributions/Security `OSX/sec/Security/SecKeyAdaptors.m` l.815–1060): `ephemeralPublicKey(65, 04‖X‖Y) ‖ AES-GCM ciphertext ‖
/// tag(16)`.
/// The key material is ANSI X9.63 KDF with SHA-256 over the ECDH x-coordinate, with
/// sharedInfo = the ephemeral public key, 32 bytes: AES-128 key = bytes 0..<16, the 16-byte GCM
/// IV = bytes 16..<32. No AAD.
public enum ECIES {
    /// Bytes added to the plaintext: 65 (ephemeral key) + 16 (tag).
    public static let overhead = 81

    /// Encrypts to a P-256 public key. Public-key operation: needs no prompt.
    public static func encrypt(_ plaintext: some DataProtocol, to recipient: P256.KeyAgreement.PublicKey) throws -> Data {
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let ephemeralBytes = ephemeral.publicKey.x963Representation
        let secret = try ephemeral.sharedSecretFromKeyAgreement(with: recipient)
        let (key, nonce) = try derive(secret, ephemeralBytes)
        let sealed = try AES.GCM.seal(Data(plaintext), using: key, nonce: nonce)
        return ephemeralBytes + sealed.ciphertext + sealed.tag
    }

    /// Decrypts with the given key-agreement operation (the Secure Enclave's, or a software key's).
    ///
    /// - Throws: ``WireFormatError`` with code `malformedCiphertext` for short input, an invalid
    ///   ephemeral point or a tag mismatch — Apple reports all three as errSecParam.
    public static func decrypt(
        _ ciphertext: some DataProtocol,
        agreement: (P256.KeyAgreement.PublicKey) throws -> SharedSecret
    ) throws -> Data {
        let bytes = Data(ciphertext)
        let failure = WireFormatError(.malformedCiphertext, field: "ciphertext")
        guard bytes.count >= overhead else { throw failure }
        let ephemeralBytes = bytes.prefix(65)
        guard let ephemeral = try? P256.KeyAgreement.PublicKey(x963Representation: ephemeralBytes) else { throw failure }
        let secret = try agreement(ephemeral)
        let (key, nonce) = try derive(secret, Data(ephemeralBytes))
        let body = bytes.dropFirst(65)
        guard let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: body.dropLast(16), tag: body.suffix(16)),
            let plaintext = try? AES.GCM.open(box, using: key)
        else { throw failure }
        return plaintext
    }

    /// Decrypts with a software private key.
    public static func decrypt(_ ciphertext: some DataProtocol, with key: P256.KeyAgreement.PrivateKey) throws -> Data {
        try decrypt(ciphertext) { try key.sharedSecretFromKeyAgreement(with: $0) }
    }

    private static func derive(_ secret: SharedSecret, _ sharedInfo: Data) throws -> (SymmetricKey, AES.GCM.Nonce) {
        let material = secret.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: sharedInfo, outputByteCount: 32)
        return try material.withUnsafeBytes { raw in
            let bytes = Data(raw)
            return (SymmetricKey(data: bytes.prefix(16)), try AES.GCM.Nonce(data: bytes.suffix(16)))
        }
    }
}
