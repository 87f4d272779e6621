import BioAuthCore
import Crypto
import Foundation
import Logging
import Metrics

/// A session token handed to the client once. The server keeps only its SHA-256.
/// Its description omits the token.
public struct SessionGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var token: String
    public var session: SessionRecord
    /// A device session's access and refresh tokens; nil for other sessions.
    public var tokens: TokenGrant?

    public init(token: String, session: SessionRecord, tokens: TokenGrant? = nil) {
        self.token = token
        self.session = session
        self.tokens = tokens
    }

    public var description: String { "SessionGrant(session: \(session.id), user: \(session.userID), token: redacted)" }
    public var debugDescription: String { description }
    /// `dump()` and debuggers see the session, not the token.
    public var customMirror: Mirror { Mirror(self, children: ["session": session, "token": "redacted"]) }
}

/// A one-time step-up approval handed to the client once. The server keeps only its SHA-256.
/// Its description omits the approval.
public struct ApprovalGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var approval: String
    public var record: ApprovalRecord

    public var description: String { "ApprovalGrant(user: \(record.userID), device: \(record.deviceID), approval: redacted)" }
    public var debugDescription: String { description }
    /// `dump()` and debuggers see the record, not the approval.
    public var customMirror: Mirror { Mirror(self, children: ["record": record, "approval": "redacted"]) }
}

/// The BioAuth server, independent of any HTTP framework: demo primary login, device enrolment
/// with proof of possession, challenge–response login, step-up approvals, device and session
/// management, rate limits and an audit log, over one ``BioAuthStore``.
///
/// Challenges are 32 random bytes, expire after `challengeTTL` (checked here, not only by the
/// store), and are consumed atomically by the first attempt, whether it verifies or not. Every
/// verification failure throws the same `authenticationFailed` code; the reason goes to the
/// audit log and the logger.
public final class BioAuthService: Sendable {
    public let store: any BioAuthStore
    public let configuration: ServerConfiguration
    public let clock: any WallClock
    /// Delivers recovery codes for enrolment requests; nil: only another device's approval adds a device.
    public let recoveryChannel: (any RecoveryChannel)?
    let logger: Logger
    let windows: RateWindows
    let requests: RequestLimiter
    let metrics: ServiceMetrics
    let accessTokens: AccessTokenIssuer

    public init(
        store: any BioAuthStore, configuration: ServerConfiguration = ServerConfiguration(), clock: any WallClock = SystemWallClock(),
        logger: Logger = Logger(label: "BioAuthServer"), metricsFactory: (any MetricsFactory)? = nil, recoveryChannel: (any RecoveryChannel)? = nil
    ) {
        self.recoveryChannel = recoveryChannel
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        windows = RateWindows(policy: configuration.rateLimits)
        requests = RequestLimiter(windows: windows)
        metrics = ServiceMetrics(factory: metricsFactory)
        accessTokens = AccessTokenIssuer(store: store, policy: configuration.tokens, relyingPartyID: configuration.relyingPartyID, clock: clock)
    }

    // MARK: - Primary login (demo: username + password)

    /// Creates a demo user.
    public func createUser(username: String, password: String, request: RequestInfo) async throws(ServerError) {
        let username = try Validate.username(username)
        let password = try Validate.password(password)
        try admit(request)
        let salt = SecretBytes.random(count: 16).data
        let hash = try hashPassword(password, salt: salt, rounds: configuration.passwordRounds)
        let now = clock.now()
        let user = UserRecord(id: username, passwordSalt: salt, passwordRounds: configuration.passwordRounds, passwordHash: hash, createdAt: now)
        do { try await store.createUser(user, audit: event(.userCreated, user: username, request: request)) } catch let error as StoreError
            where error.code == .duplicate
        {
            throw ServerError(.conflict, field: "username", detail: "exists")
        } catch { throw storeFailure(error, request) }
        log(.userCreated, user: username, request: request)
    }

    /// Checks a username and password and opens a primary session (which may enrol devices).
    public func passwordLogin(username: String, password: String, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        let username = try Validate.username(username)
        let password = try Validate.password(password)
        try admit(request)
        let now = clock.now()
        let lockout = windows.lockout(client: request.clientAddress, at: now, factor: .password)
        // The attempt is counted before the slow hash, atomically with the check: parallel guesses
        // cannot all pass it. A success clears the user's counters below.
        let attempt = try await run(request) { [policy = configuration.passwordRun] in
            try await self.store.beginPasswordAttempt(username: username, lockout: lockout, run: policy, now: now)
        }
        if let until = attempt.refusedUntil {
            // A window limit: until its end; a back-off: until it runs out.
            let retryAfter = until == lockout.windowStart ? windows.retryAfter(now) : max(1, Int(min(until.timeIntervalSince(now), 86_400).rounded(.up)))
            throw await refuseLockedOut(user: attempt.user == nil ? nil : username, device: nil, retryAfter: retryAfter, request)
        }
        // Unknown users cost a hash too, so timing does not tell which usernames exist.
        let user = attempt.user
        let salt = user?.passwordSalt ?? Data(SHA256.hash(data: Data(username.utf8)).prefix(16))
        let hash = try hashPassword(password, salt: salt, rounds: user?.passwordRounds ?? configuration.passwordRounds)
        guard let user, constantTimeEquals(hash, user.passwordHash) else {
            let reason: FailureReason = user == nil ? .unknownUser : .badPassword
            // An unknown "username" may be a password typed into the wrong field: it is not written
            // to the audit log (the log line carries only a keyed hash of it).
            let audited = event(.passwordLoginFailed, user: user == nil ? nil : username, reason: reason.description, request: request)
            // The user's counters were counted already; the address is counted now.
            var failure = FailureRecord(reason, lockout: windows.lockout(client: request.clientAddress, at: now, factor: .signature), user: nil, audit: audited)
            failure.reachedEarlier = attempt.reached
            let locked = try await run(request) { [failure] in try await self.store.recordFailure(failure) }
            throw failed(failure, locked: locked, request)
        }
        let (session, token) = newSession(user: username, device: nil, kind: .primary, ttl: configuration.primarySessionTTL, at: now)
        // A hash made with fewer rounds than today's setting is replaced now, while the password is at hand.
        var rehashed: UserRecord?
        if user.passwordRounds < configuration.passwordRounds {
            let salt = SecretBytes.random(count: 16).data
            rehashed = UserRecord(
                id: username, passwordSalt: salt, passwordRounds: configuration.passwordRounds,
                passwordHash: try hashPassword(password, salt: salt, rounds: configuration.passwordRounds), createdAt: user.createdAt)
        }
        try await run(request) { [rehashed] in
            try await self.store.recordLogin(
                session, clearing: [.password(username), .passwordRun(username)], rehashed: rehashed,
                audit: self.event(.passwordLoginSucceeded, user: username, request: request))
        }
        log(.passwordLoginSucceeded, user: username, request: request)
        return SessionGrant(token: token, session: session)
    }

