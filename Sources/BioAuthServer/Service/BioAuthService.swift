import BioAuthAttestation
import BioAuthCore
import Foundation
import Logging
import Metrics

/// The BioAuth server, independent of any HTTP framework: demo primary login, device enrolment
/// with proof of possession, challenge–response login, step-up approvals, device and session
/// management, rate limits and an audit log, over one ``BioAuthStore``.
///
/// A facade: each method hands its request to the flow of its concern (`Account`,
/// `DeviceEnrolment`, `EnrolmentRequests`, `DeviceLogin`, `StepUp`, `Tokens`, `Backend`,
/// `Devices`, `Maintenance`). Challenges are 32 random bytes, expire after `challengeTTL` (checked
/// here, not only by the store), and are consumed atomically by the first attempt, whether it
/// verifies or not. Every verification failure throws the same `authenticationFailed` code; the
/// reason goes to the audit log and the logger.
public final class BioAuthService: Sendable {
    /// The store as it was given: writes through it skip the deployment's publishing rule, so
    /// only this package's code and tests reach it.
    package let store: any BioAuthStore
    public let configuration: ServerConfiguration
    public let clock: any WallClock
    /// Delivers recovery codes for enrolment requests; nil: only another device's approval adds a device.
    public let recoveryChannel: (any RecoveryChannel)?
    let context: FlowContext

    public convenience init(
        store: any BioAuthStore, configuration: ServerConfiguration = ServerConfiguration(), clock: any WallClock = SystemWallClock(),
        logger: Logger = .discarding("BioAuthServer"), metricsFactory: (any MetricsFactory)? = nil,
        recoveryChannel: (any RecoveryChannel)? = nil
    ) {
        self.init(
            store: store, configuration: configuration, clock: clock, logger: logger, metricsFactory: metricsFactory,
            recoveryChannel: recoveryChannel,
            passwordHashes: PasswordHashPool(policy: configuration.passwordHashing))
    }

    /// A service whose password hashing runs in `passwordHashes` (tests hold its threads).
    package init(
        store: any BioAuthStore, configuration: ServerConfiguration, clock: any WallClock, logger: Logger,
        metricsFactory: (any MetricsFactory)?,
        recoveryChannel: (any RecoveryChannel)?, passwordHashes: PasswordHashPool
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.recoveryChannel = recoveryChannel
        let windows = RateWindows(policy: configuration.rateLimits)
        let writer = PlanWriter(store: store, published: configuration.publishedEvents)
        context = FlowContext(
            store: store, writer: writer, configuration: configuration, clock: clock, recoveryChannel: recoveryChannel, logger: logger,
            windows: windows,
            requests: RequestLimiter(windows: windows, writer: writer), apiKeyRequests: ApiKeyLimiter(policy: configuration.rateLimits),
            failedRedemptions: RequestLimiter(
                windows: windows, limit: configuration.rateLimits.failedRedemptionsPerUser, writer: writer,
                subject: { .failedRedemptions($0) }),
            metrics: ServiceMetrics(factory: metricsFactory),
            accessTokens: AccessTokenIssuer(
                writer: writer, policy: configuration.tokens, relyingPartyID: configuration.relyingPartyID, clock: clock, logger: logger),
            passwordHashes: passwordHashes)
    }

    private var account: Account { Account(context: context) }
    private var enrolment: DeviceEnrolment { DeviceEnrolment(context: context) }
    private var enrolmentRequests: EnrolmentRequests { EnrolmentRequests(context: context) }
    private var login: DeviceLogin { DeviceLogin(context: context) }
    private var stepUp: StepUp { StepUp(context: context) }
    private var tokens: Tokens { Tokens(context: context) }
    private var backend: Backend { Backend(context: context) }
    private var deviceList: Devices { Devices(context: context) }
    private var removals: DeviceRemovals { DeviceRemovals(context: context) }
    private var maintenance: Maintenance { Maintenance(context: context) }

    // MARK: - Primary login and sessions

    /// Creates a demo user.
    public func createUser(username: String, password: String, request: RequestInfo) async throws(ServerError) {
        try await account.createUser(username: username, password: password, request: request)
    }

