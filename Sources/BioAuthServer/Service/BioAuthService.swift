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

    var account: Account { Account(context: context) }
    var enrolment: DeviceEnrolment { DeviceEnrolment(context: context) }
    var enrolmentRequests: EnrolmentRequests { EnrolmentRequests(context: context) }
    var login: DeviceLogin { DeviceLogin(context: context) }
    var stepUp: StepUp { StepUp(context: context) }
    var tokens: Tokens { Tokens(context: context) }
    var backend: Backend { Backend(context: context) }
    var deviceList: Devices { Devices(context: context) }
    var removals: DeviceRemovals { DeviceRemovals(context: context) }
    var maintenance: Maintenance { Maintenance(context: context) }

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

}