    /// A primary session for the user your own login proves (``PrimaryAuthenticator``): what a
    /// password login gives — it may enrol the user's first device; later ones need an approval.
    /// A credential that proves nobody counts against the sending address like a forged
    /// signature, and a locked-out address is refused before your login is asked.
    public func primaryLogin<Authenticator: PrimaryAuthenticator>(
        _ credential: Authenticator.Credential, with authenticator: Authenticator, request: RequestInfo
    ) async throws(ServerError) -> SessionGrant {
        try admit(request)
        let now = clock.now()
        let lockout = windows.lockout(client: request.clientAddress, at: now, factor: .signature)
        // With a signature-factor query only the address's counter is consulted ("" names no user).
        if try await run(request, { try await self.store.passwordLoginState(username: "", lockout: lockout) }).lockedOut {
            throw await refuseLockedOut(user: nil, device: nil, request)
        }
        let proven: String?
        do { proven = try await authenticator.authenticate(credential, request: request) } catch {
            logger.error("primary authenticator failed", metadata: ["requestId": "\(request.requestID)", "error": "\(type(of: error))"])
            throw ServerError(.unavailable, retryAfter: 5)
        }
        guard let proven else {
            let failure = FailureRecord(
                .primaryLoginRejected, lockout: lockout, user: nil, audit: event(.primaryLoginFailed, reason: FailureReason.primaryLoginRejected.description, request: request))
            let locked = try await run(request) { [failure] in try await self.store.recordFailure(failure) }
            throw failed(failure, locked: locked, request)
        }
        let userID = try Validate.username(proven, field: "userId")
        let (session, token) = newSession(user: userID, device: nil, kind: .primary, ttl: configuration.primarySessionTTL, at: now)
        let audit = event(.primaryLoginSucceeded, user: userID, request: request)
        try await run(request) { try await self.store.recordLogin(session, clearing: [], rehashed: nil, audit: audit) }
        log(audit)
        return SessionGrant(token: token, session: session)
    }

    // MARK: - Sessions

    /// A one-time enrolment grant for `userID`, for a backend that owns the login: after its own
    /// login it asks for a grant and hands the token to the app, which enrols with it as with a
    /// primary session (`Authorization: Bearer`). The grant may enrol one device — it is revoked
    /// when the enrolment succeeds — and nothing else; it lives
    /// ``EnrolmentPolicy/grantTTL``. The user needs no password account here.
    public func issueEnrolmentGrant(userID: String, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        let userID = try Validate.username(userID, field: "userId")
        let (session, token) = newSession(user: userID, device: nil, kind: .enrolmentGrant, ttl: configuration.enrolment.grantTTL, at: clock.now())
        let audit = event(.enrolmentGrantIssued, user: userID, request: request)
        try await run(request) { try await self.store.recordLogin(session, clearing: [], rehashed: nil, audit: audit) }
        log(audit)
        return SessionGrant(token: token, session: session)
    }

    /// Everything but enrolment needs a real session: an enrolment grant may do nothing else.
    private func requireAccountSession(_ session: SessionRecord) throws(ServerError) {
        if session.kind == .enrolmentGrant { throw ServerError(.forbidden, detail: "an enrolment grant may only enrol a device") }
    }

    /// The active session a bearer token names.
    /// - Throws: `authenticationFailed` for a missing, unknown, expired or revoked token.
    public func authenticate(token: String?, request: RequestInfo) async throws(ServerError) -> SessionRecord {
        try admit(request)  // token guessing pays the request limit too
        guard let token, let bytes = Base64URL.decode(token), bytes.count == 32 else {
            throw ServerError.authenticationFailed(token == nil ? .missingSession : .unknownSession)
        }
        let hash = Data(SHA256.hash(data: bytes))
        guard let state = try await run(request, { try await self.store.session(tokenHash: hash) }) else {
            throw ServerError.authenticationFailed(.unknownSession)
        }
        let session = state.session
        if session.revokedAt != nil { throw ServerError.authenticationFailed(.revokedSession) }
        if session.expiresAt <= clock.now() { throw ServerError.authenticationFailed(.expiredSession) }
        if !state.deviceActive { throw ServerError.authenticationFailed(.revokedDeviceSession) }
        return session
    }

    public func sessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [SessionRecord] {
        try requireAccountSession(session)
        let now = clock.now()
        return try await run(request) { try await self.store.sessions(userID: session.userID) }.filter { $0.revokedAt == nil && $0.expiresAt > now }
    }

    public func revokeSession(id: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try requireAccountSession(session)
        let audit = event(.sessionRevoked, user: session.userID, device: session.deviceID, request: request)
        guard try await run(request, { try await self.store.revokeSession(id: id, userID: session.userID, at: self.clock.now(), audit: audit) }) else {
            throw ServerError(.notFound, field: "sessionId")
        }
        log(audit)
    }

