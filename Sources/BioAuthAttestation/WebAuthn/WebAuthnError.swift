/// Why a WebAuthn ceremony was refused: the check that failed and a sentence for the operator.
/// Never carries a signature, a challenge or a key.
public struct WebAuthnError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The check that failed. Extensible: a new check is a new static value.
    public struct Check: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        /// The response is not what the specification describes (bytes, JSON, CBOR, lengths).
        public static let malformed = Check("malformed")
        /// `clientDataJSON.type` is not the ceremony's (`webauthn.create` or `webauthn.get`).
        public static let type = Check("type")
        /// `clientDataJSON.challenge` is not the challenge the server issued.
        public static let challenge = Check("challenge")
        /// `clientDataJSON.origin` is not one of the relying party's origins, or the ceremony ran
        /// in a cross-origin frame.
        public static let origin = Check("origin")
        /// The authenticator data's RP ID hash is not SHA-256 of the relying party's id.
        public static let relyingParty = Check("relyingParty")
        /// The user-present flag is not set.
        public static let userPresence = Check("userPresence")
        /// User verification was required and the user-verified flag is not set.
        public static let userVerification = Check("userVerification")
        /// The backup flags are inconsistent (backed up but not backup-eligible), or a
        /// backup-eligible (synced) credential where the relying party requires device-bound ones.
        public static let backupState = Check("backupState")
        /// The credential's public key is not a COSE key of an accepted algorithm.
        public static let algorithm = Check("algorithm")
        /// The signature does not verify with the credential's public key.
        public static let signature = Check("signature")
        /// The signature counter did not increase: the credential may have been cloned.
        public static let signCount = Check("signCount")
        /// The attestation statement's format is not one this verifier accepts.
        public static let attestationFormat = Check("attestationFormat")
        /// The attestation statement does not hold (its signature, its certificate).
        public static let attestation = Check("attestation")
        /// The attestation certificates do not lead to a root the relying party trusts for the
        /// statement's format, at the verification time.
        public static let certificateChain = Check("certificateChain")
    }

    public let check: Check
    public let reason: String

    public init(_ check: Check, _ reason: String) {
        self.check = check
        self.reason = reason
    }

    public var description: String { "WebAuthnError.\(check) (\(reason))" }
}
