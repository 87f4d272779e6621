/// An attestation that does not prove what it must: names the check that failed, never the bytes.
public struct AttestationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which check failed. Extensible: new checks may be added in minor releases.
    public struct Check: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        /// The attestation or assertion is not in its format (CBOR, DER, lengths).
        public static let malformed = Check("malformed")
        /// App Attest: the format is not `apple-appattest`.
        public static let format = Check("format")
        /// The certificate chain does not lead to a trusted root at the verification time.
        public static let certificateChain = Check("certificateChain")
        /// App Attest: the nonce in the leaf is not SHA-256(authenticatorData ‖ clientDataHash).
        public static let nonce = Check("nonce")
        /// App Attest: the key id is not SHA-256 of the leaf's public key.
        public static let keyIdentifier = Check("keyIdentifier")
        /// App Attest: the credential id in the authenticator data is not the key id.
        public static let credentialIdentifier = Check("credentialIdentifier")
        /// The app (App Attest rpIdHash; Android package name) is not one the deployment accepts.
        public static let appIdentifier = Check("appIdentifier")
        /// App Attest: the environment (aaguid) is not one the deployment accepts.
        public static let environment = Check("environment")
        /// App Attest: an attestation's counter is not 0, or an assertion's is not above the last one.
        public static let counter = Check("counter")
        /// An assertion's signature does not verify with the attested key.
        public static let signature = Check("signature")
        /// The attested key is not the key being enrolled (or not a P-256 key).
        public static let publicKey = Check("publicKey")
        /// Android: the attestation challenge is not the one the server expects.
        public static let challenge = Check("challenge")
        /// Android: attestation or KeyMint security level is Software (or below what the policy needs).
        public static let securityLevel = Check("securityLevel")
        /// Android: a certificate of the chain is on the attestation status list (revoked or suspended).
        public static let certificateStatus = Check("certificateStatus")
        /// Android: no attestation status list is loaded, or the one loaded is too old to tell (the server's
        /// state, not the device's: answered 503, nothing counted).
        public static let statusUnknown = Check("statusUnknown")
        /// Android: the key was imported, not generated in the secure hardware (`origin` not GENERATED):
        /// its private half existed outside it.
        public static let keyOrigin = Check("keyOrigin")
        /// Android: the key may not sign (`purpose` without SIGN).
        public static let keyPurpose = Check("keyPurpose")
        /// Android: the hardware does not say the key is an EC key (`algorithm` not EC).
        public static let keyAlgorithm = Check("keyAlgorithm")
        /// Android: the hardware does not say the key is on P-256 (`ecCurve` not P_256).
        public static let keyCurve = Check("keyCurve")
        /// Android: the app's signing certificate digest is not one the deployment accepts.
        public static let signingCertificate = Check("signingCertificate")
        /// Android: the key is not usable only after a biometric match on every use.
        public static let userAuthentication = Check("userAuthentication")
        /// Android: an authorisation the policy refuses (allowWhileOnBody) or requires (unlockedDeviceRequired).
        public static let keyAuthorization = Check("keyAuthorization")
        /// Android: the device did not boot a verified, locked system.
        public static let verifiedBoot = Check("verifiedBoot")
        /// Android: the OS patch level is older than the policy allows.
        public static let patchLevel = Check("patchLevel")
    }

    public let check: Check
    /// A fixed explanation for people; never contains attestation bytes.
    public let reason: String

    public init(_ check: Check, _ reason: String) {
        self.check = check
        self.reason = reason
    }

    public var description: String { "attestation refused (\(check)): \(reason)" }
}
