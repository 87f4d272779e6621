import Foundation

/// Authenticator data (WebAuthn §6.1): the relying party's id hash, the flags, the signature
/// counter, and — in a registration — the attested credential (its AAGUID, id and public key).
public struct WebAuthnAuthenticatorData: Sendable {
    /// The flags byte (§6.1).
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// UP: the user was present (a touch, a tap).
        public static let userPresent = Flags(rawValue: 0x01)
        /// UV: the authenticator verified the user (biometrics, PIN).
        public static let userVerified = Flags(rawValue: 0x04)
        /// BE: the credential may be backed up (a synced passkey).
        public static let backupEligible = Flags(rawValue: 0x08)
        /// BS: the credential is backed up now.
        public static let backedUp = Flags(rawValue: 0x10)
        /// AT: an attested credential follows.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// ED: extension outputs follow.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// The credential a registration creates.
    public struct AttestedCredential: Sendable {
        /// The authenticator model's AAGUID (16 bytes; zeros when the authenticator withholds it).
        public let aaguid: Data
        public let credentialID: Data
        public let publicKey: COSEKey
        /// The public key's COSE encoding as the authenticator wrote it.
        public let publicKeyBytes: Data
    }

    public let relyingPartyIDHash: Data
    public let flags: Flags
    public let signCount: UInt32
    /// Present exactly when ``Flags/attestedCredentialData`` is set.
    public let attestedCredential: AttestedCredential?
    /// The bytes as received: what the signature covers.
    public let bytes: Data

    /// Reads authenticator data: 37 bytes, then the attested credential if AT is set, then a CBOR
    /// map of extension outputs if ED is set, and nothing after.
    public init(_ bytes: Data) throws(WebAuthnError) {
        self.bytes = bytes
        let raw = [UInt8](bytes)
        guard raw.count >= 37 else { throw WebAuthnError(.malformed, "authenticator data is shorter than 37 bytes") }
        relyingPartyIDHash = Data(raw[0..<32])
        flags = Flags(rawValue: raw[32])
        signCount = raw[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var offset = 37
        if flags.contains(.attestedCredentialData) {
            guard raw.count >= offset + 18 else { throw WebAuthnError(.malformed, "the attested credential data is truncated") }
            let aaguid = Data(raw[offset..<(offset + 16)])
            let length = Int(raw[offset + 16]) << 8 | Int(raw[offset + 17])
            offset += 18
            guard length <= 1023, raw.count >= offset + length else {
                throw WebAuthnError(.malformed, "the credential id is longer than 1023 bytes or truncated")
            }
            let credentialID = Data(raw[offset..<(offset + length)])
            offset += length
            let decoded: (item: CBOR, length: Int)
            do { decoded = try CBOR.decodePrefix(raw[offset...]) } catch {
                throw WebAuthnError(.malformed, "the credential public key is not CBOR")
            }
            let keyBytes = Data(raw[offset..<(offset + decoded.length)])
            offset += decoded.length
            attestedCredential = AttestedCredential(
                aaguid: aaguid, credentialID: credentialID, publicKey: try COSEKey(cbor: decoded.item), publicKeyBytes: keyBytes)
        } else {
            attestedCredential = nil
        }
        if flags.contains(.extensionData) {
            let decoded: (item: CBOR, length: Int)
            do { decoded = try CBOR.decodePrefix(raw[offset...]) } catch {
                throw WebAuthnError(.malformed, "the extension outputs are not CBOR")
            }
            guard case .map = decoded.item else { throw WebAuthnError(.malformed, "the extension outputs are not a map") }
            offset += decoded.length
        }
        guard offset == raw.count else { throw WebAuthnError(.malformed, "bytes follow the authenticator data") }
    }
}