    /// Checks a username and password and opens a primary session (which may enrol devices).
    /// `signInCode`: one ``sendSignInCode(username:request:)`` sent for this address — the way
    /// past the back-off strangers' wrong passwords cause at addresses the user never signed in from.
    public func passwordLogin(username: String, password: String, signInCode: String? = nil, request: RequestInfo) async throws(ServerError)
        -> SessionGrant
    {
        try await account.passwordLogin(username: username, password: password, signInCode: signInCode, request: request)
    }

    /// Sends `username` a sign-in code for a password login from the requesting address, through
    /// the recovery channel (403 `noRecoveryChannel` without one); the same answer whether or not
    /// the user exists (429 past the requester's daily codes).
    public func sendSignInCode(username: String, request: RequestInfo) async throws(ServerError) {
        try await account.sendSignInCode(username: username, request: request)
    }

    /// A primary session for the user your own login proves (``PrimaryAuthenticator``): what a
    /// password login gives — it may enrol the user's first device; later ones need an approval.
    /// A credential that proves nobody counts against the sending address like a forged
    /// signature, and a locked-out address is refused before your login is asked.
    public func primaryLogin<Authenticator: PrimaryAuthenticator>(
        _ credential: Authenticator.Credential, with authenticator: Authenticator, request: RequestInfo
    ) async throws(ServerError) -> SessionGrant {
        try await account.primaryLogin(credential, with: authenticator, request: request)
    }

    /// The active session a bearer token names.
    /// - Throws: `authenticationFailed` for a missing, unknown, expired or revoked token, audited
    ///   (`session.rejected`) with its reason.
    public func authenticate(token: String?, request: RequestInfo) async throws(ServerError) -> SessionRecord {
        try await account.authenticate(token: token, request: request)
    }

    /// The user's active sessions.
    public func sessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [SessionRecord] {
        try await account.sessions(of: session, request: request)
    }

    /// Revokes one of the user's sessions (404 if it is not an active one of theirs).
    public func revokeSession(id: SessionID, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await account.revokeSession(id: id, by: session, request: request)
    }

    /// Revokes every session of the user (logging out everywhere); returns how many.
    public func revokeAllSessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Int {
        try await account.revokeAllSessions(of: session, request: request)
    }

    /// The user's security notices after `since` (``AuditKind/securityNotices``), newest first, at most 100.
    public func securityEvents(of session: SessionRecord, since: Date? = nil, request: RequestInfo) async throws(ServerError)
        -> [AuditEvent]
    {
        try await account.securityEvents(of: session, since: since, request: request)
    }

    /// A new built-in password, allowed by `approval`: a step-up approval of an enrolled device over
    /// `PasswordChangeText` for the session's user. Ends every other password session; 401 for
    /// an approval that does not fit, 404 `userId` for a user without a password account.
    public func changePassword(to newPassword: String, approval: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await PasswordChange(context: account.context).change(to: newPassword, approval: approval, session: session, request: request)
    }

    /// The user's own audit events, newest first.
    public func auditEvents(of session: SessionRecord, limit: Int = 100, request: RequestInfo) async throws(ServerError) -> [AuditEvent] {
        try await account.auditEvents(of: session, limit: limit, request: request)
    }

    // MARK: - Enrolment

    /// Starts enrolling a device key. Only a primary-login session or an enrolment grant may
    /// enrol; the key is bound to the challenge now and must sign it to prove possession.
    ///
    /// The user's first device ever needs nothing more. Any other device — and a new key for a
    /// device whose key was invalidated — needs, under the default ``EnrolmentPolicy``, an
    /// approved ``EnrolmentRequestRecord`` for exactly this name and key
    /// (``requestEnrolment(session:name:publicKey:replacesDeviceID:request:)``); without one this
    /// throws `approvalRequired`.
    ///
    /// With `replacesDeviceID`, this is the re-enrolment of a device whose key was invalidated (an
    /// enrollment change on the phone): on success the old key is replaced.
    public func beginRegistration(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: DeviceID?, enrolmentRequestID: EnrolmentRequestID? = nil,
        request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        try await enrolment.beginRegistration(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, enrolmentRequestID: enrolmentRequestID,
            request: request)
    }

