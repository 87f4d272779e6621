import BioAuthCore
import Crypto
import Foundation
import Logging
import Metrics

/// The primary login (the demo's username and password, or your own ``PrimaryAuthenticator``) and
/// the sessions a user holds.
struct Account: Flow {
    let context: FlowContext

    func createUser(username: String, password: String, request: RequestInfo) async throws(ServerError) {
        try requirePasswordLogin()
        let username = try Validate.username(username)
        let password = try Validate.password(password)
        try await admit(request)
        // An id of the backend's declared namespace is taken, now or before the backend uses it.
        if configuration.isDeclaredBackendUserID(username) { throw ServerError(.conflict, field: "username", detail: "exists") }
        // A sign-up waits with the unknown usernames: nobody has the name yet.
        let place = try await reservePasswordHashing(.anonymous)
        let salt = SecretBytes.random(count: 16).data
        let hash = try await passwordHash(password, salt: salt, rounds: configuration.passwordRounds, in: place)
        let now = clock.now()
        let user = UserRecord(
            id: username, passwordSalt: salt, passwordRounds: configuration.passwordRounds, passwordHash: hash, createdAt: now)
        // A taken id — a password account, or an id the app's backend owns — is one answer.
        let taken = ServerError(.conflict, field: "username", detail: "exists")
        let outcome: PlanOutcome
        do { outcome = try await writer.apply(.createUser(user, audit: event(.userCreated, user: username, request: request))) } catch let
            error as StoreError
            where error.code == .duplicate
        {
            throw taken
        } catch { throw storeFailure(error, request) }
        guard outcome.wasApplied else { throw taken }
        log(.userCreated, user: username, request: request)
    }

    /// 404 when the deployment switched the built-in password login off (``ServerConfiguration/passwordLogin``).
    private func requirePasswordLogin() throws(ServerError) {
        guard configuration.passwordLogin else { throw ServerError(.notFound, detail: "password login is switched off") }
    }

    /// Audits a failed password attempt and counts it against the address (the user's counters
    /// were counted when the attempt was decided); the uniform error to throw. An unknown
    /// "username" may be a password typed into the wrong field: it is not written to the audit log
    /// (the log line carries only a keyed hash of it).
    private func countFailure(
        _ reason: FailureReason, of attempt: PasswordAttempt, username: UserID, lockout: LockoutQuery, _ request: RequestInfo
    ) async throws(ServerError) -> ServerError {
        let audited = event(.passwordLoginFailed, user: attempt.user == nil ? nil : username, reason: AuditReason(reason), request: request)
        var failure = FailureRecord(reason, lockout: lockout, audit: audited)
        failure.reachedEarlier = attempt.reached
        let locked = try await run(request) { [failure] in try await self.writer.apply(.failure(failure)).lockedSubjects }
        return failed(failure, locked: locked, request)
    }

    /// Under a flood, when a background lane is full: reads (no write) which lane the attempt
    /// would wait in and, if that one is full too, answers 503 at once, charged to the sender as
    /// ``shedRequestCost`` requests — a flood's refused guesses cost neither the database a write
    /// nor the device logins beside them. An attempt with a sign-in code goes on to be decided.
    private func shedEarly(username: UserID, lockout: LockoutQuery, carriesCode: Bool, _ request: RequestInfo) async throws(ServerError) {
        let pool = context.passwordHashes
        guard !carriesCode, !pool.hasRoom(.existingUser) || !pool.hasRoom(.anonymous) else { return }
        let lane = try await run(request) { try await self.store.passwordLoginState(username: username, lockout: lockout) }.lane
        guard !pool.hasRoom(lane) else { return }
        throw await shed(lane, charging: request)
    }

    /// What a shed password login costs its sender: ten requests of the request limit
    /// (``RateLimitPolicy/requestsPerClient``), the one it was included.
    static let shedRequestCost = 10

