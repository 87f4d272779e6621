import BioAuthCore
import Crypto
import Foundation
import X509

/// A relying party's passkey settings and the relying party's checks of the two WebAuthn
/// ceremonies (WebAuthn Level 3 §7.1 registration, §7.2 authentication). Pure: the caller
/// issues and consumes the challenge, and stores the credential and its counter.
public struct WebAuthnRelyingParty: Sendable, Hashable {
    /// Whether the authenticator must verify the user (biometrics, a PIN), not only see them.
    public enum UserVerification: Sendable, Hashable {
        /// UV must be set: the default, since a passkey stands in for the phone's Face ID.
        case required
        /// UV is read and reported, not required (a security key without a PIN).
        case preferred
    }

    /// The RP ID: a registrable domain the origins belong to (`example.com`).
    public var id: String
    /// Every origin a ceremony may come from, exactly as the client writes it
    /// (`https://example.com`, `http://localhost:8080`, `android:apk-key-hash:…`).
    public var origins: Set<String>
    public var userVerification: UserVerification
    /// False: only device-bound credentials (BE = 0) register and sign in; a synced passkey is
    /// refused as `backupState`.
    public var allowsSyncedCredentials: Bool
    /// The roots each attestation format's certificates must lead to.
    public var attestationRoots: AttestationRoots

    public init(
        id: String, origins: Set<String>, userVerification: UserVerification = .required, allowsSyncedCredentials: Bool = true,
        attestationRoots: AttestationRoots = AttestationRoots()
    ) {
        self.id = id
        self.origins = origins
        self.userVerification = userVerification
        self.allowsSyncedCredentials = allowsSyncedCredentials
        self.attestationRoots = attestationRoots
    }

    /// The roots of the attestation formats whose certificates a relying party can anchor.
    public struct AttestationRoots: Sendable, Hashable {
        /// `apple`: the Apple WebAuthn Root CA.
        public var apple: [Certificate]
        /// `android-key`: Google's hardware attestation roots, matched by public key.
        public var androidKey: [Certificate]
        /// `packed` certificates: a vendor's roots (from the FIDO Metadata Service, say). Empty,
        /// the default: a packed certificate's signature and fields are checked, and it is
        /// reported as ``AttestationTrust/unanchored``.
        public var packed: [Certificate]

        public init(
            apple: [Certificate] = [TrustAnchors.appleWebAuthnRoot],
            androidKey: [Certificate] = TrustAnchors.googleHardwareAttestationRoots,
            packed: [Certificate] = []
        ) {
            self.apple = apple
            self.androidKey = androidKey
            self.packed = packed
        }
    }

    /// What a verified attestation statement proves about the authenticator.
    public enum AttestationTrust: String, Sendable, Hashable, Codable {
        /// `none`: nothing (every synced passkey registers so).
        case none
        /// `packed` self attestation: the credential's key signed its own registration.
        case selfAttested
        /// Certificates whose signature and fields hold, without a root to anchor them.
        case unanchored
        /// Certificates leading to one of the relying party's roots for the format.
        case anchored
    }

    /// What a verified authentication tells the relying party to store and show.
    public struct VerifiedAssertion: Sendable, Hashable {
        /// The counter to store for the credential.
        public let signCount: UInt32
        public let userVerified: Bool
        public let backupEligible: Bool
        public let backedUp: Bool
    }

    /// What a verified registration creates.
    public struct VerifiedRegistration: Sendable {
        public let credentialID: Data
        public let publicKey: COSEKey
        /// The key's COSE encoding, to store and read back with ``COSEKey/init(_:)``.
        public let publicKeyBytes: Data
        public let signCount: UInt32
        public let aaguid: Data
        /// The attestation statement's format (`none`, `packed`, `apple`, `android-key`).
        public let format: String
        /// What the statement proves: whether its certificates lead to a root.
        public let attestation: AttestationTrust
        /// The attestation certificates, leaf first (empty for `none` and self attestation).
        public let attestationCertificates: [Certificate]
        public let userVerified: Bool
        public let backupEligible: Bool
        public let backedUp: Bool
    }

    /// Verifies an authentication (§7.2, steps 11–22) of the credential whose public key and
    /// stored counter the caller looked up by the response's credential id.
    public func verifyAssertion(
        clientDataJSON: Data, authenticatorData: Data, signature: Data, challenge: Data, publicKey: COSEKey, storedSignCount: UInt32
    ) throws(WebAuthnError) -> VerifiedAssertion {
        try checkClientData(clientDataJSON, type: "webauthn.get", challenge: challenge)
        let data = try WebAuthnAuthenticatorData(authenticatorData)
        guard data.attestedCredential == nil else {
            throw WebAuthnError(.malformed, "an assertion's authenticator data carries a credential")
        }
        try checkAuthenticatorData(data)
        let signed = authenticatorData + Data(SHA256.hash(data: clientDataJSON))
        guard publicKey.isValidSignature(signature, for: signed) else {
            throw WebAuthnError(.signature, "the signature does not verify with the credential's public key")
        }
        // §7.2 step 22: a counter that does not increase may mean a cloned authenticator. Both 0:
        // an authenticator that keeps no counter (most passkeys).
        if data.signCount != 0 || storedSignCount != 0, data.signCount <= storedSignCount {
            throw WebAuthnError(.signCount, "the signature counter \(data.signCount) is not above the stored \(storedSignCount)")
        }
        return VerifiedAssertion(
            signCount: data.signCount, userVerified: data.flags.contains(.userVerified),
            backupEligible: data.flags.contains(.backupEligible), backedUp: data.flags.contains(.backedUp))
    }

