import Crypto
import Foundation
import X509
import _CryptoExtras

/// A credential public key as a COSE_Key (RFC 9052 §7, RFC 9053), of the algorithms WebAuthn
/// relying parties meet: ES256 (P-256, what passkeys and security keys use), EdDSA (Ed25519) and
/// RS256 (RSA PKCS #1 v1.5 with SHA-256, Windows Hello).
public enum COSEKey: Sendable {
    case es256(P256.Signing.PublicKey)
    case eddsa(Curve25519.Signing.PublicKey)
    case rs256(_RSA.Signing.PublicKey)

    /// The COSE algorithms (RFC 9053) a credential key may use, in the order a relying party
    /// prefers them: the one list that registration options offer (`pubKeyCredParams`) and that
    /// ``init(cbor:)`` and attestation statements accept.
    public enum Algorithm: Int, Sendable, CaseIterable {
        case es256 = -7
        case eddsa = -8
        case rs256 = -257
    }

    /// The COSE algorithm identifier (`-7`, `-8`, `-257`).
    public var algorithm: Int {
        switch self {
        case .es256: Algorithm.es256.rawValue
        case .eddsa: Algorithm.eddsa.rawValue
        case .rs256: Algorithm.rs256.rawValue
        }
    }

    /// Reads a COSE_Key. Its `kty`, `alg` and curve must agree, and the coordinates must be a
    /// point of the curve; anything else is `algorithm` (an unsupported key) or `malformed`.
    public init(cbor item: CBOR) throws(WebAuthnError) {
        func int(_ label: Int) -> Int? { item[label]?.intValue }
        func bytes(_ label: Int) -> Data? { item[label]?.bytesValue }
        guard case .map = item, let kty = int(1), let alg = int(3) else {
            throw WebAuthnError(.malformed, "the credential public key is not a COSE_Key with kty and alg")
        }
        switch (kty, Algorithm(rawValue: alg)) {
        case (2, .es256?):
            guard int(-1) == 1, let x = bytes(-2), let y = bytes(-3), x.count == 32, y.count == 32 else {
                throw WebAuthnError(.algorithm, "an ES256 key that is not on P-256")
            }
            do { self = .es256(try P256.Signing.PublicKey(x963Representation: [0x04] + x + y)) } catch {
                throw WebAuthnError(.malformed, "the ES256 key is not a point of P-256")
            }
        case (1, .eddsa?):
            guard int(-1) == 6, let x = bytes(-2), x.count == 32 else {
                throw WebAuthnError(.algorithm, "an EdDSA key that is not Ed25519")
            }
            do { self = .eddsa(try Curve25519.Signing.PublicKey(rawRepresentation: x)) } catch {
                throw WebAuthnError(.malformed, "the Ed25519 key is malformed")
            }
        case (3, .rs256?):
            guard let n = bytes(-1), let e = bytes(-2), n.count >= 256 else {
                throw WebAuthnError(.algorithm, "an RS256 key shorter than 2048 bits")
            }
            do { self = .rs256(try _RSA.Signing.PublicKey(n: n, e: e)) } catch {
                throw WebAuthnError(.malformed, "the RSA key is malformed")
            }
        default:
            throw WebAuthnError(.algorithm, "COSE key type \(kty) with algorithm \(alg) is not accepted")
        }
    }

    /// Reads a COSE_Key from its CBOR encoding.
    public init(_ encoded: Data) throws(WebAuthnError) {
        let item: CBOR
        do { item = try CBOR(decoding: encoded) } catch { throw WebAuthnError(.malformed, "the credential public key is not CBOR") }
        try self.init(cbor: item)
    }

    /// Whether `signature` (WebAuthn's encoding: DER for ES256, raw for EdDSA and RS256) signs `data`.
    public func isValidSignature(_ signature: Data, for data: Data) -> Bool {
        switch self {
        case .es256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .eddsa(let key):
            return key.isValidSignature(signature, for: data)
        case .rs256(let key):
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: data, padding: .insecurePKCS1v1_5)
        }
    }
}

extension COSEKey {
    /// The key's SubjectPublicKeyInfo (DER): what a device list shows a fingerprint of.
    public var spkiRepresentation: Data {
        switch self {
        case .es256(let key): key.derRepresentation
        // RFC 8410 §4: SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING { 0, key } }.
        case .eddsa(let key): Data([0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]) + key.rawRepresentation
        case .rs256(let key): key.derRepresentation
        }
    }

    /// An attestation certificate's key used with a statement's `alg`; nil when the two do not
    /// agree (an RSA certificate with alg -7) or the algorithm is not one of the three.
    init?(_ key: Certificate.PublicKey, algorithm: Int) {
        switch Algorithm(rawValue: algorithm) {
        case .es256: guard let p256 = P256.Signing.PublicKey(key) else { return nil }; self = .es256(p256)
        case .eddsa: guard let ed25519 = Curve25519.Signing.PublicKey(key) else { return nil }; self = .eddsa(ed25519)
        case .rs256: guard let rsa = _RSA.Signing.PublicKey(key) else { return nil }; self = .rs256(rsa)
        case nil: return nil
        }
    }

    /// The key as a certificate carries it, to compare with an attestation certificate's.
    var certificatePublicKey: Certificate.PublicKey {
        switch self {
        case .es256(let key): Certificate.PublicKey(key)
        case .eddsa(let key): Certificate.PublicKey(key)
        case .rs256(let key): Certificate.PublicKey(key)
        }
    }
}
