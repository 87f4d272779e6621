import Crypto
import Foundation

/// A P-256 public key as protocol v1 accepts it: a valid point on P-256, nothing else.
///
/// Every parser is strict. SPKI must be exactly the 91-byte named-curve form with the fixed
/// 26-byte prefix (swift-crypto's `P256.Signing.PublicKey(derRepresentation:)` alone ignores the AlgorithmIdentifier; see
/// apple/swift-certificates#316);
/// X9.63 must be the 65-byte uncompressed form `04‖X‖Y` that `SecKeyCopyExternalRepresentation`
/// produces (`SecKey.h`); the point must lie on the curve.
public struct DevicePublicKey: Sendable, Hashable {
    /// `SEQUENCE { SEQUENCE { ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) }` header.
    public static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// The key as swift-crypto's verifier type.
    public let signingKey: P256.Signing.PublicKey

    /// Parses the 65-byte uncompressed X9.63 form `04‖X‖Y`.
    public init(x963Representation bytes: some DataProtocol, field: String = "publicKey") throws(WireFormatError) {
        let bytes = Data(bytes)
        guard bytes.count == 65, bytes.first == 0x04 else { throw WireFormatError(.wrongLength, field: field) }
        do { signingKey = try P256.Signing.PublicKey(x963Representation: bytes) } catch {
            throw WireFormatError(.invalidPoint, field: field)
        }
    }

    /// Parses exactly the 91-byte SubjectPublicKeyInfo DER of a named-curve P-256 key.
    public init(spki bytes: some DataProtocol, field: String = "publicKey") throws(WireFormatError) {
        let bytes = Data(bytes)
        guard bytes.count == 91, bytes.prefix(26).elementsEqual(Self.spkiPrefix) else {
            throw WireFormatError(.notP256SPKI, field: field)
        }
        try self.init(x963Representation: bytes.dropFirst(26), field: field)
    }

    /// Parses a PEM `PUBLIC KEY` block holding the 91-byte SPKI.
    public init(pem: String, field: String = "publicKey") throws(WireFormatError) {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard lines.count >= 3, lines.first == "-----BEGIN PUBLIC KEY-----", lines.last == "-----END PUBLIC KEY-----",
            let der = Data(base64Encoded: lines.dropFirst().dropLast().joined())
        else { throw WireFormatError(.malformedPEM, field: field) }
        try self.init(spki: der, field: field)
    }

    /// Parses a JWK (RFC 7518 §6.2.1): `kty` "EC", `crv` "P-256", `x` and `y` base64url, 32 bytes each.
    public init(jwk: String, field: String = "publicKey") throws(WireFormatError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(jwk.utf8)) as? [String: Any],
            object["kty"] as? String == "EC", object["crv"] as? String == "P-256",
            let xText = object["x"] as? String, let yText = object["y"] as? String,
            let x = Base64URL.decode(xText), let y = Base64URL.decode(yText), x.count == 32, y.count == 32
        else { throw WireFormatError(.malformedJWK, field: field) }
        try self.init(x963Representation: [0x04] + x + y, field: field)
    }

    /// Wraps a swift-crypto key.
    public init(_ key: P256.Signing.PublicKey) { signingKey = key }

    /// `04‖X‖Y`, 65 bytes.
    public var x963Representation: Data { signingKey.x963Representation }
    /// The 91-byte SubjectPublicKeyInfo DER: the form protocol v1 puts on the wire.
    public var spkiRepresentation: Data { Data(Self.spkiPrefix) + x963Representation }
    /// PEM `PUBLIC KEY`, base64 in 64-character lines.
    public var pemRepresentation: String {
        let base64 = spkiRepresentation.base64EncodedString()
        var lines = ["-----BEGIN PUBLIC KEY-----"]
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        lines.append("-----END PUBLIC KEY-----")
        return lines.joined(separator: "\n") + "\n"
    }
    /// JWK with members in a fixed order: `{"kty":"EC","crv":"P-256","x":…,"y":…}`.
    public var jwkRepresentation: String {
        let point = x963Representation
        return #"{"kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(point[1..<33]))","y":"\#(Base64URL.encode(point[33..<65]))"}"#
    }

    /// A short, non-secret identifier: the first 8 bytes of SHA-256(SPKI), hex. Public keys are
    /// not secret, but logs use this instead of the key.
    public var fingerprint: String { Self.fingerprint(spki: spkiRepresentation) }

    /// The fingerprint of a key given as its SPKI DER.
    public static func fingerprint(spki: Data) -> String { Data(SHA256.hash(data: spki).prefix(8)).hexString }

    /// Verifies a strict-DER ECDSA P-256 SHA-256 signature over `message` (SHA-256 applied here,
    /// as `ecdsaSignatureMessageX962SHA256` does on the device).
    public func isValidSignature(der signature: some DataProtocol, for message: some DataProtocol) -> Bool {
        guard let parsed = try? ECDSADERSignature(der: signature) else { return false }
        return isValidSignature(raw: parsed.rawRepresentation, for: message)
    }

    /// Verifies a raw IEEE P1363 signature `r‖s` (exactly 64 bytes).
    public func isValidSignature(raw signature: some DataProtocol, for message: some DataProtocol) -> Bool {
        guard signature.count == 64, let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
            return false
        }
        return signingKey.isValidSignature(parsed, for: Data(message))
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.x963Representation == rhs.x963Representation }
    public func hash(into hasher: inout Hasher) { hasher.combine(x963Representation) }
}