    /// A password login; `signInCode` is one ``sendSignInCode(username:request:)`` sent for this
    /// address, which lets the attempt past the back-off strangers' wrong passwords caused.
    func passwordLogin(username: String, password: String, signInCode: String? = nil, request: RequestInfo) async throws(ServerError)
        -> SessionGrant
    {
        try requirePasswordLogin()
        let username = try Validate.username(username)
        let password = try Validate.password(password)
        let code = try signInCode.map { (code) throws(ServerError) in try Validate.recoveryCode(code, field: "signInCode") }
        try await admit(request)
        let now = clock.now()
        let lockout = windows.lockout(client: request.clientAddress, at: now)
        try await shedEarly(username: username, lockout: lockout, carriesCode: code != nil, request)
        // The attempt is decided and counted before the slow hash, in one transaction under the
        // user's lock: parallel guesses cannot all pass it. A success clears the counters below.
        let limits = PasswordAttemptLimits(
            lockout: lockout, windowEnd: windows.windowEnd(now), passwordsPerClient: windows.policy.passwordFailuresPerClient,
            run: configuration.passwordRun,
            signInCode: code)
        let attempt = try await run(request) {
            try await self.writer.run(BeginPasswordAttempt(username: username, limits: limits, now: now))
        }
        if let until = attempt.refusedUntil {
            // The real wait: the window's end or the back-off's, whichever is later.
            throw await refuseLockedOut(
                user: attempt.user == nil ? nil : username, device: nil, retryAfter: retryAfter(until: until, from: now), request)
        }
        if attempt.rejectedCode {
            // A wrong, expired or other network's sign-in code: counted like a wrong password
            // against the user from this address (never the run: made-up codes cannot lengthen
            // the owner's back-off) and refused without a hash — the answer says nothing about
            // the password.
            throw try await countFailure(.recoveryCodeRejected, of: attempt, username: username, lockout: lockout, request)
        }
        // The attempt waits for a hash in the lane of what it can be: the owner at a known address
        // never queues behind strangers' guesses. One that finds its lane full (taken since
        // shedEarly looked) was counted already, and costs its sender as a shed request does.
        guard let place = context.passwordHashes.reserve(attempt.lane) else { throw await shed(attempt.lane, charging: request) }
        // Unknown users cost a hash too, so timing does not tell which usernames exist.
        let user = attempt.user
        let salt = user?.passwordSalt ?? Data(SHA256.hash(data: Data(username.rawValue.utf8)).prefix(16))
        let hash = try await passwordHash(password, salt: salt, rounds: user?.passwordRounds ?? configuration.passwordRounds, in: place)
        guard let user, constantTimeEquals(hash, user.passwordHash) else {
            throw try await countFailure(
                user == nil ? .unknownUser : .badPassword, of: attempt, username: username, lockout: lockout, request)
        }
        let (session, token) = newSession(user: username, device: nil, kind: .primary, ttl: configuration.primarySessionTTL, at: now)
        // A hash made with fewer rounds than today's setting is replaced now, while the password is at hand.
        var rehashed: UserRecord?
        if user.passwordRounds < configuration.passwordRounds {
            let salt = SecretBytes.random(count: 16).data
            rehashed = UserRecord(
                id: username, passwordSalt: salt, passwordRounds: configuration.passwordRounds,
                passwordHash: try await passwordHash(password, salt: salt, rounds: configuration.passwordRounds, in: place),
                createdAt: user.createdAt)
        }
        try await run(request) { [rehashed] in
            // A sign-in code works once.
            let used = code.map { [FailureSubject.signInCode(username, client: lockout.client, code: $0)] } ?? []
            let plan = WritePlan.login(
                session, from: lockout.client, clearing: [.password(username, client: lockout.client), .passwordRun(username)] + used,
                rehashed: rehashed,
                audit: self.event(.passwordLoginSucceeded, user: username, request: request))
            _ = try await self.writer.apply(plan)
        }
        log(.passwordLoginSucceeded, user: username, request: request)
        return SessionGrant(token: token, session: session)
    }

    /// Sends a sign-in code (``RecoveryMessage/Purpose-swift.enum/signIn``) to `username` through
    /// the recovery channel, for a password login from the requesting address within
    /// ``RecoveryCodeLimits/signInCodeLifetime``: the owner's way past the back-off that strangers'
    /// wrong passwords cause at every address the owner never used. Codes count against the
    /// requester's ``RecoveryCodeLimits/perRequesterPerDay`` for the username, whether or not the
    /// user exists, and the answer is the same either way: it never tells which usernames exist.
    func sendSignInCode(username: String, request: RequestInfo) async throws(ServerError) {
        try requirePasswordLogin()
        let username = try Validate.username(username)
        try await admit(request)
        guard let channel = context.recoveryChannel else { throw ServerError(.forbidden, detail: "noRecoveryChannel") }
        let now = clock.now(), limits = configuration.enrolment.recoveryCodes, client = request.clientAddress
        let exists =
            try await run(request) {
                try await self.store.passwordLoginState(username: username, lockout: self.windows.lockout(client: client, at: now))
            }.user != nil
        let code = RecoveryCode.random(), expiresAt = now.addingTimeInterval(RecoveryCodeLimits.signInCodeLifetime)
        let audit = event(.signInCodeSent, user: username, request: request)
        let decided = try await run(request) {
            try await self.writer.decide(locking: RowLocks(counters: FailureSubject.recoveryCodeCounters(username, client: client))) {
                rows -> (verdict: Date?, plan: WritePlan) in
                var plan = WritePlan()
                if let until = plan.chargeRecoveryCode(rows, userID: username, requester: client, limits: limits, at: now) {
                    return (until, WritePlan())
                }
                if exists {
                    plan.add(
                        .setCounter(.signInCode(username, client: client, code: code.hash), FailureCounter(since: expiresAt, count: 0)))
                    plan.audit(audit)
                }
                return (nil, plan)
            }
        }
        if let until = decided.verdict {
            throw ServerError(.rateLimited, detail: "too many recovery codes", retryAfter: retryAfter(until: until, from: now))
        }
        guard exists else { return }
        log(audit, request: request)
        // Delivered after the answer, so its time does not tell that the user exists; a failed
        // delivery is logged (the requester, who may be anyone, is not told).
        let message = RecoveryMessage(
            signIn: code, userID: username, clientAddress: client, id: EnrolmentRequestID(UUID().uuidString.lowercased()),
            expiresAt: expiresAt)
        let logger = logger, metadata = metadata(audit)
        Task {
            do { try await channel.deliver(message) } catch {
                logger.error("sign-in code delivery failed", metadata: metadata.merging(["error": "\(type(of: error))"]) { $1 })
            }
        }
    }

