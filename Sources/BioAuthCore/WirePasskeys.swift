import Foundation

// The passkey (WebAuthn) ceremonies' bodies. The options are the WebAuthn Level 3 JSON forms
// (`PublicKeyCredentialCreationOptionsJSON`, `PublicKeyCredentialRequestOptionsJSON`) that a page
// hands to `PublicKeyCredential.parseCreationOptionsFromJSON` / `parseRequestOptionsFromJSON`; the
// credentials are what `PublicKeyCredential.toJSON()` returns (binary values base64url). Fields a
// browser adds that the server does not read (`clientExtensionResults`, `authenticatorAttachment`,
// `transports`, …) are accepted inside `credential` and ignored.

extension Wire {
    /// `POST /v1/passkeys/registration/challenge`: the name the passkey gets in the device list.
    public struct PasskeyRegistrationChallengeRequest: WireRequest, Hashable {
        public var name: String
        public init(name: String) { self.name = name }
        public enum CodingKeys: String, CodingKey, CaseIterable { case name }
    }

    /// `POST /v1/passkeys/login/challenge`: whose passkey signs in.
    public struct PasskeyLoginChallengeRequest: WireRequest, Hashable {
        public var username: String
        public init(username: String) { self.username = username }
        public enum CodingKeys: String, CodingKey, CaseIterable { case username }
    }

    /// A credential descriptor (`PublicKeyCredentialDescriptorJSON`).
    public struct PasskeyDescriptor: Codable, Sendable, Hashable {
        public var type: String
        /// The credential id, base64url.
        public var id: String
        public init(id: String) {
            type = "public-key"
            self.id = id
        }
    }

    /// The answer to a registration challenge: the challenge's id, to send back, and the options.
    public struct PasskeyCreationOptions: Codable, Sendable, Hashable, WireRedacted {
        public struct RelyingParty: Codable, Sendable, Hashable {
            public var id: String
            public var name: String
        }
        public struct User: Codable, Sendable, Hashable {
            /// The user handle, base64url: random bytes that name the account to the
            /// authenticator without identifying the person.
            public var id: String
            public var name: String
            public var displayName: String
        }
        public struct Parameter: Codable, Sendable, Hashable {
            public var type: String
            public var alg: Int
        }
        public struct Selection: Codable, Sendable, Hashable {
            public var residentKey: String
            public var requireResidentKey: Bool
            public var userVerification: String
        }
        public struct Options: Codable, Sendable, Hashable {
            public var rp: RelyingParty
            public var user: User
            /// base64url.
            public var challenge: String
            public var pubKeyCredParams: [Parameter]
            /// Milliseconds.
            public var timeout: Int
            public var excludeCredentials: [PasskeyDescriptor]
            public var authenticatorSelection: Selection
            public var attestation: String
        }
        public var challengeId: String
        public var publicKey: Options
        /// The challenge and its id are a pending proof's: never in a description.
        public var visibleFields: KeyValuePairs<String, Any> { ["relyingPartyId": publicKey.rp.id, "user": publicKey.user.name] }

        public init(
            challengeId: String, relyingPartyID: String, relyingPartyName: String, userHandle: Data, userName: String, challenge: Data,
            timeout: Int, excluded: [Data], userVerification: String, algorithms: [Int]
        ) {
            self.challengeId = challengeId
            publicKey = Options(
                rp: RelyingParty(id: relyingPartyID, name: relyingPartyName),
                user: User(id: Base64URL.encode(userHandle), name: userName, displayName: userName),
                challenge: Base64URL.encode(challenge),
                // What the verifier accepts, in the order of preference (`COSEKey.Algorithm`).
                pubKeyCredParams: algorithms.map { Parameter(type: "public-key", alg: $0) }, timeout: timeout,
                excludeCredentials: excluded.map { PasskeyDescriptor(id: Base64URL.encode($0)) },
                authenticatorSelection: Selection(residentKey: "required", requireResidentKey: true, userVerification: userVerification),
                attestation: "direct")
        }
    }

