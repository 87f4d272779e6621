import BioAuthCore
import Crypto
import Foundation
import Logging
import Metrics

/// A session token handed to the client once. The server keeps only its SHA-256.
/// Its description omits the token.
public struct SessionGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public var token: String
    public var session: SessionRecord

    public var description: String { "SessionGrant(session: \(session.id), user: \(session.userID), token: redacted)" }
    public var debugDescription: String { description }
}

/// A one-time step-up approval handed to the client once. The server keeps only its SHA-256.
/// Its description omits the approval.
public struct ApprovalGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public var approval: String
    public var record: ApprovalRecord

    public var description: String { "ApprovalGrant(user: \(record.userID), device: \(record.deviceID), approval: redacted)" }
    public var debugDescription: String { description }
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
    let logger: Logger
    let limiter: RateLimiter
    let metrics: ServiceMetrics

    public init(
        store: any BioAuthStore, configuration: ServerConfiguration = ServerConfiguration(), clock: any WallClock = SystemWallClock(),
        logger: Logger = Logger(label: "BioAuthServer"), metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        limiter = RateLimiter(store: store, policy: configuration.rateLimits, clock: clock)
        metrics = ServiceMetrics(factory: metricsFactory)
    }

    // MARK: - Primary login (demo: username + password)

    /// Creates a demo user.
    public func createUser(username: String, password: String, request: RequestInfo) async throws(ServerError) {
        let username = try Validate.username(username)
        let password = try Validate.password(password)
        try await admit(request)
        let salt = SecretBytes.random(count: 16).data
        let hash = try hashPassword(password, salt: salt, rounds: configuration.passwordRounds)
        let user = UserRecord(id: username, passwordSalt: salt, passwordRounds: configuration.passwordRounds, passwordHash: hash, createdAt: clock.now())
        do { try await store.insertUser(user) } catch let error as StoreError where error.code == .duplicate {
            throw ServerError(.conflict, field: "username", detail: "exists")
        } catch { throw internalError(error, request) }
        await audit("user.created", user: username, request: request)
    }

    /// Checks a username and password and opens a primary session (which may enrol devices).
    public func passwordLogin(username: String, password: String, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        let username = try Validate.username(username)
        let password = try Validate.password(password)
        try await admit(request)
        if let locked = try await lockout(user: username, device: nil, request) { throw locked }
        let user = try await run(request) { try await self.store.user(id: username) }
        // Unknown users cost a hash too, so timing does not tell which usernames exist.
        let salt = user?.passwordSalt ?? Data(SHA256.hash(data: Data(username.utf8)).prefix(16))
        let hash = try hashPassword(password, salt: salt, rounds: user?.passwordRounds ?? configuration.passwordRounds)
        guard let user else { throw await fail(.unknownUser, kind: "password.login.failed", user: username, device: nil, request) }
        guard constantTimeEquals(hash, user.passwordHash) else {
            throw await fail(.badPassword, kind: "password.login.failed", user: username, device: nil, request)
        }
        try await run(request) { try await self.limiter.recordSuccess(user: username, device: nil) }
        let grant = try await openSession(user: username, device: nil, kind: .primary, ttl: configuration.primarySessionTTL, request)
        await audit("password.login.succeeded", user: username, request: request)
        return grant
    }

    // MARK: - Sessions

    /// The active session a bearer token names.
    /// - Throws: `authenticationFailed` for a missing, unknown, expired or revoked token.
    public func authenticate(token: String?, request: RequestInfo) async throws(ServerError) -> SessionRecord {
        guard let token, let bytes = Base64URL.decode(token), bytes.count == 32 else {
            throw ServerError.authenticationFailed(token == nil ? .missingSession : .unknownSession)
        }
        let hash = Data(SHA256.hash(data: bytes))
        guard let session = try await run(request, { try await self.store.session(tokenHash: hash) }) else {
            throw ServerError.authenticationFailed(.unknownSession)
        }
        if session.revokedAt != nil { throw ServerError.authenticationFailed(.revokedSession) }
        if session.expiresAt <= clock.now() { throw ServerError.authenticationFailed(.expiredSession) }
        if let deviceID = session.deviceID, try await run(request, { try await self.store.device(id: deviceID) })?.isRevoked ?? true {
            throw ServerError.authenticationFailed(.revokedDeviceSession)
        }
        return session
    }

    public func sessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [SessionRecord] {
        try await run(request) { try await self.store.sessions(userID: session.userID) }
            .filter { $0.revokedAt == nil && $0.expiresAt > self.clock.now() }
    }

    public func revokeSession(id: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        guard try await run(request, { try await self.store.revokeSession(id: id, userID: session.userID, at: self.clock.now()) }) else {
            throw ServerError(.notFound, field: "sessionId")
        }
        await audit("session.revoked", user: session.userID, device: session.deviceID, request: request)
    }

    /// Revokes every session of the user (logging out everywhere); returns how many.
    public func revokeAllSessions(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Int {
        let count = try await run(request) { try await self.store.revokeSessions(userID: session.userID, deviceID: nil, at: self.clock.now()) }
        await audit("sessions.revoked", user: session.userID, reason: "count=\(count)", request: request)
        return count
    }

    // MARK: - Enrolment

    /// Starts enrolling a device key. Only a primary-login session may enrol; the key is bound to
    /// the challenge now and must sign it to prove possession.
    ///
    /// - Parameter replacesDeviceID: re-enrolment of a device whose key was invalidated (an
    ///   enrollment change on the phone): on success the old key is replaced.
    public func beginRegistration(
        session: SessionRecord, name: String, publicKey: String, replacesDeviceID: String?, request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        guard session.kind == .primary else { throw ServerError(.forbidden, detail: "enrolment requires a primary-login session") }
        let name = try Validate.deviceName(name)
        let spki = try Validate.base64URL(publicKey, field: "publicKey", count: 1...512)
        do { _ = try DevicePublicKey(spki: spki, field: "publicKey") } catch { throw ServerError(error) }
        try await admit(request)
        var deviceID = UUID().uuidString.lowercased()
        if let replacesDeviceID {
            let id = try Validate.deviceID(replacesDeviceID, field: "replacesDeviceId")
            guard let device = try await run(request, { try await self.store.device(id: id) }), device.userID == session.userID else {
                throw ServerError(.notFound, field: "replacesDeviceId")
            }
            deviceID = id
        }
        return try await issue(.registration, user: session.userID, device: deviceID, registrationKey: spki, deviceName: name, request)
    }

    /// Finishes enrolment: the new key's signature over the registration challenge.
    public func finishRegistration(
        session: SessionRecord, challengeID: String, signature: String, request: RequestInfo
    ) async throws(ServerError) -> DeviceRecord {
        let (challenge, _) = try await consumeAndVerify(challengeID, signature, purpose: .registration, sessionUser: session.userID, request)
        let now = clock.now()
        let key = challenge.registrationKey ?? Data()
        let replaced = try await run(request) {
            try await self.store.replaceDeviceKey(id: challenge.deviceID, userID: challenge.userID, publicKey: key, at: now)
        }
        if replaced {
            _ = try await run(request) { try await self.store.revokeSessions(userID: challenge.userID, deviceID: challenge.deviceID, at: now) }
            await audit("device.reenrolled", user: challenge.userID, device: challenge.deviceID, request: request)
        } else {
            let device = DeviceRecord(id: challenge.deviceID, userID: challenge.userID, name: challenge.deviceName ?? "device", publicKey: key, createdAt: now)
            try await run(request) { try await self.store.insertDevice(device) }
            await audit("device.enrolled", user: challenge.userID, device: challenge.deviceID, request: request)
        }
        metrics.enrolments.increment()
        guard let device = try await run(request, { try await self.store.device(id: challenge.deviceID) }) else {
            throw ServerError(.internalError)
        }
        return device
    }

    // MARK: - Login

    /// Issues a login challenge for a device. Answers the same way whether or not the device
    /// exists: the failure, if any, comes at ``finishLogin(challengeID:signature:request:)``.
    public func beginLogin(userID: String, deviceID: String, request: RequestInfo) async throws(ServerError) -> ChallengeEnvelope {
        let userID = try Validate.username(userID, field: "userId")
        let deviceID = try Validate.deviceID(deviceID)
        try await admit(request)
        if let locked = try await lockout(user: userID, device: deviceID, request) { throw locked }
        return try await issue(.login, user: userID, device: deviceID, request)
    }

    /// Verifies the device's signature over its login challenge and opens a session.
    public func finishLogin(challengeID: String, signature: String, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        let (challenge, _) = try await consumeAndVerify(challengeID, signature, purpose: .login, sessionUser: nil, request)
        try await run(request) {
            try await self.limiter.recordSuccess(user: challenge.userID, device: challenge.deviceID)
            try await self.store.touchDevice(id: challenge.deviceID, at: self.clock.now())
        }
        let grant = try await openSession(user: challenge.userID, device: challenge.deviceID, kind: .device, ttl: configuration.sessionTTL, request)
        metrics.logins.increment()
        await audit("login.succeeded", user: challenge.userID, device: challenge.deviceID, request: request)
        return grant
    }

    // MARK: - Step-up

    /// Issues a challenge bound to the SHA-256 of `operation` (base64url bytes the app shows and approves).
    public func beginStepUp(session: SessionRecord, deviceID: String, operation: String, request: RequestInfo) async throws(ServerError) -> ChallengeEnvelope {
        let deviceID = try Validate.deviceID(deviceID)
        let details = try Validate.base64URL(operation, field: "operation", count: 1...configuration.maxOperationSize)
        try await admit(request)
        guard let device = try await run(request, { try await self.store.device(id: deviceID) }), device.userID == session.userID, !device.isRevoked else {
            throw ServerError(.notFound, field: "deviceId")
        }
        return try await issue(.stepUp, user: session.userID, device: deviceID, operationHash: Data(SHA256.hash(data: details)), request)
    }

    /// Verifies the step-up signature and returns a one-time approval for that operation.
    public func finishStepUp(session: SessionRecord, challengeID: String, signature: String, request: RequestInfo) async throws(ServerError) -> ApprovalGrant {
        let (challenge, _) = try await consumeAndVerify(challengeID, signature, purpose: .stepUp, sessionUser: session.userID, request)
        let token = SecretBytes.random(count: 32)
        let now = clock.now()
        let record = ApprovalRecord(
            tokenHash: Data(SHA256.hash(data: token.data)), userID: challenge.userID, deviceID: challenge.deviceID,
            operationHash: challenge.operationHash ?? Data(), createdAt: now, expiresAt: now.addingTimeInterval(configuration.approvalTTL))
        try await run(request) {
            try await self.store.insertApproval(record)
            try await self.limiter.recordSuccess(user: challenge.userID, device: challenge.deviceID)
        }
        metrics.stepUps.increment()
        await audit("stepup.approved", user: challenge.userID, device: challenge.deviceID, request: request)
        return ApprovalGrant(approval: Base64URL.encode(token.data), record: record)
    }

    /// Redeems an approval for exactly the operation it was granted for, once.
    public func redeemApproval(approval: String, operation: String, request: RequestInfo) async throws(ServerError) -> ApprovalRecord {
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let details = try Validate.base64URL(operation, field: "operation", count: 1...configuration.maxOperationSize)
        let hash = Data(SHA256.hash(data: token))
        let operationHash = Data(SHA256.hash(data: details))
        guard let record = try await run(request, { try await self.store.consumeApproval(tokenHash: hash, operationHash: operationHash, now: self.clock.now()) }) else {
            await audit("approval.rejected", reason: FailureReason.approvalRejected.description, request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        await audit("approval.redeemed", user: record.userID, device: record.deviceID, request: request)
        return record
    }

    // MARK: - Devices

    public func devices(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRecord] {
        try await run(request) { try await self.store.devices(userID: session.userID) }
    }

    public func renameDevice(id: String, name: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        let id = try Validate.deviceID(id)
        let name = try Validate.deviceName(name)
        guard try await run(request, { try await self.store.renameDevice(id: id, userID: session.userID, name: name) }) else {
            throw ServerError(.notFound, field: "deviceId")
        }
        await audit("device.renamed", user: session.userID, device: id, request: request)
    }

    /// Revokes a device and every session it opened.
    public func revokeDevice(id: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        let id = try Validate.deviceID(id)
        let now = clock.now()
        guard try await run(request, { try await self.store.revokeDevice(id: id, userID: session.userID, at: now) }) else {
            throw ServerError(.notFound, field: "deviceId")
        }
        _ = try await run(request) { try await self.store.revokeSessions(userID: session.userID, deviceID: id, at: now) }
        await audit("device.revoked", user: session.userID, device: id, request: request)
    }

    /// The user's own audit events, newest first.
    public func auditEvents(of session: SessionRecord, limit: Int = 100, request: RequestInfo) async throws(ServerError) -> [AuditEvent] {
        try await run(request) { try await self.store.auditEvents(userID: session.userID, limit: min(max(limit, 1), 1000)) }
    }

    /// Deletes expired challenges; returns how many.
    @discardableResult
    public func sweepExpiredChallenges() async throws -> Int {
        try await store.deleteChallenges(expiredBefore: clock.now())
    }

    // MARK: - Internals

    private func issue(
        _ purpose: SignedMessage.Purpose, user: String, device: String, operationHash: Data? = nil, registrationKey: Data? = nil,
        deviceName: String? = nil, _ request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        let now = clock.now()
        let expiry = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + configuration.challengeTTL).rounded(.down))
        let challenge = ChallengeRecord(
            id: SecretBytes.random(count: 16).data, purpose: purpose, relyingPartyID: configuration.relyingPartyID, userID: user,
            deviceID: device, nonce: SecretBytes.random(count: 32).data, createdAt: now, expiresAt: expiry,
            operationHash: operationHash, registrationKey: registrationKey, deviceName: deviceName)
        let message: SignedMessage
        do { message = try challenge.message() } catch { throw ServerError(error) }
        do {
            try await store.insertChallenge(challenge, outstandingLimit: configuration.maxOutstandingChallengesPerDevice, now: now)
        } catch let error as StoreError where error.code == .tooManyChallenges {
            await audit("challenge.refused", user: user, device: device, reason: "tooManyChallenges", request: request)
            throw ServerError(.rateLimited, detail: "too many outstanding challenges", retryAfter: Int(configuration.challengeTTL))
        } catch { throw internalError(error, request) }
        metrics.challenges.increment()
        return ChallengeEnvelope(message)
    }

    /// Consumes the challenge (whatever happens next) and verifies the signature over the
    /// message rebuilt from it. Returns the challenge and the key that verified.
    private func consumeAndVerify(
        _ challengeID: String, _ signature: String, purpose: SignedMessage.Purpose, sessionUser: String?, _ request: RequestInfo
    ) async throws(ServerError) -> (ChallengeRecord, DevicePublicKey) {
        let id = try Validate.base64URL(challengeID, field: "challengeId", count: 16...16)
        let signatureBytes = try Validate.base64URL(signature, field: "signature", count: 1...256)
        try await admit(request)
        guard let challenge = try await run(request, { try await self.store.consumeChallenge(id: id) }) else {
            throw await fail(.unknownChallenge, kind: purpose.auditFailure, user: nil, device: nil, request)
        }
        let user = challenge.userID, device = challenge.deviceID
        if let locked = try await lockout(user: user, device: device, request) { throw locked }
        func failure(_ reason: FailureReason) async -> ServerError {
            await fail(reason, kind: purpose.auditFailure, user: user, device: device, request)
        }
        guard challenge.purpose == purpose, challenge.relyingPartyID == configuration.relyingPartyID else { throw await failure(.wrongPurpose) }
        guard clock.now() <= challenge.expiresAt else { throw await failure(.expiredChallenge) }
        if let sessionUser, sessionUser != user { throw await failure(.wrongUser) }
        let key: DevicePublicKey
        if purpose == .registration {
            guard let spki = challenge.registrationKey, let parsed = try? DevicePublicKey(spki: spki) else { throw await failure(.unknownDevice) }
            key = parsed
        } else {
            guard let record = try await run(request, { try await self.store.device(id: device) }) else { throw await failure(.unknownDevice) }
            guard !record.isRevoked else { throw await failure(.revokedDevice) }
            guard record.userID == user else { throw await failure(.wrongUser) }
            guard let parsed = try? DevicePublicKey(spki: record.publicKey) else { throw await failure(.unknownDevice) }
            key = parsed
        }
        guard let der = try? ECDSADERSignature(der: signatureBytes) else { throw await failure(.malformedSignature) }
        guard let message = try? challenge.message(), key.isValidSignature(raw: der.rawRepresentation, for: message.encoded) else {
            throw await failure(.badSignature)
        }
        return (challenge, key)
    }

    /// Audits and counts a verification failure; returns the uniform error to throw.
    private func fail(_ reason: FailureReason, kind: String, user: String?, device: String?, _ request: RequestInfo) async -> ServerError {
        metrics.failures.increment()
        logger.notice("verification failed", metadata: metadata(request, user: user, device: device, reason: reason.description))
        await audit(kind, user: user, device: device, reason: reason.description, request: request)
        if let locked = try? await limiter.recordFailure(user: user, device: device, client: request.clientAddress) {
            for subject in locked {
                metrics.lockouts.increment()
                await audit("lockout", user: user, device: device, reason: subject.split(separator: ":").dropLast().joined(separator: ":"), request: request)
            }
        }
        return ServerError.authenticationFailed(reason)
    }

    private func admit(_ request: RequestInfo) async throws(ServerError) {
        if let limited = try await run(request, { try await self.limiter.admit(request.clientAddress) }) {
            metrics.rateLimited.increment()
            throw limited
        }
    }

    private func lockout(user: String?, device: String?, _ request: RequestInfo) async throws(ServerError) -> ServerError? {
        guard let locked = try await run(request, { try await self.limiter.lockout(user: user, device: device, client: request.clientAddress) }) else {
            return nil
        }
        metrics.rateLimited.increment()
        await audit("rate.limited", user: user, device: device, reason: "lockedOut", request: request)
        return locked
    }

    private func openSession(user: String, device: String?, kind: SessionKind, ttl: TimeInterval, _ request: RequestInfo) async throws(ServerError) -> SessionGrant {
        let token = SecretBytes.random(count: 32)
        let now = clock.now()
        let session = SessionRecord(
            id: UUID().uuidString.lowercased(), tokenHash: Data(SHA256.hash(data: token.data)), userID: user, deviceID: device, kind: kind,
            createdAt: now, expiresAt: now.addingTimeInterval(ttl))
        try await run(request) { try await self.store.insertSession(session) }
        return SessionGrant(token: Base64URL.encode(token.data), session: session)
    }

    private func hashPassword(_ password: String, salt: Data, rounds: Int) throws(ServerError) -> Data {
        do { return try SlowHash.derive(password, salt: salt, rounds: rounds) } catch { throw ServerError(.internalError) }
    }

    package func audit(_ kind: String, user: String? = nil, device: String? = nil, reason: String? = nil, request: RequestInfo) async {
        let event = AuditEvent(at: clock.now(), kind: kind, userID: user, deviceID: device, reason: reason, clientAddress: request.clientAddress, requestID: request.requestID)
        do { try await store.appendAudit(event) } catch {
            logger.error("audit append failed", metadata: metadata(request, user: user, device: device, reason: "\(type(of: error))"))
        }
        logger.info("audit", metadata: metadata(request, user: user, device: device, reason: reason).merging(["event": "\(kind)"]) { $1 })
    }

    private func metadata(_ request: RequestInfo, user: String?, device: String?, reason: String?) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["request_id": "\(request.requestID)", "client": "\(request.clientAddress)"]
        if let user { metadata["user"] = "\(user)" }
        if let device { metadata["device"] = "\(device)" }
        if let reason { metadata["reason"] = "\(reason)" }
        return metadata
    }

    /// Runs a store call; a store failure is logged and becomes a 500 (never client input).
    private func run<T: Sendable>(_ request: RequestInfo, _ body: @Sendable () async throws -> T) async throws(ServerError) -> T {
        do { return try await body() } catch { throw internalError(error, request) }
    }

    private func internalError(_ error: any Error, _ request: RequestInfo) -> ServerError {
        logger.error("store failure", metadata: ["request_id": "\(request.requestID)", "error": "\(String(describing: type(of: error)))"])
        return ServerError(.internalError)
    }
}

extension SignedMessage.Purpose {
    var auditFailure: String {
        switch self {
        case .registration: "device.enrollment.failed"
        case .login: "login.failed"
        case .stepUp: "stepup.failed"
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
