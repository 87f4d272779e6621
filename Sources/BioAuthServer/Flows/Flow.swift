import BioAuthCore
import Crypto
import Foundation
import Logging
import Metrics

/// What every flow works with: the store it reads, the writer it applies its decisions through,
/// the configuration, the clock, and the instance-local limits and meters. One per
/// ``BioAuthService``.
struct FlowContext: Sendable {
    let store: any BioAuthStore
    let writer: PlanWriter
    let configuration: ServerConfiguration
    let clock: any WallClock
    let recoveryChannel: (any RecoveryChannel)?
    let logger: Logger
    let windows: RateWindows
    let requests: RequestLimiter
    /// Requests per backend API key (``RateLimitPolicy/apiKeyRequestsPerSecond``).
    let apiKeyRequests: ApiKeyLimiter
    /// Failed approval redemptions per user (``RateLimitPolicy/failedRedemptionsPerUser``).
    let failedRedemptions: RequestLimiter
    let metrics: ServiceMetrics
    let accessTokens: AccessTokenIssuer
    let passwordHashes: PasswordHashPool
}

/// One concern of the server (an account, an enrolment, a login, …): it validates, decides, and
/// hands the store one write per request. The helpers here are the conventions every flow shares:
/// how a store failure becomes an HTTP answer, how audit events are made and logged, the request limit.
protocol Flow: Sendable {
    var context: FlowContext { get }
}

extension Flow {
    var store: any BioAuthStore { context.store }
    var writer: PlanWriter { context.writer }
    var configuration: ServerConfiguration { context.configuration }
    var clock: any WallClock { context.clock }
    var logger: Logger { context.logger }
    var windows: RateWindows { context.windows }
    var metrics: ServiceMetrics { context.metrics }