    /// The answer to a login challenge: the challenge's id, to send back, and the options.
    public struct PasskeyRequestOptions: Codable, Sendable, Hashable, WireRedacted {
        public struct Options: Codable, Sendable, Hashable {
            /// base64url.
            public var challenge: String
            public var rpId: String
            /// Milliseconds.
            public var timeout: Int
            public var userVerification: String
            /// Empty: the user's discoverable passkeys are offered, and the list never says whether
            /// a username exists.
            public var allowCredentials: [PasskeyDescriptor]
        }
        public var challengeId: String
        public var publicKey: Options
        /// The challenge and its id are a pending proof's: never in a description.
        public var visibleFields: KeyValuePairs<String, Any> { ["relyingPartyId": publicKey.rpId] }

        public init(challengeId: String, relyingPartyID: String, challenge: Data, timeout: Int, userVerification: String) {
            self.challengeId = challengeId
            publicKey = Options(
                challenge: Base64URL.encode(challenge), rpId: relyingPartyID, timeout: timeout, userVerification: userVerification,
                allowCredentials: [])
        }
    }

    /// A `PublicKeyCredential` as `toJSON()` writes it, with its ceremony's `response`.
    public struct PublicKeyCredentialJSON<Response: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
        /// The credential id, base64url (`rawId` again).
        public var id: String
        public var rawId: String
        /// `public-key`.
        public var type: String
        public var response: Response
        public init(id: String, response: Response) {
            self.id = id
            rawId = id
            type = "public-key"
            self.response = response
        }
    }

    /// What `navigator.credentials.create()` answers (`AuthenticatorAttestationResponse`).
    public struct AttestationResponse: Codable, Sendable, Hashable {
        public var clientDataJSON: String
        public var attestationObject: String
        public init(clientDataJSON: String, attestationObject: String) {
            self.clientDataJSON = clientDataJSON
            self.attestationObject = attestationObject
        }
    }

    /// What `navigator.credentials.get()` answers (`AuthenticatorAssertionResponse`).
    public struct AssertionResponse: Codable, Sendable, Hashable {
        public var clientDataJSON: String
        public var authenticatorData: String
        public var signature: String
        /// The user handle the credential was created with (the user id's UTF-8 bytes), base64url.
        public var userHandle: String?
        public init(clientDataJSON: String, authenticatorData: String, signature: String, userHandle: String?) {
            self.clientDataJSON = clientDataJSON
            self.authenticatorData = authenticatorData
            self.signature = signature
            self.userHandle = userHandle
        }
    }

    /// A `PublicKeyCredential` from `navigator.credentials.create()`.
    public typealias PasskeyRegistrationCredential = PublicKeyCredentialJSON<AttestationResponse>
    /// A `PublicKeyCredential` from `navigator.credentials.get()`.
    public typealias PasskeyAuthenticationCredential = PublicKeyCredentialJSON<AssertionResponse>

    /// `POST /v1/passkeys/registration/finish`.
    public struct PasskeyRegistrationFinish: WireRequest, Hashable, WireRedacted {
        public var challengeId: String
        public var credential: PasskeyRegistrationCredential
        public init(challengeId: String, credential: PasskeyRegistrationCredential) {
            self.challengeId = challengeId
            self.credential = credential
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case challengeId, credential }
        /// The challenge id is the bearer of a pending proof, the credential holds a signature.
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }

    /// `POST /v1/passkeys/registration/complete`: the approved request that holds the passkey.
    public struct PasskeyRegistrationCompletion: WireRequest, Hashable {
        public var enrolmentRequestId: String
        public init(enrolmentRequestId: String) { self.enrolmentRequestId = enrolmentRequestId }
        public enum CodingKeys: String, CodingKey, CaseIterable { case enrolmentRequestId }
    }

    /// `POST /v1/passkeys/login/finish`.
    public struct PasskeyLoginFinish: WireRequest, Hashable, WireRedacted {
        public var challengeId: String
        public var credential: PasskeyAuthenticationCredential
        public init(challengeId: String, credential: PasskeyAuthenticationCredential) {
            self.challengeId = challengeId
            self.credential = credential
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case challengeId, credential }
        /// The challenge id is the bearer of a pending proof, the credential holds a signature.
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }
}