    /// Revokes every session of the user (logging out everywhere); returns how many.
    public func revokeAllSessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Int {
        try requireAccountSession(session)
        let audit = event(.sessionsRevoked, user: session.userID, device: session.deviceID, reason: AuditReason.allSessions.description, request: request)
        let count = try await run(request) { try await self.store.revokeSessions(userID: session.userID, at: self.clock.now(), audit: audit) }
        log(audit)
        return count
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
    /// - Parameter replacesDeviceID: re-enrolment of a device whose key was invalidated (an
    ///   enrollment change on the phone): on success the old key is replaced.
    public func beginRegistration(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: String?, enrolmentRequestID: String? = nil, request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        let enrolment = try await enrolmentSubject(session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
        var deviceID = enrolment.deviceID
        var approvedRequest: String?
        if enrolment.needsProof {
            guard let enrolmentRequestID else { throw ServerError(.approvalRequired, field: "enrolmentRequestId") }
            let id = try Validate.deviceID(enrolmentRequestID, field: "enrolmentRequestId")
            guard let approved = try await run(request, { try await self.store.enrolmentRequest(id: id) }), approved.sessionID == session.id,
                approved.userID == session.userID, approved.isApproved, approved.expiresAt > clock.now(), approved.publicKey == enrolment.publicKey,
                approved.name == enrolment.name, approved.replacing == (replacesDeviceID != nil), !approved.replacing || approved.deviceID == deviceID
            else { throw ServerError(.approvalRequired, field: "enrolmentRequestId") }
            deviceID = approved.deviceID
            approvedRequest = approved.id
        }
        let binding = ChallengeRecord.Binding.registration(publicKey: enrolment.publicKey, deviceName: enrolment.name, replacing: replacesDeviceID != nil)
        return try await issue(binding, user: session.userID, device: deviceID, session: session.id, enrolmentRequest: approvedRequest, request)
    }

    /// What an enrolment names, checked: the session may enrol, the key parses, a replaced device
    /// is the user's and active. `needsProof` says whether the policy asks for an approval.
    private func enrolmentSubject(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: String?, request: RequestInfo
    ) async throws(ServerError) -> (name: String, publicKey: Data, deviceID: String, needsProof: Bool) {
        // Admitted by authenticate(token:request:), like every call that takes a session.
        guard session.kind == .primary || session.kind == .enrolmentGrant else {
            throw ServerError(.forbidden, detail: "enrolment requires a primary login or an enrolment grant")
        }
        let name = try Validate.deviceName(name)
        let spki = try Validate.base64URL(publicKey, field: "publicKey", count: 1...512)
        do { _ = try DevicePublicKey(spki: spki, field: "publicKey") } catch { throw ServerError(error) }
        var deviceID = UUID().uuidString.lowercased()
        if let replacesDeviceID {
            let id = try Validate.deviceID(replacesDeviceID, field: "replacesDeviceId")
            // A revoked device never comes back: its id answers 404 like an unknown one, and the
            // phone enrols as a new device (a phished password cannot revive a stolen phone's id).
            guard let device = try await run(request, { try await self.store.device(id: id) }), device.userID == session.userID, !device.isRevoked else {
                throw ServerError(.notFound, field: "replacesDeviceId")
            }
            deviceID = id
        }
        var needsProof = false
        if configuration.enrolment.additionalDevices == .approvalOrRecovery {
            // Only the user's first device ever goes without: revoking every device does not make
            // the next one "first" again.
            let devices = try await run(request) { try await self.store.devices(userID: session.userID) }
            needsProof = replacesDeviceID != nil || !devices.isEmpty
        }
        return (name, spki, deviceID, needsProof)
    }

    // MARK: - Enrolment requests (a second device, a new key)

    /// Most unexpired enrolment requests a user may have: someone with the password cannot flood
    /// the owner's approval list.
    public static let maxPendingEnrolmentRequests = 5

    /// Asks for an approval (or a recovery code) to enrol `publicKey` as `name`: the request
    /// appears on the user's other devices as the text of ``EnrolmentApprovalText``. Throws
    /// `conflict` if this enrolment needs no approval.
    public func requestEnrolment(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: String?, request: RequestInfo
    ) async throws(ServerError) -> EnrolmentRequestRecord {
        let enrolment = try await enrolmentSubject(session: session, name: name, publicKey: publicKey, replacesDeviceID: replacesDeviceID, request: request)
        guard enrolment.needsProof else { throw ServerError(.conflict, detail: "this enrolment needs no approval") }
        let now = clock.now()
        let pending = try await run(request) { try await self.store.enrolmentRequests(userID: session.userID, now: now) }
        guard pending.count(where: { !$0.isApproved }) < Self.maxPendingEnrolmentRequests else {
            throw ServerError(.rateLimited, detail: "too many enrolment requests", retryAfter: Int(configuration.enrolment.requestTTL))
        }
        let record = EnrolmentRequestRecord(
            id: UUID().uuidString.lowercased(), userID: session.userID, deviceID: enrolment.deviceID, name: enrolment.name, publicKey: enrolment.publicKey,
            replacing: replacesDeviceID != nil, sessionID: session.id, createdAt: now, expiresAt: now.addingTimeInterval(configuration.enrolment.requestTTL))
        let audit = event(.enrolmentRequested, user: session.userID, device: record.deviceID, request: request)
        try await run(request) { try await self.store.createEnrolmentRequest(record, audit: audit) }
        log(audit)
        return record
    }

    /// The user's enrolment requests that still wait (unexpired, unapproved).
    public func pendingEnrolmentRequests(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [EnrolmentRequestRecord] {
        try requireAccountSession(session)
        let now = clock.now()
        return try await run(request) { try await self.store.enrolmentRequests(userID: session.userID, now: now) }.filter { !$0.isApproved }
    }

    /// One of the user's unexpired enrolment requests (404 otherwise).
    public func enrolmentRequest(id: String, of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> EnrolmentRequestRecord {
        let id = try Validate.deviceID(id, field: "id")
        guard let record = try await run(request, { try await self.store.enrolmentRequest(id: id) }), record.userID == session.userID,
            record.expiresAt > clock.now()
        else { throw ServerError(.notFound, field: "id") }
        return record
    }

    /// Approves an enrolment request with a step-up approval the approving device obtained for
    /// exactly the request's ``EnrolmentRequestRecord/approvalText``. The approval must come from
    /// another device of the user (one past its cool-down: others cannot step up at all).
    public func approveEnrolment(requestID: String, approval: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        guard session.kind == .device else { throw ServerError(.forbidden, detail: "only another enrolled device may approve an enrolment") }
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        let operationHash = Data(SHA256.hash(data: Data(record.approvalText.utf8)))
        let audit = event(.enrolmentApproved, user: record.userID, device: record.deviceID, reason: AuditReason.approvedByDevice.description, request: request)
        guard try await run(request, {
            try await self.store.approveEnrolmentRequest(
                id: record.id, userID: session.userID, approvalTokenHash: Data(SHA256.hash(data: token)), operationHash: operationHash,
                excludingDevice: record.deviceID, now: self.clock.now(), audit: audit)
        }) != nil else {
            await self.audit(.approvalRejected, user: session.userID, device: session.deviceID, reason: FailureReason.approvalRejected.description, request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        log(audit)
    }

    /// Sends a new recovery code for the caller's own enrolment request through the deployment's
    /// ``RecoveryChannel`` (403 if none is configured).
    public func sendRecoveryCode(requestID: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        guard let recoveryChannel else { throw ServerError(.forbidden, detail: "no recovery channel is configured") }
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        guard record.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        guard !record.isApproved else { throw ServerError(.conflict, detail: "already approved") }
        let code = RecoveryCode.random()
        let audit = event(.recoveryCodeSent, user: record.userID, device: record.deviceID, request: request)
        guard try await run(request, { try await self.store.setRecoveryCode(requestID: record.id, codeHash: code.hash, now: self.clock.now(), audit: audit) }) else {
            throw ServerError(.notFound, field: "id")
        }
        do { try await recoveryChannel.deliver(code, for: record) } catch {
            logger.error("recovery code delivery failed", metadata: metadata(audit).merging(["error": "\(type(of: error))"]) { $1 })
            throw ServerError(.unavailable, detail: "the recovery code could not be delivered", retryAfter: 30)
        }
        log(audit)
    }

    /// Approves the caller's own enrolment request with the recovery code it was sent. A wrong
    /// code is one of ``EnrolmentPolicy/maxRecoveryAttempts``; every failure is the uniform 401.
    public func recoverEnrolment(requestID: String, code: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        let record = try await enrolmentRequest(id: requestID, of: session, request: request)
        guard record.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        guard (1...32).contains(code.utf8.count), code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == " ") }) else {
            throw ServerError(.invalidRequest, field: "code", detail: "1 to 32 letters, digits and dashes")
        }
        let audit = event(.enrolmentApproved, user: record.userID, device: record.deviceID, reason: AuditReason.recoveryCode.description, request: request)
        let outcome = try await run(request) {
            try await self.store.recoverEnrolmentRequest(
                id: record.id, codeHash: RecoveryCode.hash(ofEntered: code), maxAttempts: self.configuration.enrolment.maxRecoveryAttempts, now: self.clock.now(),
                audit: audit)
        }
        guard outcome == .approved else {
            log(audit.rejectedRecovery)
            throw ServerError.authenticationFailed(.recoveryCodeRejected)
        }
        log(audit)
    }

    /// Finishes enrolment: the new key's signature over the registration challenge.
    public func finishRegistration(
        session: SessionRecord, challengeID: String, signature: String, request: RequestInfo
    ) async throws(ServerError) -> DeviceRecord {
        let recorded = try await finish(challengeID, signature, purpose: .registration, session: session, request) { challenge, now in
            guard case .registration(let key, let name, let replacing) = challenge.binding else { return nil }
            let device = DeviceRecord(id: challenge.deviceID, userID: challenge.userID, name: name, publicKey: key, createdAt: now)
            let kind: AuditKind = replacing ? .deviceReenrolled : .deviceEnrolled
            return .enrolment(device, replacing: replacing, audit: self.event(kind, user: challenge.userID, device: challenge.deviceID, request: request))
        }
        guard case .enrolment(_, _, let audit) = recorded.verdict, let device = recorded.device else {
            // The device of a re-enrolment vanished or changed owner between the two requests, or
            // the approved request was used by another enrolment.
            if case .enrolment(_, false, _) = recorded.verdict { throw ServerError(.approvalRequired, field: "enrolmentRequestId") }
            throw ServerError(.notFound, field: "replacesDeviceId")
        }
        metrics.enrolments.increment()
        log(audit)
        if session.kind == .enrolmentGrant {
            // One device per grant. The enrolment is committed: should this fail, the answer stays
            // a success, the failure is logged, and the grant still expires within minutes.
            let revoked = event(.sessionRevoked, user: session.userID, reason: AuditReason.enrolmentGrantUsed.description, request: request)
            do { _ = try await store.revokeSession(id: session.id, userID: session.userID, at: clock.now(), audit: revoked) } catch {
                logger.error("could not revoke a used enrolment grant", metadata: metadata(revoked).merging(["error": "\(type(of: error))"]) { $1 })
            }
        }
        return device
    }

    // MARK: - Login

    /// Issues a login challenge for a device. Answers the same way whether or not the device
    /// exists: the failure, if any, comes at ``finishLogin(challengeID:signature:request:)``.
    public func beginLogin(userID: String, deviceID: String, request: RequestInfo) async throws(ServerError) -> ChallengeEnvelope {
        let userID = try Validate.username(userID, field: "userId")
        let deviceID = try Validate.deviceID(deviceID)
        try admit(request)
        return try await issue(.login, user: userID, device: deviceID, request)
    }

    /// Verifies the device's signature over its login challenge and opens a session.
    public func finishLogin(challengeID: String, signature: String, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        let token = SecretBytes.random(count: 32)
        let refresh = SecretBytes.random(count: 32)
        let recorded = try await finish(challengeID, signature, purpose: .login, session: nil, request) { challenge, now in
            var session = self.sessionRecord(token: token, user: challenge.userID, device: challenge.deviceID, kind: .device, ttl: self.configuration.sessionTTL, at: now)
            session.refreshTokenHash = Data(SHA256.hash(data: refresh.data))
            let audit = self.event(.loginSucceeded, user: challenge.userID, device: challenge.deviceID, request: request)
            // Clears nothing: a device login says nothing about the password counter.
            return .login(session, clearing: [], audit: audit)
        }
        guard case .login(let session, _, let audit) = recorded.verdict else { throw ServerError(.internalError) }
        metrics.logins.increment()
        log(audit)
        let access = try await run(request) { try await self.accessTokens.issue(for: session, deviceID: session.deviceID ?? "", audit: audit) }
        return SessionGrant(
            token: Base64URL.encode(token.data), session: session,
            tokens: TokenGrant(accessToken: access.token, accessTokenExpiresAt: access.expiresAt, refreshToken: Base64URL.encode(refresh.data)))
    }

    // MARK: - Access tokens

    /// A new access token for a device session's refresh token, which is replaced: each refresh
    /// token works once. Using one a second time revokes its session (RFC 9700 §4.14.2: a copy is
    /// in other hands). Unknown, spent or ended: the uniform authentication failure.
    public func refresh(refreshToken: String, request: RequestInfo) async throws(ServerError) -> TokenGrant {
        try admit(request)
        let presented = try Validate.base64URL(refreshToken, field: "refreshToken", count: 32...32)
        let next = SecretBytes.random(count: 32)
        let rotated = event(.tokenRefreshed, request: request)
        let reused = event(.refreshTokenReused, reason: FailureReason.refreshTokenReused.description, request: request)
        let rotation = try await run(request) {
            try await self.store.rotateRefreshToken(
                tokenHash: Data(SHA256.hash(data: presented)), replacement: Data(SHA256.hash(data: next.data)), now: self.clock.now(), audit: rotated,
                reuseAudit: reused)
        }
        switch rotation {
        case .rotated(let state) where state.deviceActive && state.session.kind == .device:
            log(rotated.about(user: state.session.userID, device: state.session.deviceID))
            let access = try await run(request) { try await self.accessTokens.issue(for: state.session, deviceID: state.session.deviceID ?? "", audit: rotated) }
            return TokenGrant(accessToken: access.token, accessTokenExpiresAt: access.expiresAt, refreshToken: Base64URL.encode(next.data))
        case .reused:
            logger.warning("refresh token reused: session revoked", metadata: ["requestId": "\(request.requestID)"])
            throw ServerError.authenticationFailed(.refreshTokenReused)
        case .rotated, .refused:
            await audit(.refreshRejected, reason: FailureReason.unknownRefreshToken.description, request: request)
            throw ServerError.authenticationFailed(.unknownRefreshToken)
        }
    }

    /// RFC 7662 for the app's backend: the claims of an access token this server issued if it is
    /// valid now — signature, issuer, audience, expiry — and its session is still active (neither
    /// revoked nor expired, its device not revoked); nil otherwise.
    public func introspect(token: String, request: RequestInfo) async throws(ServerError) -> VerifiedAccessToken? {
        guard token.utf8.count <= 4096 else { return nil }
        let audit = event(.tokenRefreshed, request: request)
        guard let claims = try await run(request, { try await self.accessTokens.verify(token, audit: audit)?.verified }) else { return nil }
        guard let state = try await run(request, { try await self.store.session(id: claims.sessionID) }), state.deviceActive, state.session.revokedAt == nil,
            state.session.expiresAt > clock.now(), state.session.userID == claims.subject
        else { return nil }
        return claims
    }

    /// The public keys that verify access tokens now, for `/.well-known/jwks.json`.
    public func publishedKeys(request: RequestInfo) async throws(ServerError) -> [PublishedKey] {
        let audit = event(.signingKeyAdded, request: request)
        return try await run(request) { try await self.accessTokens.published(audit: audit) }
    }

    // MARK: - Step-up

    /// Issues a challenge bound to the SHA-256 of `operation` (base64url bytes the app shows and approves).
    public func beginStepUp(session: SessionRecord, deviceID: String, operation: String, request: RequestInfo) async throws(ServerError) -> ChallengeEnvelope {
        try requireAccountSession(session)
        let deviceID = try Validate.deviceID(deviceID)
        let details = try Validate.base64URL(operation, field: "operation", count: 1...configuration.maxOperationSize)
        guard let device = try await run(request, { try await self.store.device(id: deviceID) }), device.userID == session.userID, !device.isRevoked else {
            throw ServerError(.notFound, field: "deviceId")
        }
        if clock.now() < device.createdAt.addingTimeInterval(configuration.enrolment.coolDown) {
            let devices = try await run(request) { try await self.store.devices(userID: session.userID) }
            // Only the user's first device ever is exempt (revoking every device does not make
            // the next one first; a tie in creation time exempts neither).
            if devices.contains(where: { $0.id != device.id && $0.createdAt <= device.createdAt }) {
                throw ServerError(.forbidden, field: "deviceId", detail: "a device added to an account cannot approve during its cool-down")
            }
        }
        return try await issue(.stepUp(operationHash: Data(SHA256.hash(data: details))), user: session.userID, device: deviceID, session: session.id, request)
    }

    /// Verifies the step-up signature and returns a one-time approval for that operation.
    public func finishStepUp(session: SessionRecord, challengeID: String, signature: String, request: RequestInfo) async throws(ServerError) -> ApprovalGrant {
        try requireAccountSession(session)
        let token = SecretBytes.random(count: 32)
        let recorded = try await finish(challengeID, signature, purpose: .stepUp, session: session, request) { challenge, now in
            guard case .stepUp(let operationHash) = challenge.binding else { return nil }
            let record = ApprovalRecord(
                tokenHash: Data(SHA256.hash(data: token.data)), userID: challenge.userID, deviceID: challenge.deviceID,
                operationHash: operationHash, createdAt: now, expiresAt: now.addingTimeInterval(self.configuration.approvalTTL), sessionID: session.id)
            let audit = self.event(.stepUpApproved, user: challenge.userID, device: challenge.deviceID, request: request)
            return .approval(record, clearing: [], audit: audit)
        }
        guard case .approval(let record, _, let audit) = recorded.verdict else { throw ServerError(.internalError) }
        metrics.stepUps.increment()
        log(audit)
        return ApprovalGrant(approval: Base64URL.encode(token.data), record: record)
    }

    /// Redeems an approval for exactly the operation it was granted for, once.
    /// Redeems a step-up approval for the app's backend (an API key with the `approvals` scope):
    /// once, for exactly `operation`, for the user the backend expects, and only while the device
    /// that signed it is active. Any mismatch is the uniform authentication failure.
    public func redeemApproval(approval: String, operation: String, userID: String, request: RequestInfo) async throws(ServerError) -> ApprovalRecord {
        try admit(request)
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let details = try Validate.base64URL(operation, field: "operation", count: 1...configuration.maxOperationSize)
        let userID = try Validate.username(userID, field: "userId")
        let hash = Data(SHA256.hash(data: token))
        let operationHash = Data(SHA256.hash(data: details))
        let audit = event(.approvalRedeemed, request: request)
        guard let record = try await run(request, { try await self.store.redeemApproval(tokenHash: hash, operationHash: operationHash, userID: userID, now: self.clock.now(), audit: audit) })
        else {
            await self.audit(.approvalRejected, user: userID, reason: FailureReason.approvalRejected.description, request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        log(audit.about(user: record.userID, device: record.deviceID))
        return record
    }

    // MARK: - The backend API

    /// Creates an API key for the app's backend (`bioauth-server api-key create`). The secret is
    /// returned once and stored only as its hash.
    public func createApiKey(name: String, scopes: Set<ApiKeyScope>, request: RequestInfo) async throws(ServerError) -> (record: ApiKeyRecord, secret: ApiKeySecret) {
        let name = try Validate.deviceName(name)
        let secret = ApiKeySecret()
        let record = ApiKeyRecord(
            id: "key_" + SecretBytes.random(count: 8).data.map { String(format: "%02x", $0) }.joined(), name: name, secretHash: secret.hash, scopes: scopes,
            createdAt: clock.now())
        let audit = event(.apiKeyCreated, reason: record.id, request: request)
        try await run(request) { try await self.store.createApiKey(record, audit: audit) }
        log(audit)
        return (record, secret)
    }

    /// Every API key, revoked ones too, in creation order.
    public func apiKeys(request: RequestInfo) async throws(ServerError) -> [ApiKeyRecord] {
        try await run(request) { try await self.store.apiKeys() }
    }

    /// Revokes an API key: the next request with it is refused by every instance.
    /// - Throws: ``ServerError`` `notFound` if no active key has that id.
    public func revokeApiKey(id: String, request: RequestInfo) async throws(ServerError) {
        let audit = event(.apiKeyRevoked, reason: id, request: request)
        guard try await run(request, { try await self.store.revokeApiKey(id: id, at: self.clock.now(), audit: audit) }) else {
            throw ServerError(.notFound, field: "id")
        }
        log(audit)
    }

    /// The API key a backend request presents, if it is active and has `scope`. A missing,
    /// malformed, unknown or revoked key is the uniform 401; a key without the scope is 403.
    public func authenticateBackend(apiKey presented: String?, scope: ApiKeyScope, request: RequestInfo) async throws(ServerError) -> ApiKeyRecord {
        try admit(request)
        let secret = presented.flatMap(ApiKeySecret.init(presented:))
        let record: ApiKeyRecord?
        if let secret { record = try await run(request) { try await self.store.apiKey(secretHash: secret.hash) } } else { record = nil }
        guard let record, record.revokedAt == nil else {
            await audit(.apiKeyRejected, reason: FailureReason.unknownApiKey.description, request: request)
            throw ServerError.authenticationFailed(.unknownApiKey)
        }
        guard record.scopes.contains(scope) else { throw ServerError(.forbidden, detail: "this API key lacks the scope \(scope)") }
        return record
    }

    // MARK: - Devices

    public func devices(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRecord] {
        try requireAccountSession(session)
        return try await run(request) { try await self.store.devices(userID: session.userID) }
    }

    public func renameDevice(id: String, name: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try requireAccountSession(session)
        let id = try Validate.deviceID(id)
        let name = try Validate.deviceName(name)
        let audit = event(.deviceRenamed, user: session.userID, device: id, request: request)
        guard try await run(request, { try await self.store.renameDevice(id: id, userID: session.userID, name: name, audit: audit) }) else {
            throw ServerError(.notFound, field: "deviceId")
        }
        log(audit)
    }

    /// Revokes a device and every session it opened.
    public func revokeDevice(id: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try requireAccountSession(session)
        let id = try Validate.deviceID(id)
        let audit = event(.deviceRevoked, user: session.userID, device: id, request: request)
        guard try await run(request, { try await self.store.revokeDevice(id: id, userID: session.userID, at: self.clock.now(), audit: audit) }) else {
            throw ServerError(.notFound, field: "deviceId")
        }
        log(audit)
    }

    /// The user's own audit events, newest first.
    public func auditEvents(of session: SessionRecord, limit: Int = 100, request: RequestInfo) async throws(ServerError) -> [AuditEvent] {
        try requireAccountSession(session)
        return try await run(request) { try await self.store.auditEvents(userID: session.userID, limit: min(max(limit, 1), 1000)) }
    }

    /// Deletes expired challenges; returns how many. Safe to run on every instance at once.
    @discardableResult
    public func sweepExpiredChallenges() async throws -> Int {
        try await store.deleteChallenges(expiredBefore: clock.now())
    }

    /// Deletes what no longer decides anything: expired challenges and approvals, counters of
    /// past windows, password runs and audit rows past their retention. Safe on every instance at
    /// once; `bioauth-server` runs it every minute.
    @discardableResult
    public func sweep() async throws -> SweepResult {
        let now = clock.now()
        var result = try await store.sweep(
            windowsBefore: windows.windowStart(now), runsBefore: now.addingTimeInterval(-configuration.retention.passwordRuns),
            auditBefore: now.addingTimeInterval(-configuration.retention.audit))
        result.challenges = try await store.deleteChallenges(expiredBefore: now)
        return result
    }

    // MARK: - Internals

    /// The key verified against when the device is unknown, revoked or foreign. Its private half is
    /// discarded at start-up: no signature ever verifies.
    static let decoyKey: DevicePublicKey = {
        guard let key = try? DevicePublicKey(spki: P256.Signing.PrivateKey().publicKey.derRepresentation) else { fatalError("P-256 key generation failed") }
        return key
    }()

    private func issue(
        _ binding: ChallengeRecord.Binding, user: String, device: String, session: String? = nil, enrolmentRequest: String? = nil, _ request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        let now = clock.now()
        let expiry = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + configuration.challengeTTL).rounded(.down))
        let challenge = ChallengeRecord(
            id: SecretBytes.random(count: 16).data, binding: binding, relyingPartyID: configuration.relyingPartyID, userID: user,
            deviceID: device, nonce: SecretBytes.random(count: 32).data, createdAt: now, expiresAt: expiry, sessionID: session,
            enrolmentRequestID: enrolmentRequest)
        let message: SignedMessage
        do { message = try challenge.message() } catch { throw ServerError(error) }
        let limits = ChallengeLimits(
            outstandingPerDevice: configuration.maxOutstandingChallengesPerDevice, now: now,
            lockout: windows.lockout(client: request.clientAddress, at: now, factor: .signature))
        switch try await run(request, { try await self.store.issueChallenge(challenge, limits: limits) }) {
        case .issued:
            metrics.challenges.increment()
            return ChallengeEnvelope(message)
        case .lockedOut:
            throw await refuseLockedOut(user: user, device: device, request)
        case .tooManyChallenges:
            await audit(.challengeRefused, user: user, device: device, reason: FailureReason.tooManyChallenges.description, request: request)
            throw ServerError(.rateLimited, detail: "too many outstanding challenges", retryAfter: Int(configuration.challengeTTL))
        }
    }

    /// Takes the challenge (consumed whatever happens next), verifies the signature over the
    /// message rebuilt from it and, in the same store transaction, records either the failure or
    /// what `success` builds. `success` returns nil when the challenge's binding does not fit.
    private func finish(
        _ challengeID: String, _ signature: String, purpose: SignedMessage.Purpose, session: SessionRecord?, _ request: RequestInfo,
        success: @escaping @Sendable (ChallengeRecord, Date) -> ChallengeVerdict?
    ) async throws(ServerError) -> RecordedVerdict {
        let id = try Validate.base64URL(challengeID, field: "challengeId", count: 16...16)
        let signatureBytes = try Validate.base64URL(signature, field: "signature", count: 1...256)
        if session == nil { try admit(request) }  // authenticated calls were admitted by authenticate(token:request:)
        let now = clock.now()
        let lockout = windows.lockout(client: request.clientAddress, at: now, factor: .signature)
        let relyingPartyID = configuration.relyingPartyID
        let recorded = try await run(request) {
            try await self.store.finishChallenge(id: id, lockout: lockout) { taken in
                func failure(_ reason: FailureReason) -> ChallengeVerdict {
                    let user = taken?.challenge.userID, device = taken?.challenge.deviceID
                    let audit = self.event(purpose.auditFailure, user: user, device: device, reason: reason.description, request: request)
                    // A signature lockout query counts the sending address only (FailureSubject).
                    return .failed(FailureRecord(reason, lockout: lockout, user: user, audit: audit))
                }
                guard let taken else { return failure(.unknownChallenge) }
                let challenge = taken.challenge
                if taken.lockedOut {
                    return .refused([self.event(.rateLimited, user: challenge.userID, device: challenge.deviceID, reason: FailureReason.lockedOut.description, request: request)])
                }
                guard challenge.purpose == purpose, challenge.relyingPartyID == relyingPartyID else { return failure(.wrongPurpose) }
                guard now <= challenge.expiresAt else { return failure(.expiredChallenge) }
                if let session, session.userID != challenge.userID { return failure(.wrongUser) }
                // Bound to the session that asked: a challenge leaked from one session is useless in another.
                if let bound = challenge.sessionID, bound != session?.id { return failure(.wrongSession) }
                // An unknown, revoked or foreign device still costs a full verification (against a
                // key nobody holds), so timing does not tell which device ids exist or are active.
                var spki: Data = Self.decoyKey.spkiRepresentation
                var deviceProblem: FailureReason?
                if case .registration(let key, _, _) = challenge.binding {
                    spki = key
                } else if let device = taken.device, !device.isRevoked, device.userID == challenge.userID {
                    spki = device.publicKey
                } else {
                    deviceProblem = taken.device == nil ? .unknownDevice : taken.device!.isRevoked ? .revokedDevice : .wrongUser
                }
                guard let key = try? DevicePublicKey(spki: spki) else { return failure(.unknownDevice) }
                guard let der = try? ECDSADERSignature(der: signatureBytes) else { return failure(deviceProblem ?? .malformedSignature) }
                let verified = (try? challenge.message()).map { key.isValidSignature(raw: der.rawRepresentation, for: $0.encoded) } ?? false
                if let deviceProblem { return failure(deviceProblem) }
                guard verified else { return failure(.badSignature) }
                return success(challenge, now) ?? failure(.wrongPurpose)
            }
        }
        switch recorded.verdict {
        case .failed(let failure): throw failed(failure, locked: recorded.lockedSubjects, request)
        case .refused(let events):
            metrics.rateLimited.increment()
            for event in events { log(event) }
            throw ServerError(.rateLimited, retryAfter: windows.retryAfter(now))
        case .login, .enrolment, .approval: return recorded
        }
    }

    /// Logs and counts a recorded verification failure; returns the uniform error to throw.
    private func failed(_ failure: FailureRecord, locked: [FailureSubject], _ request: RequestInfo) -> ServerError {
        metrics.failures.increment()
        logger.notice("verification failed", metadata: metadata(failure.audit))
        for subject in locked {
            metrics.lockouts.increment()
            log(failure.lockoutEvent(subject))
        }
        return ServerError.authenticationFailed(failure.reason)
    }

    private func refuseLockedOut(user: String?, device: String?, retryAfter: Int? = nil, _ request: RequestInfo) async -> ServerError {
        metrics.rateLimited.increment()
        await audit(.rateLimited, user: user, device: device, reason: FailureReason.lockedOut.description, request: request)
        return ServerError(.rateLimited, retryAfter: retryAfter ?? windows.retryAfter(clock.now()))
    }

    /// Counts a request against this instance's per-client limit.
    private func admit(_ request: RequestInfo) throws(ServerError) {
        if let retryAfter = requests.admit(request.clientAddress, at: clock.now()) {
            metrics.rateLimited.increment()
            throw ServerError(.rateLimited, retryAfter: retryAfter)
        }
    }

    private func sessionRecord(token: SecretBytes, user: String, device: String?, kind: SessionKind, ttl: TimeInterval, at now: Date) -> SessionRecord {
        SessionRecord(
            id: UUID().uuidString.lowercased(), tokenHash: Data(SHA256.hash(data: token.data)), userID: user, deviceID: device, kind: kind,
            createdAt: now, expiresAt: now.addingTimeInterval(ttl))
    }

    private func newSession(user: String, device: String?, kind: SessionKind, ttl: TimeInterval, at now: Date) -> (SessionRecord, String) {
        let token = SecretBytes.random(count: 32)
        return (sessionRecord(token: token, user: user, device: device, kind: kind, ttl: ttl, at: now), Base64URL.encode(token.data))
    }

    private func hashPassword(_ password: String, salt: Data, rounds: Int) throws(ServerError) -> Data {
        do { return try SlowHash.derive(password, salt: salt, rounds: rounds) } catch { throw ServerError(.internalError) }
    }

    func event(_ kind: AuditKind, user: String? = nil, device: String? = nil, reason: String? = nil, request: RequestInfo) -> AuditEvent {
        AuditEvent(at: clock.now(), kind: kind.description, userID: user, deviceID: device, reason: reason, clientAddress: request.clientAddress, requestID: request.requestID)
    }

    /// Appends one audit event on its own (refusals and rejections; flows pass theirs to the store).
    package func audit(_ kind: AuditKind, user: String? = nil, device: String? = nil, reason: String? = nil, request: RequestInfo) async {
        let event = event(kind, user: user, device: device, reason: reason, request: request)
        do { try await store.appendAudit(event) } catch {
            logger.error("audit append failed", metadata: metadata(event).merging(["error": "\(String(describing: type(of: error)))"]) { $1 })
        }
        log(event)
    }

    /// Logs an audit event the store has committed.
    private func log(_ event: AuditEvent) {
        logger.info("audit", metadata: metadata(event).merging(["event": "\(event.kind)"]) { $1 })
    }

    private func log(_ kind: AuditKind, user: String?, request: RequestInfo) { log(event(kind, user: user, request: request)) }

    /// What stands for a username in a log line: a keyed hash, never the name (which may be a
    /// mistyped password). The audit log in the database keeps the user id of known users only.
    func pseudonym(_ username: String) -> String {
        "u-" + Data(HMAC<SHA256>.authenticationCode(for: Data(username.utf8), using: SymmetricKey(data: configuration.logPseudonymKey.data)).prefix(8)).hexString
    }

    private func metadata(_ event: AuditEvent) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["request_id": "\(event.requestID ?? "")", "client": "\(event.clientAddress ?? "")"]
        if let user = event.userID { metadata["user"] = "\(pseudonym(user))" }
        if let device = event.deviceID { metadata["device"] = "\(device)" }
        if let reason = event.reason { metadata["reason"] = "\(reason)" }
        return metadata
    }

    /// Runs a store call. An unreachable database is a 503 with Retry-After; any other store
    /// failure is logged and becomes a 500 (never client input).
    private func run<T: Sendable>(_ request: RequestInfo, _ body: @Sendable () async throws -> T) async throws(ServerError) -> T {
        do { return try await body() } catch { throw storeFailure(error, request) }
    }

    private func storeFailure(_ error: any Error, _ request: RequestInfo) -> ServerError {
        let unavailable = (error as? StoreError)?.code == .unavailable
        logger.error(
            unavailable ? "store unavailable" : "store failure",
            metadata: ["request_id": "\(request.requestID)", "error": "\(String(describing: type(of: error)))", "detail": "\((error as? StoreError)?.description ?? "")"])
        return unavailable ? ServerError(.unavailable, retryAfter: 2) : ServerError(.internalError)
    }
}

extension SignedMessage.Purpose {
    var auditFailure: AuditKind {
        switch self {
        case .registration: .deviceEnrollmentFailed
        case .login: .loginFailed
        case .stepUp: .stepUpFailed
        }
    }
}

/// Counters exported through swift-metrics (a Prometheus endpoint in BioAuthHTTP).
struct ServiceMetrics: Sendable {
    let challenges, logins, failures, enrolments, stepUps, lockouts, rateLimited: Counter

    init(factory: (any MetricsFactory)?) {
        func counter(_ label: String) -> Counter {
            factory.map { Counter(label: label, dimensions: [], factory: $0) } ?? Counter(label: label)
        }
        challenges = counter("bioauth_challenges_issued_total")
        logins = counter("bioauth_logins_total")
        failures = counter("bioauth_verification_failures_total")
        enrolments = counter("bioauth_enrolments_total")
        stepUps = counter("bioauth_step_up_approvals_total")
        lockouts = counter("bioauth_lockouts_total")
        rateLimited = counter("bioauth_rate_limited_total")
    }
}
