import Crypto
import Foundation

/// What a device's App Attest key vouches for: the key enrolled, then each login and step-up
/// (`docs/Protocol.md`, "Attestation").
public enum AttestationBinding {
    /// The client data of an App Attest attestation at enrolment: the registration challenge's
    /// signed message followed by the 91-byte SPKI of the key being enrolled. The attestation's
    /// `clientDataHash` is SHA-256 of these bytes, so the genuine app vouches for this key, for
    /// this challenge, and nothing else.
    public static func registration(_ message: SignedMessage, publicKey spki: Data) -> Data {
        message.encoded + spki
    }

    /// SHA-256 of ``registration(_:publicKey:)``: what `DCAppAttestService.attestKey(_:clientDataHash:)` is given.
    public static func registrationHash(_ message: SignedMessage, publicKey spki: Data) -> Data {
        Data(SHA256.hash(data: registration(message, publicKey: spki)))
    }

    /// The client data of an App Attest assertion at a login or step-up: the challenge's signed
    /// message followed by the device key's DER signature over it. The genuine app vouches for
    /// this biometric proof of this challenge, and nothing else.
    public static func assertion(_ message: SignedMessage, signature der: Data) -> Data {
        message.encoded + der
    }

    /// SHA-256 of ``assertion(_:signature:)``: what `DCAppAttestService.generateAssertion(_:clientDataHash:)` is given.
    public static func assertionHash(_ message: SignedMessage, signature der: Data) -> Data {
        Data(SHA256.hash(data: assertion(message, signature: der)))
    }
}