    /// Ranks `session` for `action` and refuses it (403, the least credential that would do) unless
    /// ``Authority`` permits it. A device session's device is read only where what it is matters:
    /// a synced passkey, or a device in its cool-down (``Authority/distinguishesDevices(_:)``).
    @discardableResult
    func authorize(_ action: AccountAction, _ session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Caller {
        var device: DeviceRecord?
        let credential: CallerCredential
        switch session.kind {
        case .enrolmentGrant: credential = .enrolmentGrant
        case .primary: credential = .password
        case .crossDevice: credential = .crossDevice
        case .device:
            if Authority.distinguishesDevices(action), let id = session.deviceID {
                device = try await run(request) { try await self.store.device(id: id) }
                credential = try await rank(device, request: request)
            } else {
                credential = .device
            }
        }
        guard Authority.permits(action, credential) else {
            throw ServerError(.forbidden, detail: Authority.refusal(action))
        }
        if session.kind == .device, let id = session.deviceID, Authority.refusedWhileRemovalScheduled.contains(action) {
            let now = clock.now(), userID = session.userID
            let removals = try await run(request) { try await self.store.deviceRemovals(userID: userID) }
            if removals.contains(where: { $0.deviceID == id && $0.status(at: now) == .scheduled }) {
                throw ServerError(.forbidden, detail: "removalScheduled")
            }
        }
        return Caller(session: session, credential: credential, device: device)
    }

    /// What a device session's device makes it: a synced passkey, or a device in its cool-down or
    /// out of it. A device that cannot be read ranks lowest.
    private func rank(_ device: DeviceRecord?, request: RequestInfo) async throws(ServerError) -> CallerCredential {
        guard let device else { return .syncedPasskey }
        switch device.credential.kind {
        case .syncedPasskey: return .syncedPasskey
        // A device-bound passkey proves possession and the user as a phone's key does: the
        // device's columns, with its cool-down (docs/Protocol.md, the authority table).
        case .attestedAppKey, .appKey, .deviceBoundPasskey:
            return try await isCoolingDown(device, request: request) ? .coolingDevice : .device
        }
    }

    /// ``authorize(_:_:request:)`` without a read, for an action whose answer is the same for
    /// every kind of device session (checked: otherwise a device session is refused, as the lowest
    /// of them would be).
    func authorizeUnread(_ action: AccountAction, _ session: SessionRecord) throws(ServerError) {
        let credential: CallerCredential =
            switch session.kind {
            case .enrolmentGrant: .enrolmentGrant
            case .primary: .password
            case .crossDevice: .crossDevice
            case .device: Authority.distinguishesDevices(action) ? .syncedPasskey : .device
            }
        guard Authority.permits(action, credential) else { throw ServerError(.forbidden, detail: Authority.refusal(action)) }
    }

    /// A feature's settings, or 404 saying it is off on this server (`feature` names it: "passkeys").
    func enabled<Policy>(_ policy: Policy?, _ feature: String) throws(ServerError) -> Policy {
        guard let policy else { throw ServerError(.notFound, detail: "\(feature) not enabled on this server") }
        return policy
    }

    /// Counts a request against this instance's per-client limit — unless it came with a verified
    /// API key, which was counted against the key's own budget (``ApiKeyLimiter``) instead.
    func admit(_ request: RequestInfo) async throws(ServerError) {
        guard request.apiKeyID == nil else { return }
        if let retryAfter = await context.requests.admit(request.requestSubject, at: clock.now()) {
            metrics.rateLimited.increment()
            throw ServerError(.rateLimited, retryAfter: retryAfter)
        }
    }

    /// Logs and counts a recorded verification failure; returns the uniform error to throw.
    func failed(_ failure: FailureRecord, locked: [FailureSubject], _ request: RequestInfo) -> ServerError {
        metrics.failures.increment()
        logger(for: request).notice("verification failed", metadata: metadata(failure.audit))
        for subject in locked {
            metrics.lockouts.increment()
            log(failure.lockoutEvent(subject))
        }
        return ServerError.authenticationFailed(failure.reason)
    }

    /// Stores a session the app's backend vouched for, claiming its user id for the backend
    /// (``WritePlan/backendLogin(_:from:audit:)``); 409 `userId` if a password account has the id.
    func openBackendSession(_ session: SessionRecord, from client: String? = nil, audit: AuditEvent, request: RequestInfo)
        async throws(ServerError)
    {
        if !configuration.backendUserIDPrefixes.isEmpty && !configuration.isDeclaredBackendUserID(session.userID) {
            throw ServerError(.conflict, field: "userId", detail: "outside the backend's declared user ids")
        }
        let outcome = try await run(request) { try await self.writer.apply(.backendLogin(session, from: client, audit: audit)) }
        guard outcome.wasApplied else { throw ServerError(.conflict, field: "userId", detail: "a password account has this id") }
    }

    /// Whole seconds from `now` until `date`, at least 1: a `Retry-After` that is the real wait.
    func retryAfter(until date: Date, from now: Date) -> Int { max(1, Int(min(date.timeIntervalSince(now), 86_400).rounded(.up))) }

    /// Whether `device` is in its cool-down now (``EnrolmentPolicy/isCoolingDown(_:among:at:)``).
    func isCoolingDown(_ device: DeviceRecord, request: RequestInfo) async throws(ServerError) -> Bool {
        let now = clock.now()
        guard now < configuration.enrolment.coolDownEnd(of: device) else { return false }  // the user's devices are read only then
        let devices = try await run(request) { try await self.store.devices(userID: device.userID) }
        return configuration.enrolment.isCoolingDown(device, among: devices, at: now)
    }

    /// Refuses `device` while it is in its cool-down: 403, naming `field` if given.
    func requireOutOfCoolDown(_ device: DeviceRecord, field: String? = nil, request: RequestInfo) async throws(ServerError) {
        if try await isCoolingDown(device, request: request) { throw Self.coolingDown(field: field) }
    }

    static func coolingDown(field: String? = nil) -> ServerError {
        // A device added or re-keyed cannot do this during its cool-down.
        ServerError(.forbidden, field: field, detail: "coolingDown")
    }

    func refuseLockedOut(user: UserID?, device: DeviceID?, retryAfter: Int? = nil, _ request: RequestInfo) async -> ServerError {
        metrics.rateLimited.increment()
        await audit(.rateLimited, user: user, device: device, reason: AuditReason(FailureReason.lockedOut), request: request)
        return ServerError(.rateLimited, retryAfter: retryAfter ?? windows.retryAfter(clock.now()))
    }

    func sessionRecord(token: SecretBytes, user: UserID, device: DeviceID?, kind: SessionKind, ttl: TimeInterval, at now: Date)
        -> SessionRecord
    {
        SessionRecord(
            id: .random(), tokenHash: TokenHash(of: token), userID: user, deviceID: device, kind: kind,
            createdAt: now, expiresAt: now.addingTimeInterval(ttl))
    }

    func newSession(user: UserID, device: DeviceID?, kind: SessionKind, ttl: TimeInterval, at now: Date) -> (SessionRecord, String) {
        let token = SecretBytes.random(count: 32)
        return (sessionRecord(token: token, user: user, device: device, kind: kind, ttl: ttl, at: now), Base64URL.encode(token.data))
    }

    func event(_ kind: AuditKind, user: UserID? = nil, device: DeviceID? = nil, reason: AuditReason? = nil, request: RequestInfo)
        -> AuditEvent
    {
        AuditEvent(
            at: clock.now(), kind: kind, userID: user, deviceID: device, reason: reason, clientAddress: request.clientAddress,
            requestID: request.requestID,
            apiKeyID: request.apiKeyID)
    }

    /// The logger for one request's lines: the request's own (``RequestInfo/logger``) or the
    /// service's, with the request id.
    func logger(for request: RequestInfo) -> Logger {
        var logger = request.logger ?? self.logger
        logger[metadataKey: "request_id"] = "\(request.requestID)"
        return logger
    }

    /// Appends one audit event on its own (refusals and rejections; flows pass theirs to the store).
    func audit(_ kind: AuditKind, user: UserID? = nil, device: DeviceID? = nil, reason: AuditReason? = nil, request: RequestInfo) async {
        let event = event(kind, user: user, device: device, reason: reason, request: request)
        do { _ = try await writer.apply(.events([event])) } catch {
            logger(for: request).error(
                "audit append failed", metadata: metadata(event).merging(["error": "\(String(describing: type(of: error)))"]) { $1 })
        }
        log(event, request: request)
    }

    /// Logs an audit event the store has committed, on the request's logger when there is one.
    func log(_ event: AuditEvent, request: RequestInfo? = nil) {
        (request.map(logger(for:)) ?? logger).info("audit", metadata: metadata(event).merging(["event": "\(event.kind)"]) { $1 })
    }

    func log(_ kind: AuditKind, user: UserID?, request: RequestInfo) { log(event(kind, user: user, request: request), request: request) }

    /// What stands for a username in a log line: a keyed hash, never the name (which may be a
    /// mistyped password). The audit log in the database keeps the user id of known users only.
    func pseudonym(_ username: UserID) -> String {
        "u-"
            + Data(
                HMAC<SHA256>.authenticationCode(
                    for: Data(username.rawValue.utf8), using: SymmetricKey(data: configuration.logPseudonymKey.data)
                ).prefix(8)
            ).hexString
    }

    func metadata(_ event: AuditEvent) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["request_id": "\(event.requestID?.rawValue ?? "")", "client": "\(event.clientAddress ?? "")"]
        if let user = event.userID { metadata["user"] = "\(pseudonym(user))" }
        if let device = event.deviceID { metadata["device"] = "\(device)" }
        if let reason = event.reason { metadata["reason"] = "\(reason)" }
        if let apiKey = event.apiKeyID { metadata["api_key"] = "\(apiKey)" }
        return metadata
    }

    /// Runs a store call. An unreachable database is a 503 with Retry-After; any other store
    /// failure is logged and becomes a 500 (never client input).
    func run<T: Sendable>(_ request: RequestInfo, _ body: @Sendable () async throws -> T) async throws(ServerError) -> T {
        do { return try await body() } catch { throw storeFailure(error, request) }
    }

    func storeFailure(_ error: any Error, _ request: RequestInfo) -> ServerError {
        let unavailable = (error as? StoreError)?.code == .unavailable
        logger(for: request).error(
            unavailable ? "store unavailable" : "store failure",
            metadata: ["error": "\(String(describing: type(of: error)))", "detail": "\((error as? StoreError)?.description ?? "")"])
        return unavailable ? ServerError(.unavailable, retryAfter: 2) : ServerError(.internalError)
    }
}

/// Counters exported through swift-metrics (a Prometheus endpoint in BioAuthHTTP).
struct ServiceMetrics: Sendable {
    let challenges, logins, failures, enrolments, stepUps, lockouts, rateLimited, passwordRequestsShed: Counter

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
        passwordRequestsShed = counter("bioauth_password_requests_shed_total")
    }
}