    /// Finishes enrolment: the new key's signature over the registration challenge, with the
    /// key's attestation when the device has one (``AttestationPolicy``).
    public func finishRegistration(
        session: SessionRecord, challengeID: ChallengeID, signature: String, attestation: PresentedAttestation? = nil, request: RequestInfo
    ) async throws(ServerError) -> DeviceRecord {
        try await enrolment.finishRegistration(
            session: session, challengeID: challengeID, signature: signature, attestation: attestation, request: request)
    }

    /// A new challenge an Android device puts in its key's attestation (`setAttestationChallenge`)
    /// before enrolling that key in this session: random, for one registration finish, for
    /// ``AttestationPolicy/androidChallengeLifetime``.
    public func androidAttestationChallenge(session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Data {
        try await EnrolmentAttestation(context: enrolment.context).androidChallenge(for: session, request: request)
    }

    /// Most pending enrolment requests one requester (a client address, as limits count it) may
    /// have for a user: someone with the password cannot flood the owner's approval list from one
    /// address, and never fills a budget the owner's own request needs.
    public static let maxPendingEnrolmentRequests = 5

    /// Asks for an approval (or a recovery code) to enrol `publicKey` as `name`: the request
    /// appears on the user's other devices as the text of `EnrolmentApprovalText`, and its
    /// binding code goes to the requester only. Throws `conflict` if this enrolment needs no approval.
    public func requestEnrolment(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: DeviceID?, request: RequestInfo
    ) async throws(ServerError) -> NewEnrolmentRequest {
        try await enrolmentRequests.requestEnrolment(
            session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
    }

    /// The user's enrolment requests that still wait (unexpired, unapproved).
    public func pendingEnrolmentRequests(of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> [EnrolmentRequestRecord]
    {
        try await enrolmentRequests.pending(of: session, request: request)
    }

    /// One of the user's unexpired enrolment requests (404 otherwise).
    public func enrolmentRequest(id: EnrolmentRequestID, of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> EnrolmentRequestRecord
    {
        try await enrolmentRequests.read(id: id, of: session, request: request)
    }

    /// Approves an enrolment request with a step-up approval the approving device obtained for
    /// exactly the request's ``EnrolmentRequestRecord/approvalText``. The approval must come from
    /// another device of the user (one past its cool-down: others cannot step up at all).
    public func approveEnrolment(requestID: EnrolmentRequestID, approval: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await enrolmentRequests.approve(requestID: requestID, approval: approval, session: session, request: request)
    }

    /// Sends a new recovery code for the caller's own enrolment request through the deployment's
    /// ``RecoveryChannel`` (403 if none is configured), within ``EnrolmentPolicy/recoveryCodes``
    /// (429 with the real wait); 410 for a request that has ended.
    public func sendRecoveryCode(requestID: EnrolmentRequestID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await enrolmentRequests.sendRecoveryCode(requestID: requestID, session: session, request: request)
    }

    /// Approves the caller's own enrolment request with the recovery code it was sent. A wrong
    /// code is one of ``EnrolmentPolicy/maxRecoveryAttempts``, each the uniform 401; the last one
    /// ends the request, which then answers 410.
    public func recoverEnrolment(requestID: EnrolmentRequestID, code: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await enrolmentRequests.recover(requestID: requestID, code: code, session: session, request: request)
    }

    /// The owner ends one of their enrolment requests — pending, or approved and not yet used —
    /// from any enrolled device, in its cool-down too (403 for other sessions); 410 if it has ended already.
    public func cancelEnrolmentRequest(requestID: EnrolmentRequestID, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await enrolmentRequests.cancel(requestID: requestID, session: session, request: request)
    }

    // MARK: - The security delay

    /// Asks to remove one of the user's devices after ``EnrolmentPolicy/lostDeviceDelay``: the
    /// lost-phone case without another device. Sends a recovery code to the owner; the removal
    /// waits for it (``confirmDeviceRemoval(id:code:session:request:)``).
    public func requestDeviceRemoval(deviceID: DeviceID, session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> DeviceRemovalRecord
    {
        try await removals.request(deviceID: deviceID, session: session, request: request)
    }

    /// The recovery code for a removal this session asked for: schedules it.
    public func confirmDeviceRemoval(id: DeviceRemovalID, code: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
        -> DeviceRemovalRecord
    {
        try await removals.confirm(id: id, code: code, session: session, request: request)
    }

    /// The user's removals waiting for their code or their delay: what every device shows.
    public func deviceRemovals(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRemovalRecord] {
        try await removals.list(of: session, request: request)
    }

    /// Any enrolled device of the user ends an open removal: the device stays.
    public func cancelDeviceRemoval(id: DeviceRemovalID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await removals.cancel(id: id, session: session, request: request)
    }

    // MARK: - Login and tokens

    /// Issues a login challenge for a device. Answers the same way whether or not the device
    /// exists: the failure, if any, comes at `finishLogin(challengeID:signature:request:)`.
    public func beginLogin(userID: UserID, deviceID: DeviceID, request: RequestInfo) async throws(ServerError) -> ChallengeEnvelope {
        try await login.begin(userID: userID, deviceID: deviceID, request: request)
    }

    /// Verifies the device's signature over its login challenge — and the App Attest assertion
    /// (base64url) that ``AttestationPolicy/assertions`` asks of its device — and opens a session.
    ///
    /// `appAttestKeyID` with `appAttestation`, instead of an assertion: a new App Attest key of a
    /// reinstalled app (``AppAttestProof/reattestation(keyID:object:)``).
    public func finishLogin(
        challengeID: ChallengeID, signature: String, appAttestAssertion: String? = nil, appAttestKeyID: String? = nil,
        appAttestation: String? = nil,
        request: RequestInfo
    ) async throws(ServerError) -> SessionGrant {
        let proof = try AppAttestProof(assertion: appAttestAssertion, keyID: appAttestKeyID, attestation: appAttestation)
        return try await login.finish(challengeID: challengeID, signature: signature, appAttest: proof, request: request)
    }

    // MARK: Passkeys

    /// Options for `navigator.credentials.create()`: a passkey registration for the session's user
    /// under the name `name`, enrolled as a device under the same ``EnrolmentPolicy`` as a phone.
    /// 404 when ``ServerConfiguration/passkeys`` is nil.
    public func beginPasskeyRegistration(session: SessionRecord, name: String, request: RequestInfo) async throws(ServerError)
        -> Wire.PasskeyCreationOptions
    {
        try await PasskeyCeremonies(context: login.context).beginRegistration(session: session, name: name, request: request)
    }

    /// Verifies the registration (WebAuthn §7.1, every attestation format ``PasskeyPolicy`` accepts)
    /// and enrols the passkey as a device of the session's user — or, when the policy asks for a
    /// proof (any device but the user's first), keeps it in an enrolment request that another
    /// device approves with its binding code, or a recovery code does.
    public func finishPasskeyRegistration(
        session: SessionRecord, challengeID: ChallengeID, credential: Wire.PasskeyRegistrationCredential, request: RequestInfo
    ) async throws(ServerError) -> PasskeyRegistration {
        try await PasskeyCeremonies(context: login.context).finishRegistration(
            session: session, challengeID: challengeID, credential: credential, request: request)
    }

    /// Enrols the passkey that an approved enrolment request of this session's holds.
    public func completePasskeyRegistration(session: SessionRecord, enrolmentRequestID: EnrolmentRequestID, request: RequestInfo)
        async throws(ServerError) -> DeviceRecord
    {
        try await PasskeyCeremonies(context: login.context).completeRegistration(
            session: session, enrolmentRequestID: enrolmentRequestID, request: request)
    }

    /// Options for `navigator.credentials.get()` for `username`'s passkeys. Answers alike whether or
    /// not the user exists or has a passkey.
    public func beginPasskeyLogin(username: String, request: RequestInfo) async throws(ServerError) -> Wire.PasskeyRequestOptions {
        try await PasskeyCeremonies(context: login.context).beginLogin(username: username, request: request)
    }

    /// Verifies the passkey's assertion (WebAuthn §7.2) and opens a device session for the passkey,
    /// with the same tokens as a phone's login. Any failure is the uniform authentication failure.
    public func finishPasskeyLogin(
        challengeID: ChallengeID, credential: Wire.PasskeyAuthenticationCredential, request: RequestInfo
    ) async throws(ServerError) -> SessionGrant {
        try await PasskeyCeremonies(context: login.context).finishLogin(challengeID: challengeID, credential: credential, request: request)
    }

    /// A new access token for a device session's refresh token, which is replaced: each refresh
    /// token works once. Using one a second time revokes its session (RFC 9700 §4.14.2: a copy is
    /// in other hands). Unknown, spent or ended: the uniform authentication failure.
    public func refresh(refreshToken: String, request: RequestInfo) async throws(ServerError) -> TokenGrant {
        try await tokens.refresh(refreshToken: refreshToken, request: request)
    }

    /// RFC 7662 for the app's backend: the claims of an access token this server issued if it is
    /// valid now — signature, issuer, audience, expiry — and its session is still active (neither
    /// revoked nor expired, its device not revoked); nil otherwise.
    public func introspect(token: String, request: RequestInfo) async throws(ServerError) -> VerifiedAccessToken? {
        try await tokens.introspect(token: token, request: request)
    }

    /// The public keys that verify access tokens now, for `/.well-known/jwks.json`.
    public func publishedKeys(request: RequestInfo) async throws(ServerError) -> [PublishedKey] {
        try await tokens.publishedKeys(request: request)
    }

    // MARK: - Step-up

    /// Issues a challenge bound to the SHA-256 of `operation` (base64url bytes the app shows and approves).
    public func beginStepUp(session: SessionRecord, deviceID: DeviceID, operation: String, request: RequestInfo) async throws(ServerError)
        -> ChallengeEnvelope
    {
        try await stepUp.begin(session: session, deviceID: deviceID, operation: operation, request: request)
    }

    /// Verifies the step-up signature and returns a one-time approval for that operation.
    public func finishStepUp(
        session: SessionRecord, challengeID: ChallengeID, signature: String, appAttestAssertion: String? = nil,
        appAttestKeyID: String? = nil,
        appAttestation: String? = nil, request: RequestInfo
    ) async throws(ServerError) -> ApprovalGrant {
        let proof = try AppAttestProof(assertion: appAttestAssertion, keyID: appAttestKeyID, attestation: appAttestation)
        return try await stepUp.finish(session: session, challengeID: challengeID, signature: signature, appAttest: proof, request: request)
    }

    /// Redeems a step-up approval for the app's backend (an API key with the `approvals` scope):
    /// once, for exactly `operation`, for the user the backend expects, and only while the device
    /// that signed it is active. Any mismatch is the uniform authentication failure.
    public func redeemApproval(approval: String, operation: String, userID: UserID, request: RequestInfo) async throws(ServerError)
        -> ApprovalRecord
    {
        try await stepUp.redeem(approval: approval, operation: operation, userID: userID, request: request)
    }

    // MARK: - The backend API

    /// A one-time enrolment grant for `userID`, for a backend that owns the login: after its own
    /// login it asks for a grant and hands the token to the app, which enrols with it as with a
    /// primary session (`Authorization: Bearer`). The grant may enrol one device — it is revoked
    /// when the enrolment succeeds — and nothing else; it lives
    /// ``EnrolmentPolicy/grantTTL``. The user needs no password account here.
    public func issueEnrolmentGrant(userID: UserID, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        try await backend.issueEnrolmentGrant(userID: userID, request: request)
    }

    /// Creates an API key for the app's backend (`bioauth-server api-key create`). The secret is
    /// returned once and stored only as its hash.
    public func createApiKey(name: String, scopes: Set<ApiKeyScope>, request: RequestInfo) async throws(ServerError) -> (
        record: ApiKeyRecord, secret: ApiKeySecret
    ) {
        try await backend.createApiKey(name: name, scopes: scopes, request: request)
    }

    /// Every API key, revoked ones too, in creation order.
    public func apiKeys(request: RequestInfo) async throws(ServerError) -> [ApiKeyRecord] {
        try await backend.apiKeys(request: request)
    }

    /// Revokes an API key: the next request with it is refused by every instance.
    /// - Throws: ``ServerError`` `notFound` if no active key has that id.
    public func revokeApiKey(id: ApiKeyID, request: RequestInfo) async throws(ServerError) {
        try await backend.revokeApiKey(id: id, request: request)
    }

    /// The API key a backend request presents, if it is active and has `scope`. A missing,
    /// malformed, unknown or revoked key is the uniform 401; a key without the scope is 403.
    public func authenticateBackend(apiKey presented: String?, scope: ApiKeyScope, request: RequestInfo) async throws(ServerError)
        -> ApiKeyRecord
    {
        try await backend.authenticate(apiKey: presented, scope: scope, request: request)
    }

    /// The backend API for users whose login the backend owns: their devices, sessions and
    /// enrolment requests (``UserAdministration``).
    public var users: UserAdministration { UserAdministration(context: context) }

    // MARK: - Devices

    /// The user's devices in creation order, revoked ones too.
    public func devices(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRecord] {
        try await deviceList.list(of: session, request: request)
    }

    /// Renames one of the user's devices (404 if it is not theirs).
    public func renameDevice(id: DeviceID, name: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await deviceList.rename(id: id, name: name, by: session, request: request)
    }

    /// Revokes a device and every session it opened.
    public func revokeDevice(id: DeviceID, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await deviceList.revoke(id: id, by: session, request: request)
    }

    // MARK: - Maintenance

    /// Whether this instance can serve: its store answers a read within `limit` (the readiness
    /// probe, `GET /health/ready`).
    public func isReady(within limit: Duration = .seconds(2)) async -> Bool { await maintenance.isReady(within: limit) }

    /// What this instance, though ready, cannot do now (the readiness probe's `notes`): Android
    /// enrolments while the attestation status list is missing or too old.
    public func readinessNotes() -> [String] {
        let now = clock.now()
        return configuration.attestation.statusLists.compactMap { $0.note(at: now) }
    }

    /// Deletes expired challenges; returns how many. Safe to run on every instance at once.
    @discardableResult
    public func sweepExpiredChallenges() async throws -> Int { try await maintenance.sweepExpiredChallenges() }

    /// Deletes what no longer decides anything: expired challenges and approvals, counters of
    /// past windows, password runs and audit rows past their retention. Safe on every instance at
    /// once; `bioauth-server` runs it every minute.
    @discardableResult
    public func sweep() async throws -> SweepResult { try await maintenance.sweep() }

    // MARK: - Dead letters (the operator's `bioauth-server webhooks`)

    /// Events the receiver refused ``DeliveryPolicy/maxAttempts`` times, oldest first.
    public func deadLetters(limit: Int = 1_000) async throws(ServerError) -> [OutboxEvent] {
        do { return try await store.deadLetters(limit: limit) } catch { throw ServerError(.unavailable) }
    }

    /// The outbox at a glance (metrics): events waiting, the oldest one's time, dead letters.
    public func outboxStatus() async throws(ServerError) -> OutboxStatus {
        do { return try await store.outboxStatus() } catch { throw ServerError(.unavailable) }
    }

    /// Puts dead letters back in the outbox, due now: how many there were.
    public func replayDeadLetters(ids: [Int64]) async throws(ServerError) -> Int {
        do { return try await store.replayDeadLetters(ids: ids, now: clock.now()) } catch { throw ServerError(.unavailable) }
    }

    // MARK: - Signing keys (the operator's `bioauth-server keys`)

    /// Every stored signing key with its state and form; never a key.
    public func signingKeys(request: RequestInfo) async throws(ServerError) -> [SigningKeyStatus] {
        try await SigningKeys(context: context).list(request: request)
    }

    /// Adds a new signing key now (published at once, signing after the pre-publication).
    public func rotateSigningKey(request: RequestInfo) async throws(ServerError) -> SigningKeyStatus {
        let key = try await SigningKeys(context: context).rotate(request: request)
        return SigningKeyStatus(id: key.id, createdAt: key.createdAt, state: .published, form: StoredSigningKey(key.storedKey).form)
    }

    /// Deletes a signing key (a leaked one): 404 for an unknown id.
    public func retireSigningKey(id: String, request: RequestInfo) async throws(ServerError) {
        try await SigningKeys(context: context).retire(id: id, request: request)
    }
}
