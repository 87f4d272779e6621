import BioAuthCore
import BioAuthTesting
import Crypto
import Foundation
import Testing

struct EncodingTests {
    let key = P256.Signing.PrivateKey()

    @Test func publicKeyRoundTripsThroughEveryEncoding() throws {
        let publicKey = DevicePublicKey(key.publicKey)
        #expect(publicKey.spkiRepresentation.count == 91)
        #expect(publicKey.spkiRepresentation == key.publicKey.derRepresentation)
        #expect(try DevicePublicKey(spki: publicKey.spkiRepresentation) == publicKey)
        #expect(try DevicePublicKey(x963Representation: publicKey.x963Representation) == publicKey)
        #expect(try DevicePublicKey(pem: publicKey.pemRepresentation) == publicKey)
        #expect(try DevicePublicKey(jwk: publicKey.jwkRepresentation) == publicKey)
        #expect(publicKey.pemRepresentation.contains("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"))
        #expect(publicKey.pemRepresentation == key.publicKey.pemRepresentation + "\n")
    }

    @Test func strictParsersRejectNearMisses() {
        let publicKey = DevicePublicKey(key.publicKey)
        let spki = publicKey.spkiRepresentation
        #expect(throws: WireFormatError.self) { try DevicePublicKey(spki: spki + [0]) }
        #expect(throws: WireFormatError.self) { try DevicePublicKey(spki: spki.dropLast()) }
        var secp256k1 = spki
        secp256k1[24] = 0x08  // a different curve label
        #expect(throws: WireFormatError.self) { try DevicePublicKey(spki: secp256k1) }
        var offCurve = spki
        offCurve[90] ^= 1
        #expect(throws: WireFormatError(.invalidPoint, field: "publicKey")) { try DevicePublicKey(spki: offCurve) }
        #expect(throws: WireFormatError.self) { try DevicePublicKey(x963Representation: key.publicKey.compressedRepresentation) }
        #expect(throws: WireFormatError.self) { try DevicePublicKey(x963Representation: [0x00]) }
        #expect(throws: WireFormatError.self) { try DevicePublicKey(jwk: #"{"kty":"EC","crv":"P-384","x":"AA","y":"AA"}"#) }
        #expect(throws: WireFormatError.self) { try DevicePublicKey(pem: "-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----") }
    }

    @Test func derSignaturesAreStrict() throws {
        let message = Data("m".utf8)
        let signature = try key.signature(for: message)
        let der = signature.derRepresentation
        let publicKey = DevicePublicKey(key.publicKey)
        #expect(publicKey.isValidSignature(der: der, for: message))
        #expect(try ECDSADERSignature(der: der).rawRepresentation == signature.rawRepresentation)
        #expect(ECDSADERSignature.derEncoding(raw: signature.rawRepresentation) == der)
        #expect(!publicKey.isValidSignature(der: der + [0], for: message))  // trailing byte
        var longForm = Data([0x30, 0x81, UInt8(der.count - 2)])
        longForm.append(der.dropFirst(2))
        #expect(!publicKey.isValidSignature(der: longForm, for: message))  // BER long-form length
        #expect(!publicKey.isValidSignature(raw: signature.rawRepresentation.dropLast(), for: message))
        #expect(publicKey.isValidSignature(raw: signature.rawRepresentation, for: message))
        #expect(!publicKey.isValidSignature(der: der, for: Data("n".utf8)))
    }

    /// High-S (r, n−s) verifies: never key anything on signature bytes (Wycheproof tcId 5).
    @Test func highSIsAccepted() throws {
        let message = Data("m".utf8)
        let raw = try key.signature(for: message).rawRepresentation
        let malleated = raw.prefix(32) + SignatureMutation.negate(raw.suffix(32))
        #expect(DevicePublicKey(key.publicKey).isValidSignature(raw: malleated, for: message))
        #expect(DevicePublicKey(key.publicKey).isValidSignature(der: ECDSADERSignature.derEncoding(raw: malleated), for: message))
    }

    /// Canonical base64url only: no padding, no standard-alphabet characters, no non-zero unused bits.
    @Test(arguments: [
        ("", Data?.some(Data())), ("YQ", Data("a".utf8)), ("_-8", Data([0xFF, 0xEF])), ("AAEC", Data([0, 1, 2])),
        ("AAE", Data([0, 1])), ("YQ==", nil), ("YR", nil), ("AAF", nil), ("A", nil), ("ab+/", nil), ("a b", nil), ("🙂", nil),
    ])
    func base64URLIsCanonical(text: String, expected: Data?) {
        #expect(Base64URL.decode(text) == expected)
        if let expected { #expect(Base64URL.encode(expected) == text) }
    }

    /// Every length and byte value round-trips, and agrees with Foundation's base64 once the
    /// alphabet is swapped; changing any last character's unused bits is refused.
    @Test func base64URLRoundTripsRandomBytes() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
            let text = Base64URL.encode(bytes)
            let standard = bytes.base64EncodedString()
            #expect(
                text
                    == standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                        of: "=", with: ""))
            #expect(Base64URL.decode(text) == bytes)
            guard length % 3 != 0, let last = text.last, last != "_" else { continue }
            // The next character in the alphabet differs from `last` in its lowest bit, which is unused.
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let bumped = alphabet[alphabet.firstIndex(of: last)! + 1]
            #expect(Base64URL.decode(String(text.dropLast()) + String(bumped)) == nil, "\(length) bytes")
        }
    }

    @Test func hexRoundTrip() {
        #expect(Data(hexString: "00ff10")?.hexString == "00ff10")
        #expect(Data(hexString: "0") == nil)
        #expect(Data(hexString: "zz") == nil)
    }
}

/// `SlowHash` is PBKDF2-HMAC-SHA256 exactly (CommonCrypto on Apple platforms, BoringSSL elsewhere).
struct SlowHashTests {
    @Test(arguments: [
        (
            "passwd", "salt", 1,
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        ),
        (
            "Password", "NaCl", 80_000,
            "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"
        ),
    ])
    func matchesRFC7914Section11(password: String, salt: String, rounds: Int, hex: String) throws {
        #expect(try SlowHash.derive(password, salt: Data(salt.utf8), rounds: rounds, outputByteCount: 64).hexString == hex)
    }

    /// Random secrets have the length asked for, past getentropy's 256 bytes a call too, and no two are alike.
    @Test(arguments: [0, 1, 16, 32, 255, 256, 257, 1_000])
    func randomSecretsHaveTheirLength(count: Int) {
        let draws = (0..<8).map { _ in SecretBytes.random(count: count) }
        #expect(draws.allSatisfy { $0.count == count })
        if count >= 16 {
            #expect(Set(draws).count == draws.count)
            // The tail is filled too: a loop that stopped at the first 256 bytes would leave zeros there.
            #expect(draws.contains { $0.data.suffix(16) != Data(count: 16) })
        }
    }
}