    func primaryLogin<Authenticator: PrimaryAuthenticator>(
        _ credential: Authenticator.Credential, with authenticator: Authenticator, request: RequestInfo
    ) async throws(ServerError) -> SessionGrant {
        try await admit(request)
        let now = clock.now()
        let lockout = windows.lockout(client: request.clientAddress, at: now)
        // Only the address's counter is consulted.
        if try await run(request, { try await self.store.passwordLoginState(username: nil, lockout: lockout) }).lockedOut {
            throw await refuseLockedOut(user: nil, device: nil, request)
        }
        let proven: String?
        do { proven = try await authenticator.authenticate(credential, request: request) } catch {
            logger(for: request).error("primary authenticator failed", metadata: ["error": "\(type(of: error))"])
            throw ServerError(.unavailable, retryAfter: 5)
        }
        guard let proven else {
            let failure = FailureRecord(
                .primaryLoginRejected, lockout: lockout,
                audit: event(.primaryLoginFailed, reason: AuditReason(FailureReason.primaryLoginRejected), request: request))
            let locked = try await run(request) { [failure] in try await self.writer.apply(.failure(failure)).lockedSubjects }
            throw failed(failure, locked: locked, request)
        }
        let userID = try Validate.username(proven, field: "userId")
        let (session, token) = newSession(user: userID, device: nil, kind: .primary, ttl: configuration.primarySessionTTL, at: now)
        let audit = event(.primaryLoginSucceeded, user: userID, request: request)
        try await openBackendSession(session, from: lockout.client, audit: audit, request: request)
        log(audit, request: request)
        return SessionGrant(token: token, session: session)
    }

    /// The session a bearer token names; a refused one is audited like a refused proof, with its
    /// reason only (`session.rejected`).
    func authenticate(token: String?, request: RequestInfo) async throws(ServerError) -> SessionRecord {
        do { return try await session(presenting: token, request: request) } catch {
            if let reason = error.reason { await audit(.sessionRejected, reason: AuditReason(reason), request: request) }
            throw error
        }
    }

    private func session(presenting token: String?, request: RequestInfo) async throws(ServerError) -> SessionRecord {
        try await admit(request)  // token guessing pays the request limit too
        guard let token, let bytes = Base64URL.decode(token), bytes.count == 32 else {
            throw ServerError.authenticationFailed(token == nil ? .missingSession : .unknownSession)
        }
        let hash = TokenHash(of: bytes)
        guard let state = try await run(request, { try await self.store.session(tokenHash: hash) }) else {
            throw ServerError.authenticationFailed(.unknownSession)
        }
        let session = state.session
        if session.revokedAt != nil { throw ServerError.authenticationFailed(.revokedSession) }
        if session.expiresAt <= clock.now() { throw ServerError.authenticationFailed(.expiredSession) }
        if !state.deviceActive { throw ServerError.authenticationFailed(.revokedDeviceSession) }
        // A session bound to a DPoP key is honoured only as `Authorization: DPoP` with a proof by
        // that key whose `ath` is this token's hash, each proof once; a bound token sent as a
        // bearer token is refused like a wrong one.
        guard let bound = session.dpopThumbprint else {
            if request.dpop?.dpopScheme == true { throw ServerError.dpopRefused(.dpop(.missing)) }
            return session
        }
        guard request.dpop?.dpopScheme == true, request.dpop?.proof != nil else {
            throw ServerError.dpopRefused(.dpop(.missing))
        }
        let proof: DPoPProof?
        do { proof = try await dpopProof(request, accessToken: token, tokenEndpoint: false, remember: true) } catch {
            // On an account call a refused proof is a refused session: the uniform 401, its reason audited.
            guard error.code == .invalidDPoPProof, let detail = error.detail else { throw error }
            throw ServerError.dpopRefused(FailureReason.dpopRefusal(detail))
        }
        guard proof?.thumbprint == bound else { throw ServerError.dpopRefused(.dpop(.wrongKey)) }
        return session
    }

