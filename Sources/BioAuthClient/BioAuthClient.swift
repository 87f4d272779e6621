import BioAuth
import BioAuthCore
import Crypto
import Foundation

/// The app's half of the conversation with `bioauth-server`: enrolment, biometric login, step-up
/// approval, re-enrolment after an enrollment change, devices, logout — with the device key in the
/// Secure Enclave and the session in the keychain.
///
/// Runs unchanged on an iPhone (`DevicePlatform.system` from `BioAuthApple`), on a Mac, and on
/// Linux against `EmulatedDevice`. Each login and approval shows exactly one biometric prompt
/// (unless a ``BiometricPolicy`` says otherwise), and only after the server's challenge was checked
/// against what this client asked for.
public actor BioAuthClient {
    public struct Configuration: Sendable {
        /// The server's relying-party id (its `--relying-party`): a challenge for another is refused.
        public var relyingPartyID: String
        /// The application tag of the Secure Enclave key.
        public var keyTag: KeyTag
        /// The keychain service of the registration and session items.
        public var keychainService: ServiceName
        public var biometricPolicy: BiometricPolicy
        /// The prompt of a login.
        public var loginPrompt: Prompt
        /// The prompt of the enrolment's proof of possession.
        public var enrolmentPrompt: Prompt
        /// The longest a challenge may live (the server's default is 60 s); a longer one is refused.
        public var maximumChallengeLifetime: TimeInterval
        /// How far this device's clock may be from the server's.
        public var clockSkew: TimeInterval
        public var clock: any WallClock
        /// The application tag of the second Secure Enclave key, which signs DPoP proofs without a
        /// prompt (`DeviceProofKey`); nil: no DPoP, tokens stay bearer tokens.
        public var proofKeyTag: KeyTag? = "dev.bioauth.dpop-key"

        public init(
            relyingPartyID: String, keyTag: KeyTag = "dev.bioauth.device-key", keychainService: ServiceName = "dev.bioauth.client",
            biometricPolicy: BiometricPolicy = .always, loginPrompt: Prompt = Prompt(reason: "Sign in"),
            enrolmentPrompt: Prompt = Prompt(reason: "Set up Face ID sign-in"), maximumChallengeLifetime: TimeInterval = 300,
            clockSkew: TimeInterval = 300, clock: any WallClock = SystemWallClock()
        ) {
            self.relyingPartyID = relyingPartyID
            self.keyTag = keyTag
            self.keychainService = keychainService
            self.biometricPolicy = biometricPolicy
            self.loginPrompt = loginPrompt
            self.enrolmentPrompt = enrolmentPrompt
            self.maximumChallengeLifetime = maximumChallengeLifetime
            self.clockSkew = clockSkew
            self.clock = clock
        }
    }

    public nonisolated let configuration: Configuration
    public nonisolated let api: ServerAPI
    /// The Secure Enclave key this client signs with.
    public nonisolated let signer: BiometricSigner
    let platform: DevicePlatform
    let storage: CredentialStorage
    /// The authenticated context a ``BiometricPolicy`` other than `.always` keeps, and when it was evaluated.
    var reusable: (context: any AuthenticationContext, since: Date)?
    /// The domain state of the context the last prompt evaluated: what an enrolment records where
    /// the platform gives none before an evaluation.
    var evaluatedDomainState: Data?
    /// The refresh in flight: concurrent ``accessToken(minTTL:)`` callers await this one.
    var refreshing: Task<Result<AccessToken, ClientError>, Never>?
    /// Subscribers of ``credentialStates()`` and the state they were last told.
    var observers: [UUID: AsyncStream<CredentialState>.Continuation] = [:]
    var publishedState: CredentialState?

    public init(configuration: Configuration, platform: DevicePlatform, transport: any BioAuthTransport) {
        self.configuration = configuration
        self.platform = platform
        api = ServerAPI(
            transport: transport,
            dpop: configuration.proofKeyTag.map { DPoPProver(key: DeviceProofKey(platform: platform, tag: $0), clock: configuration.clock) }
        )
        signer = BiometricSigner(platform: platform, tag: configuration.keyTag)
        storage = CredentialStorage(keychain: platform.keychain, service: configuration.keychainService.rawValue)
    }

    /// A client of the server at `url` over `URLSession`.
    public init(server url: URL, relyingPartyID: String, platform: DevicePlatform) {
        self.init(
            configuration: Configuration(relyingPartyID: relyingPartyID), platform: platform, transport: URLSessionTransport(baseURL: url))
    }

    // MARK: - Primary login (the server's built-in accounts)

    /// Creates an account on a server that allows sign-up (the demo's built-in accounts).
    public func signUp(username: String, password: String) async throws(ClientError) {
        _ = try await api.createUser(Wire.Credentials(username: username, password: password))
    }

    /// A password login with the server's built-in accounts. The session stays in memory.
    ///
    /// After strangers' wrong passwords, a login from a network where the user never signed in
    /// waits (``ClientError/Code/rateLimited`` with the real wait): ask for a sign-in code
    /// (``requestSignInCode(username:)``), which reaches the user by mail or text, and pass it as
    /// `signInCode`.
    public func signIn(username: String, password: String, signInCode: String? = nil) async throws(ClientError) -> PrimarySession {
        let session = try await api.passwordLogin(Wire.PasswordLogin(username: username, password: password, signInCode: signInCode))
        return PrimarySession(userID: session.userId, token: BearerToken(session.token), expiresAt: Date(seconds: session.expiresAt))
    }

    /// Asks the server to send `username` a sign-in code for a password login from this network
    /// (15 minutes, once). The answer is the same whether or not the user exists.
    public func requestSignInCode(username: String) async throws(ClientError) {
        try await api.requestSignInCode(Wire.SignInCodeRequest(username: username))
    }

    /// A signed login or step-up with the genuine app's word, when the server recorded an attested
    /// key for the device: the App Attest assertion over ``AttestationBinding/assertionHash(_:signature:)``
    /// — this message and this signature. When that key cannot assert (it is gone with a reinstall)
    /// or `reattesting`, a new App Attest key attested over this message and the device key
    /// (``attest(_:message:)``) goes instead, and its id comes back to be kept once the server took
    /// it (`docs/Attestation.md`, "Re-attestation"). Without App Attest the body goes as it is: the
    /// server's policy decides.
    func asserting(_ signed: SignedProof, _ registration: Registration, reattesting: Bool = false) async -> (
        body: Wire.SignedChallenge, newKeyID: Data?
    ) {
        var body = signed.body
        guard let keyID = registration.appAttestKeyID, let service = platform.appAttest, service.isSupported else { return (body, nil) }
        if !reattesting,
            let assertion = try? await service.generateAssertion(
                keyID, clientDataHash: AttestationBinding.assertionHash(signed.message, signature: signed.der))
        {
            body.appAttestAssertion = Base64URL.encode(assertion)
            return (body, nil)
        }
        guard let key = try? signer.publicKey(), let attested = await attest(key, message: signed.message) else { return (body, nil) }
        body.appAttestKeyId = Base64URL.encode(attested.keyID)
        body.appAttestation = Base64URL.encode(attested.object)
        return (body, attested.keyID)
    }

    /// Keeps the App Attest key the server just recorded for this device in place of the lost one.
    func keep(newAppAttestKey keyID: Data?, _ registration: Registration) {
        guard let keyID else { return }
        try? storage.save(
            Registration(
                userID: registration.userID, deviceID: registration.deviceID, deviceName: registration.deviceName, appAttestKeyID: keyID))
    }

    // MARK: - Login and approval

    /// A biometric login: the server's challenge, checked, signed after one prompt. The session is
    /// kept in the keychain (`WhenUnlockedThisDeviceOnly`) for ``approve(operation:reason:)`` and
    /// the other calls.
    ///
    /// - Throws: ``ClientError/Code/credentialsUnavailable`` while the device is locked (nothing
    ///   is sent, nothing forgotten); ``ClientError/Code/reenrolmentRequired`` when the key can no
    ///   longer sign (an enrollment change), found without a prompt where the domain state tells.
    @discardableResult
    public func logIn() async throws(ClientError) -> DeviceSession {
        defer { publishState() }
        _ = try storage.session()  // a locked device refuses this read: stop before the server opens a session
        let registration = try enrolled()
        let challenge = try await api.loginChallenge(
            Wire.LoginChallengeRequest(userId: registration.userID, deviceId: registration.deviceID))
        let expectation = ChallengeExpectation(
            purpose: .login, relyingPartyID: configuration.relyingPartyID, userID: registration.userID, deviceID: registration.deviceID)
        let signed = try await sign(challenge, expecting: expectation, prompt: configuration.loginPrompt, reusing: true)
        let (body, newKeyID) = await asserting(signed, registration)
        // A device enrolled before it had a proof key gets one now: its sessions are then bound.
        if let proofKey = api.dpop?.key, !proofKey.hasKey { _ = try? proofKey.replaceKey() }
        let session: Wire.Session
        do { session = try await api.finishLogin(body) } catch  where newKeyID == nil && Self.assertionKeyUnknown(error, registration) {
            // The server does not know this app's key (its records were restored, or this key was
            // made after a reinstall): the genuine app attests a new one, after one more prompt.
            return try await logIn(reattesting: registration)
        }
        keep(newAppAttestKey: newKeyID, registration)
        return try saved(session, registration)
    }

    /// A login whose finish carries a new App Attest key's attestation instead of an assertion.
    private func logIn(reattesting registration: Registration) async throws(ClientError) -> DeviceSession {
        let challenge = try await api.loginChallenge(
            Wire.LoginChallengeRequest(userId: registration.userID, deviceId: registration.deviceID))
        let expectation = ChallengeExpectation(
            purpose: .login, relyingPartyID: configuration.relyingPartyID, userID: registration.userID, deviceID: registration.deviceID)
        let signed = try await sign(challenge, expecting: expectation, prompt: configuration.loginPrompt, reusing: true)
        let (body, newKeyID) = await asserting(signed, registration, reattesting: true)
        let session = try await api.finishLogin(body)
        keep(newAppAttestKey: newKeyID, registration)
        return try saved(session, registration)
    }

    /// Whether the server refused the assertion of an App Attest device as one it cannot check
    /// with the key it holds (`missing` or `signature`): what a re-attestation answers.
    static func assertionKeyUnknown(_ error: ClientError, _ registration: Registration) -> Bool {
        registration.appAttestKeyID != nil && error.code == .attestationRejected && error.field == "appAttestAssertion"
            && ["missing", "signature"].contains(error.reason ?? "")
    }

    private func saved(_ session: Wire.Session, _ registration: Registration) throws(ClientError) -> DeviceSession {
        guard session.userId == registration.userID, session.deviceId == registration.deviceID, let deviceSession = DeviceSession(session)
        else {
            throw ClientError(.protocolViolation)
        }
        try storage.save(session)
        return deviceSession
    }

    /// Approves one operation: the server hashes `operation` (UTF-8) into a challenge, the client
    /// checks the hash against the text it shows, and the key signs after one prompt. Hand the
    /// approval to your backend, which redeems it before acting.
    ///
    /// `reason` is the prompt's text; the operation itself by default.
    public func approve(operation: String, reason: String? = nil) async throws(ClientError) -> Approval {
        let registration = try enrolled()
        let session = try currentSession()
        let operationBytes = Base64URL.encode(Data(operation.utf8))
        let challenge = try await authorized { () async throws(ClientError) in
            try await api.stepUpChallenge(
                Wire.StepUpChallengeRequest(deviceId: registration.deviceID, operation: operationBytes), token: session)
        }
        let expectation = ChallengeExpectation(
            purpose: .stepUp, relyingPartyID: configuration.relyingPartyID, userID: registration.userID, deviceID: registration.deviceID,
            operation: operation)
        let signed = try await sign(challenge, expecting: expectation, prompt: Prompt(reason: reason ?? operation), reusing: true)
        let (body, newKeyID) = await asserting(signed, registration)
        let approval = try await authorized { () async throws(ClientError) in try await api.finishStepUp(body, token: session) }
        keep(newAppAttestKey: newKeyID, registration)
        return Approval(operation: operation, token: BearerToken(approval.approval), expiresAt: Date(seconds: approval.expiresAt))
    }

    /// Ends the window of a ``BiometricPolicy`` other than `.always`: the next signature prompts.
    public func endBiometricSession() {
        reusable?.context.invalidate()
        reusable = nil
    }

    // MARK: - Internals

    func currentSession() throws(ClientError) -> BearerToken {
        guard let session = try session() else { throw ClientError(.sessionExpired) }
        return session.token
    }

    /// Runs a session-authenticated call; a 401 means the session is gone: it is forgotten here too.
    func authorized<T>(_ body: () async throws(ClientError) -> T) async throws(ClientError) -> T {
        do { return try await body() } catch  where error.code == .authenticationFailed {
            try? storage.forgetSession()
            publishState()
            throw ClientError(.sessionExpired)
        }
    }

    /// A checked challenge, signed: the body to send, the message signed and the DER signature.
    typealias SignedProof = (body: Wire.SignedChallenge, message: SignedMessage, der: Data)

    /// Checks the challenge, then signs its message: one prompt, or none inside a policy's window.
    func sign(_ challenge: ChallengeEnvelope, expecting expectation: ChallengeExpectation, prompt: Prompt, reusing: Bool)
        async throws(ClientError) -> SignedProof
    {
        let message = try expectation.check(
            challenge, now: configuration.clock.now(), maximumLifetime: configuration.maximumChallengeLifetime,
            clockSkew: configuration.clockSkew)
        let signature: P256.Signing.ECDSASignature
        do { signature = try await signMessage(message, prompt: prompt, reusing: reusing) } catch {
            if error.code == .keyUnavailable { keyFailedAfterMatch() }
            throw ClientError(device: error)
        }
        let der = signature.derRepresentation
        return (Wire.SignedChallenge(challengeId: challenge.challengeId, signature: Base64URL.encode(der)), message, der)
    }

    func signMessage(_ message: SignedMessage, prompt: Prompt, reusing: Bool) async throws(BioAuthError) -> P256.Signing.ECDSASignature {
        guard reusing, let context = reusableContext() else { return try await signWithPrompt(message, prompt: prompt, keep: reusing) }
        do { return try signer.sign(message.encoded, context: context) } catch {
            endBiometricSession()
            guard error.code != .keyUnavailable else { throw error }
            return try await signWithPrompt(message, prompt: prompt, keep: true)
        }
    }

    func signWithPrompt(_ message: SignedMessage, prompt: Prompt, keep: Bool) async throws(BioAuthError) -> P256.Signing.ECDSASignature {
        // A refusal after a match under another domain state than the key's is its death, in
        // whichever error domain the device reports it (``BiometricSigner/signAfterEvaluation(_:context:enrolledDomainState:)``).
        let enrolled = (try? storage.keyRecord())?.domainState
        guard keep, configuration.biometricPolicy != .always else {
            let signed = try await signer.sign(message.encoded, prompt: prompt, enrolledDomainState: enrolled)
            evaluatedDomainState = signed.domainState
            return signed.signature
        }
        let context = try await platform.context(for: signer.policy, prompt: prompt)
        evaluatedDomainState = context.evaluatedPolicyDomainState
        do {
            let signature = try signer.signAfterEvaluation(message.encoded, context: context, enrolledDomainState: enrolled)
            reusable = (context, configuration.clock.now())
            return signature
        } catch {
            context.invalidate()
            throw error
        }
    }

    func reusableContext() -> (any AuthenticationContext)? {
        guard let reusable else { return nil }
        switch configuration.biometricPolicy {
        case .always: return nil
        case .appLifecycle: return reusable.context
        case .session(let timeout):
            if configuration.clock.now().timeIntervalSince(reusable.since) <= timeout { return reusable.context }
            endBiometricSession()
            return nil
        }
    }
}