    /// Verifies a registration (§7.1, steps 5–26) whose attestation statement is `none`,
    /// `packed` (self attestation, or an attestation certificate), `apple` or `android-key`, with
    /// certificates checked at `time`. Other formats are refused as `attestationFormat`.
    public func verifyRegistration(clientDataJSON: Data, attestationObject: Data, challenge: Data, at time: Date)
        async throws(WebAuthnError)
        -> VerifiedRegistration
    {
        try checkClientData(clientDataJSON, type: "webauthn.create", challenge: challenge)
        let object: CBOR
        do { object = try CBOR(decoding: attestationObject) } catch {
            throw WebAuthnError(.malformed, "the attestation object is not CBOR")
        }
        guard let format = object["fmt"]?.textValue, let statement = object["attStmt"], let authData = object["authData"]?.bytesValue
        else { throw WebAuthnError(.malformed, "the attestation object lacks fmt, attStmt or authData") }
        let data = try WebAuthnAuthenticatorData(authData)
        guard let credential = data.attestedCredential else {
            throw WebAuthnError(.malformed, "a registration's authenticator data carries no credential")
        }
        try checkAuthenticatorData(data)
        let clientDataHash = Data(SHA256.hash(data: clientDataJSON))
        var certificates: [Certificate] = []
        var trust = AttestationTrust.anchored
        switch format {
        case "none":
            guard case .map(let entries) = statement, entries.isEmpty else {
                throw WebAuthnError(.attestation, "a none attestation statement is not empty")
            }
            trust = .none
        case "packed":
            guard
                let chain = try PackedAttestation.verify(
                    statement, authenticatorData: authData, clientDataHash: clientDataHash, credential: credential)
            else {
                trust = .selfAttested
                break
            }
            certificates = chain
            if attestationRoots.packed.isEmpty {
                trust = .unanchored
            } else {
                _ = try await WebAuthnCertificates.anchored(chain, roots: attestationRoots.packed, at: time)
            }
        case "apple":
            certificates = try await AppleAnonymousAttestation.verify(
                statement, authenticatorData: authData, clientDataHash: clientDataHash, credential: credential,
                roots: attestationRoots.apple, at: time)
        case "android-key":
            certificates = try AndroidKeyWebAuthnAttestation.verify(
                statement, authenticatorData: authData, clientDataHash: clientDataHash, credential: credential,
                roots: attestationRoots.androidKey, at: time)
        default:
            throw WebAuthnError(.attestationFormat, "attestation format \(format) is not accepted")
        }
        return VerifiedRegistration(
            credentialID: credential.credentialID, publicKey: credential.publicKey, publicKeyBytes: credential.publicKeyBytes,
            signCount: data.signCount, aaguid: credential.aaguid, format: format, attestation: trust,
            attestationCertificates: certificates,
            userVerified: data.flags.contains(.userVerified),
            backupEligible: data.flags.contains(.backupEligible), backedUp: data.flags.contains(.backedUp))
    }

    private func checkClientData(_ json: Data, type: String, challenge: Data) throws(WebAuthnError) {
        let client = try WebAuthnClientData(json: json)
        guard client.type == type else { throw WebAuthnError(.type, "clientDataJSON's type is \(client.type), not \(type)") }
        // Constant time: the expected challenge is a secret until the ceremony ends.
        guard constantTimeEquals(client.challenge, challenge) else {
            throw WebAuthnError(.challenge, "clientDataJSON's challenge is not the one issued")
        }
        guard origins.contains(client.origin) else {
            throw WebAuthnError(.origin, "the origin \(client.origin) is not the relying party's")
        }
        guard !client.crossOrigin else { throw WebAuthnError(.origin, "the ceremony ran in a cross-origin frame") }
    }

    private func checkAuthenticatorData(_ data: WebAuthnAuthenticatorData) throws(WebAuthnError) {
        guard data.relyingPartyIDHash == Data(SHA256.hash(data: Data(id.utf8))) else {
            throw WebAuthnError(.relyingParty, "the RP ID hash is not SHA-256 of \(id)")
        }
        guard data.flags.contains(.userPresent) else { throw WebAuthnError(.userPresence, "the user-present flag is not set") }
        if userVerification == .required, !data.flags.contains(.userVerified) {
            throw WebAuthnError(.userVerification, "the user-verified flag is not set")
        }
        if data.flags.contains(.backedUp), !data.flags.contains(.backupEligible) {
            throw WebAuthnError(.backupState, "a backed-up credential that is not backup-eligible")
        }
        if !allowsSyncedCredentials, data.flags.contains(.backupEligible) {
            throw WebAuthnError(.backupState, "a synced (backup-eligible) credential where device-bound ones are required")
        }
    }
}