    func sessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [SessionRecord] {
        try authorizeUnread(.listSessions, session)
        let now = clock.now()
        return try await run(request) { try await self.store.sessions(userID: session.userID) }.filter {
            $0.revokedAt == nil && $0.expiresAt > now
        }
    }

    func revokeSession(id: SessionID, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        if id == session.id {
            try authorizeUnread(.endOwnSession, session)
        } else {
            let caller = try await authorize(.endOtherSession, session, request: request)
            if caller.credential == .coolingDevice {
                // During its cool-down a device ends only the sessions it opened itself.
                let target = try await run(request) { try await self.store.session(id: id) }
                if let target, target.session.userID == session.userID, target.session.deviceID != session.deviceID {
                    throw Self.coolingDown(field: "sessionId")
                }
            }
        }
        let audit = event(.sessionRevoked, user: session.userID, device: session.deviceID, request: request)
        let plan = WritePlan.revokeSession(id: id, userID: session.userID, at: clock.now(), audit: audit)
        guard try await run(request, { try await self.writer.apply(plan) }).wasApplied else {
            throw ServerError(.notFound, field: "sessionId")
        }
        log(audit, request: request)
    }

    func revokeAllSessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Int {
        try await authorize(.endAllSessions, session, request: request)
        let audit = event(
            .sessionsRevoked, user: session.userID, device: session.deviceID, reason: .allSessions, request: request)
        let plan = WritePlan.revokeSessions(userID: session.userID, at: clock.now(), audit: audit)
        let count = try await run(request, { try await self.writer.apply(plan) }).revokedSessions
        log(audit, request: request)
        return count
    }

    func auditEvents(of session: SessionRecord, limit: Int, request: RequestInfo) async throws(ServerError) -> [AuditEvent] {
        try authorizeUnread(.readAuditLog, session)
        return try await run(request) { try await self.store.auditEvents(userID: session.userID, limit: min(max(limit, 1), 1000)) }
    }

    /// The user's security notices (``AuditKind/securityNotices``) after `since` (in whole seconds,
    /// as the wire gives times), newest first, at most 100, from the last 1,000 rows of the user's audit log.
    func securityEvents(of session: SessionRecord, since: Date?, request: RequestInfo) async throws(ServerError) -> [AuditEvent] {
        try authorizeUnread(.readSecurityEvents, session)
        let rows = try await run(request) { try await self.store.auditEvents(userID: session.userID, limit: 1_000) }
        let after = since.map { $0.timeIntervalSince1970.rounded(.down) } ?? -.infinity
        return Array(
            rows.filter { AuditKind.securityNotices.contains($0.kind) && $0.at.timeIntervalSince1970.rounded(.down) > after }.prefix(100))
    }

    /// A new password's hash at today's rounds, through the hashing pool like any password request
    /// (in the proven lane: a signed-in user asks).
    func hashNewPassword(_ password: String, salt: Data) async throws(ServerError) -> Data {
        let place = try await reservePasswordHashing(.proven)
        return try await passwordHash(password, salt: salt, rounds: configuration.passwordRounds, in: place)
    }

    /// A place for one password request in `lane`, or 503 with the time the waiting ones need (``PasswordHashingPolicy``).
    private func reservePasswordHashing(_ lane: PasswordHashLane) async throws(ServerError) -> PasswordHashPool.Place {
        guard let place = context.passwordHashes.reserve(lane) else { throw await shed(lane) }
        return place
    }

    /// The 503 for a request whose lane is full, with the time the requests ahead of it need;
    /// a login attempt's sender is charged ``shedRequestCost`` requests for it.
    private func shed(_ lane: PasswordHashLane, charging request: RequestInfo? = nil) async -> ServerError {
        metrics.passwordRequestsShed.increment()
        if let request { _ = await context.requests.admit(request.requestSubject, at: clock.now(), weight: Self.shedRequestCost - 1) }
        return ServerError(.unavailable, detail: "too many password requests", retryAfter: context.passwordHashes.retryAfter(lane))
    }

    private func passwordHash(_ password: String, salt: Data, rounds: Int, in place: borrowing PasswordHashPool.Place)
        async throws(ServerError) -> Data
    {
        do { return try await place.derive(password, salt: salt, rounds: rounds) } catch { throw ServerError(.internalError) }
    }
}