/// An ECDSA signature parsed from strict DER: `SEQUENCE { INTEGER r, INTEGER s }`, short-form
/// lengths, minimal positive integers of at most 32 significant bytes, no trailing bytes.
///
/// High-S signatures are accepted (Wycheproof `ecdsa_secp256r1_sha256_test.json` tcId 5 "signature malleability" is valid; rejecting high-S
/// broke real logins, passkey-go#5).
/// Zero or out-of-range values parse here and fail verification.
public struct ECDSADERSignature: Sendable, Hashable {
    /// `r‖s`, each left-padded to 32 bytes.
    public let rawRepresentation: Data

    public init(der: some DataProtocol, field: String = "signature") throws(WireFormatError) {
        let bytes = [UInt8](der)
        let failure = WireFormatError(.malformedSignature, field: field)
        // A P-256 DER signature is at most 72 bytes, so every length is short-form.
        guard bytes.count >= 8, bytes.count <= 72, bytes[0] == 0x30, bytes[1] < 0x80,
            Int(bytes[1]) == bytes.count - 2
        else { throw failure }
        var index = 2
        func integer() throws(WireFormatError) -> [UInt8] {
            guard index + 2 <= bytes.count, bytes[index] == 0x02, bytes[index + 1] < 0x80 else { throw failure }
            let length = Int(bytes[index + 1])
            let start = index + 2
            guard length >= 1, start + length <= bytes.count else { throw failure }
            let value = Array(bytes[start..<start + length])
            index = start + length
            guard value[0] & 0x80 == 0 else { throw failure }  // negative
            if value.count > 1, value[0] == 0, value[1] & 0x80 == 0 { throw failure }  // non-minimal
            let magnitude = value.first == 0 && value.count > 1 ? Array(value.dropFirst()) : value
            guard magnitude.count <= 32 else { throw failure }
            return [UInt8](repeating: 0, count: 32 - magnitude.count) + magnitude
        }
        let r = try integer()
        let s = try integer()
        guard index == bytes.count else { throw failure }
        rawRepresentation = Data(r + s)
    }

    /// Encodes `r‖s` (64 bytes) as minimal DER.
    public static func derEncoding(raw: some DataProtocol) -> Data {
        let raw = [UInt8](raw)
        precondition(raw.count == 64, "raw P-256 signature is 64 bytes")
        func integer(_ value: ArraySlice<UInt8>) -> [UInt8] {
            var trimmed = Array(value.drop(while: { $0 == 0 }))
            if trimmed.isEmpty { trimmed = [0] }
            if trimmed[0] & 0x80 != 0 { trimmed.insert(0, at: 0) }
            return [0x02, UInt8(trimmed.count)] + trimmed
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return Data([0x30, UInt8(body.count)] + body)
    }
}
