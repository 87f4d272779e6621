import BioAuthAttestation
import BioAuthCore
import Crypto
import Foundation

/// A WebAuthn authenticator in software, for tests: it answers the options a BioAuth server
/// sends (`Wire.PasskeyCreationOptions`, `Wire.PasskeyRequestOptions`) as a browser and a
/// platform authenticator would, with a P-256 credential, and lets a test change what a real one
/// would not (the origin, the flags, the counter, the signed bytes).
public final class SoftwarePasskey: @unchecked Sendable {
    /// The origin the browser reports in the client data.
    public var origin: String
    /// UV: the authenticator verified the user (biometrics, a PIN).
    public var userVerified = true
    /// BE and BS: a synced passkey (iCloud Keychain, Google Password Manager) sets both.
    public var synced = false
    /// The signature counter; advanced by each assertion unless ``keepsCounter`` is false.
    public var signCount: UInt32 = 0
    /// Whether each assertion advances the counter (most synced passkeys keep none: always 0).
    public var keepsCounter = false
    /// The attestation statement format a registration answers with: `none` or `packed` (self attestation).
    public var format = "none"

    public private(set) var credentialID = Data()
    /// The user handle the registration stored with the credential.
    public private(set) var userHandle = Data()
    private var key = P256.Signing.PrivateKey()
    private var relyingPartyID = ""

    public init(origin: String) { self.origin = origin }

    /// Answers `navigator.credentials.create()`: a new credential for the options' user.
    public func register(_ options: Wire.PasskeyCreationOptions) throws -> Wire.PasskeyRegistrationCredential {
        key = P256.Signing.PrivateKey()
        credentialID = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        relyingPartyID = options.publicKey.rp.id
        userHandle = Base64URL.decode(options.publicKey.user.id) ?? Data()
        let clientData = clientDataJSON(type: "webauthn.create", challenge: options.publicKey.challenge)
        let x963 = key.publicKey.x963Representation
        let cose = CBOR.map([
            (.unsigned(1), .unsigned(2)), (.unsigned(3), .negative(6)), (.negative(0), .unsigned(1)),
            (.negative(1), .bytes(x963[1..<33])), (.negative(2), .bytes(x963[33...])),
        ]).encoded
        let credential = Data(count: 16) + Data([UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)]) + credentialID + cose
        let authData = authenticatorData(attested: true) + credential
        var statement = CBOR.map([])
        if format == "packed" {
            let signature = try key.signature(for: authData + Data(SHA256.hash(data: clientData))).derRepresentation
            statement = .map([(.text("alg"), .negative(6)), (.text("sig"), .bytes(signature))])
        }
        let object = CBOR.map([(.text("fmt"), .text(format)), (.text("attStmt"), statement), (.text("authData"), .bytes(authData))])
        return Wire.PasskeyRegistrationCredential(
            id: Base64URL.encode(credentialID),
            response: .init(clientDataJSON: Base64URL.encode(clientData), attestationObject: Base64URL.encode(object.encoded)))
    }

    /// Answers `navigator.credentials.get()` with the credential ``register(_:)`` made.
    public func authenticate(_ options: Wire.PasskeyRequestOptions) throws -> Wire.PasskeyAuthenticationCredential {
        if keepsCounter { signCount += 1 }
        let clientData = clientDataJSON(type: "webauthn.get", challenge: options.publicKey.challenge)
        let authData = authenticatorData(attested: false)
        let signature = try key.signature(for: authData + Data(SHA256.hash(data: clientData))).derRepresentation
        return Wire.PasskeyAuthenticationCredential(
            id: Base64URL.encode(credentialID),
            response: .init(
                clientDataJSON: Base64URL.encode(clientData), authenticatorData: Base64URL.encode(authData),
                signature: Base64URL.encode(signature), userHandle: Base64URL.encode(userHandle)))
    }

    /// The credential's key signing `data` (DER): what no real authenticator lets a page do, for
    /// tests that a passkey's key is good for WebAuthn ceremonies only.
    public func sign(_ data: Data) throws -> Data { try key.signature(for: data).derRepresentation }

    private func clientDataJSON(type: String, challenge: String) -> Data {
        Data(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    private func authenticatorData(attested: Bool) -> Data {
        var flags: UInt8 = 0x01  // UP
        if userVerified { flags |= 0x04 }
        if synced { flags |= 0x08 | 0x10 }
        if attested { flags |= 0x40 }
        let counter = withUnsafeBytes(of: signCount.bigEndian) { Data($0) }
        return Data(SHA256.hash(data: Data(relyingPartyID.utf8))) + Data([flags]) + counter
    }
}
