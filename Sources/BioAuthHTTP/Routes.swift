import BioAuthCore
import BioAuthServer
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus

/// Options of the HTTP layer.
public struct HTTPOptions: Sendable {
    /// Largest request body accepted, in bytes.
    public var maxBodySize: Int
    /// Your reverse proxies. Empty (the default): `X-Forwarded-For` is ignored and the TCP peer is
    /// the client. Otherwise the client is the rightmost `X-Forwarded-For` address that is not one
    /// of these — never the leftmost, which the client writes itself.
    public var trustedProxies: [IPNetwork]
    /// Allow `POST /v1/users` (the demo primary login's sign-up). Off by default: an open sign-up
    /// tells anyone which usernames exist (409) and lets them create accounts.
    public var allowSignUp: Bool
    /// Log one line per request at info (`bioauth-server --access-log`): method, route pattern
    /// (never the path, which may hold a user id), status, duration, request id, client address.
    public var accessLog = false
    /// Serve `/metrics` on this listener. `bioauth-server --management-port` turns it off: the
    /// metrics then live only on the management listener, out of the public's reach.
    public var publicMetrics = true
    /// Serve the sign-in page at `/signin/` (`bioauth-server --sign-in-page`): off by default, for a
    /// deployment whose own pages call the API.
    public var signInPage = false

    /// A reverse proxy on the same host.
    public static let loopbackProxies = [IPNetwork("127.0.0.0/8")!, IPNetwork("::1")!]

    public init(maxBodySize: Int = 16 * 1024, trustedProxies: [IPNetwork] = [], allowSignUp: Bool = false) {
        self.maxBodySize = maxBodySize
        self.trustedProxies = trustedProxies
        self.allowSignUp = allowSignUp
    }
}

/// The HTTP API of `bioauth-server` (`openapi.yaml` documents it).
public struct BioAuthRoutes: Sendable {
    public let service: BioAuthService
    public let registry: PrometheusCollectorRegistry
    public let options: HTTPOptions
    let logger: Logger

    public init(
        service: BioAuthService, registry: PrometheusCollectorRegistry, options: HTTPOptions = HTTPOptions(),
        logger: Logger = .discarding("BioAuthHTTP")
    ) {
        self.service = service
        self.registry = registry
        self.options = options
        self.logger = logger
    }

    /// A router with every route and the error mapping.
    public func makeRouter() -> Router<BasicBioAuthRequestContext> {
        let router = Router(context: BasicBioAuthRequestContext.self)
        let table = RouteTable()
        router.add(middleware: RequestObservation(routes: self))
        router.add(middleware: ErrorMapping(logger: logger, routes: table))
        let routed = RecordingRouter(base: router, table: table)

        routed.get("/health") { _, _ in try json(["status": "ok"]) }
        addOperatorRoutes(to: routed, metrics: options.publicMetrics)
        routed.get("/openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }
        addAPI(to: routed)
        if options.signInPage {
            SignInPage.add(
                to: routed, passwordLogin: service.configuration.passwordLogin, crossDevice: service.configuration.crossDevice != nil)
        }
        return router
    }

    /// The management listener's router (`bioauth-server --management-port`): `/metrics` and the
    /// health probes only.
    public func makeManagementRouter() -> Router<BasicBioAuthRequestContext> {
        let router = Router(context: BasicBioAuthRequestContext.self)
        addOperatorRoutes(to: router, metrics: true)
        return router
    }

    /// Mounts BioAuth's API — `/.well-known/jwks.json` and `/v1/…` — on `router`: typically a
    /// group under a path of your own application's router (`router.group("auth")`), beside your
    /// routes and middleware. Errors in these routes become BioAuth's bodies; BioAuth's middleware
    /// verifies its sessions. Health, metrics and the OpenAPI document stay your application's.
    /// The router's context is your own, conforming to ``BioAuthRequestContext``.
    public func addRoutes<Context: BioAuthRequestContext>(to router: some RouterMethods<Context>) {
        let table = RouteTable()
        addAPI(to: RecordingRouter(base: router.group().add(middleware: ErrorMapping(logger: logger, routes: table)), table: table))
    }

    private func addAPI<Context: BioAuthRequestContext>(to router: some RouterMethods<Context>) {
        router.get("/.well-known/jwks.json") { request, context in
            let keys = try await service.publishedKeys(request: info(request, context))
            var response = try json(Wire.JWKS(keys))
            // A verifier refetches within a minute; a new key is published two minutes before it signs.
            response.headers[.cacheControl] = "public, max-age=60"
            return response
        }

        // Discovery for resource servers (RFC 8414; OpenID Connect Discovery's path too), only for
        // an issuer that is this server's URL: the paths below it are where this API is mounted.
        for path in ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"] {
            router.get(RouterPath(path)) { _, _ in
                guard let metadata = serverMetadata else {
                    throw ServerError(.notFound, detail: "no issuer URL: start the server with --token-issuer https://…")
                }
                var response = try json(metadata)
                response.headers[.cacheControl] = "public, max-age=300"
                return response
            }
        }

        let v1 = router.group("v1")
        // Routes that need a session: the middleware verifies the bearer token and puts the
        // session in the request context, so a handler cannot forget to check it.
        let authenticated = v1.group().add(middleware: SessionAuthentication(routes: self))
        addCrossDeviceRoutes(v1: v1, authenticated: authenticated)
        v1.post("users") { request, context in
            guard options.allowSignUp else { throw ServerError(.notFound) }
            let body = try await decode(Wire.Credentials.self, request)
            try await service.createUser(username: body.username, password: body.password, request: info(request, context))
            return try json(Wire.CreatedUser(username: body.username), status: .created)
        }
        v1.post("login/password") { request, context in
            let body = try await decode(Wire.PasswordLogin.self, request)
            let grant = try await service.passwordLogin(
                username: body.username, password: body.password, signInCode: body.signInCode, request: info(request, context))
            return try json(Wire.Session(grant))
        }
        v1.post("login/password/code") { request, context in
            let body = try await decode(Wire.SignInCodeRequest.self, request)
            try await service.sendSignInCode(username: body.username, request: info(request, context))
            return Response(status: .accepted)
        }
        v1.post("login/challenge") { request, context in
            let body = try await decode(Wire.LoginChallengeRequest.self, request)
            return try json(
                try await service.beginLogin(
                    userID: UserID(body.userId), deviceID: DeviceID(body.deviceId), request: info(request, context)))
        }
        v1.post("login/finish") { request, context in
            let body = try await decode(Wire.SignedChallenge.self, request, maxBodySize: PresentedAttestation.maximumBodySize)
            return try json(
                Wire.Session(
                    try await service.finishLogin(
                        challengeID: try ChallengeID(body.challengeId), signature: body.signature,
                        appAttestAssertion: body.appAttestAssertion,
                        appAttestKeyID: body.appAttestKeyId,
                        appAttestation: body.appAttestation, request: info(request, context))))
        }
        authenticated.get("devices/registration/attestation-challenge") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(
                Wire.AttestationChallenge(
                    challenge: Base64URL.encode(try await service.androidAttestationChallenge(session: session, request: info))))
        }
        authenticated.post("devices/registration/challenge") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.RegistrationChallengeRequest.self, request)
            return try json(
                try await service.beginRegistration(
                    session: session, name: body.name, publicKey: body.publicKey,
                    replacesDeviceID: body.replacesDeviceId.map { DeviceID($0) },
                    enrolmentRequestID: body.enrolmentRequestId.map { EnrolmentRequestID($0) }, request: info))
        }
        authenticated.post("enrolment-requests") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.EnrolmentRequestCreation.self, request)
            let new = try await service.requestEnrolment(
                session: session, name: body.name, publicKey: body.publicKey, replacesDeviceID: body.replacesDeviceId.map { DeviceID($0) },
                request: info)
            var reply = Wire.EnrolmentRequest(new.record)
            reply.bindingCode = new.bindingCode.text
            return try json(reply, status: .created)
        }
        authenticated.get("enrolment-requests") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(try await service.pendingEnrolmentRequests(of: session, request: info).map(Wire.EnrolmentRequest.init))
        }
        authenticated.get("enrolment-requests/:id") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(Wire.EnrolmentRequest(try await service.enrolmentRequest(id: pathID(context), of: session, request: info)))
        }
        authenticated.delete("enrolment-requests/:id") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            try await service.cancelEnrolmentRequest(requestID: pathID(context), session: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.post("enrolment-requests/:id/approve") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.EnrolmentApproval.self, request)
            try await service.approveEnrolment(requestID: pathID(context), approval: body.approval, session: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.post("enrolment-requests/:id/recovery-code") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            try await service.sendRecoveryCode(requestID: pathID(context), session: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.post("device-removals") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.DeviceRemovalCreation.self, request)
            let removal = try await service.requestDeviceRemoval(deviceID: DeviceID(body.deviceId), session: session, request: info)
            return try json(Wire.DeviceRemoval(removal, at: service.clock.now()), status: .created)
        }
        authenticated.get("device-removals") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let now = service.clock.now()
            return try json(try await service.deviceRemovals(of: session, request: info).map { Wire.DeviceRemoval($0, at: now) })
        }
        authenticated.post("device-removals/:id/confirm") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.RecoveryCodeEntry.self, request)
            let removal = try await service.confirmDeviceRemoval(id: pathID(context), code: body.code, session: session, request: info)
            return try json(Wire.DeviceRemoval(removal, at: service.clock.now()))
        }
        authenticated.delete("device-removals/:id") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            try await service.cancelDeviceRemoval(id: pathID(context), session: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.post("enrolment-requests/:id/recover") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.RecoveryCodeEntry.self, request)
            try await service.recoverEnrolment(requestID: pathID(context), code: body.code, session: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.post("devices/registration/finish") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            // An attestation is several KiB: this body may be larger than the others.
            let body = try await decode(Wire.RegistrationFinish.self, request, maxBodySize: PresentedAttestation.maximumBodySize)
            let attestation = try PresentedAttestation(
                appAttestKeyID: body.appAttestKeyId, appAttestation: body.appAttestation, androidKeyAttestation: body.androidKeyAttestation)
            let device = try await service.finishRegistration(
                session: session, challengeID: try ChallengeID(body.challengeId), signature: body.signature, attestation: attestation,
                request: info)
            return try json(Wire.Device(device), status: .created)
        }
        addPasskeyRoutes(v1: v1, authenticated: authenticated)
        authenticated.post("step-up/challenge") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.StepUpChallengeRequest.self, request)
            return try json(
                try await service.beginStepUp(session: session, deviceID: DeviceID(body.deviceId), operation: body.operation, request: info)
            )
        }
        authenticated.post("step-up/finish") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.SignedChallenge.self, request, maxBodySize: PresentedAttestation.maximumBodySize)
            let grant = try await service.finishStepUp(
                session: session, challengeID: try ChallengeID(body.challengeId), signature: body.signature,
                appAttestAssertion: body.appAttestAssertion,
                appAttestKeyID: body.appAttestKeyId, appAttestation: body.appAttestation, request: info)
            return try json(Wire.Approval(approval: grant.approval, expiresAt: grant.record.expiresAt.seconds))
        }
        v1.post("token/refresh") { request, context in
            let body = try await decode(Wire.RefreshRequest.self, request)
            return try json(Wire.Tokens(try await service.refresh(refreshToken: body.refreshToken, request: info(request, context))))
        }
        // The backend API: the app's backend, with an API key of the route's scope, checked by
        // middleware before the body is read.
        func backend(_ scope: ApiKeyScope) -> RouterGroup<Context> {
            v1.group().add(middleware: ApiKeyAuthentication(routes: self, scope: scope))
        }
        backend(.introspect).post("introspect") { request, context in
            // A token of 4096 code points, each escaped as a JSON surrogate pair, is 48 KiB: such a
            // body gets its 400, not a 413.
            let body = try await decode(Wire.IntrospectionRequest.self, request, maxBodySize: 64 * 1024)
            return try json(Wire.Introspection(try await service.introspect(token: body.token, request: info(request, context))))
        }
        backend(.enrolmentGrants).post("backend/enrolment-grants") { request, context in
            let body = try await decode(Wire.EnrolmentGrantRequest.self, request)
            return try json(
                Wire.Session(try await service.issueEnrolmentGrant(userID: UserID(body.userId), request: info(request, context))),
                status: .created)
        }
        backend(.approvals).post("backend/approvals/redeem") { request, context in
            let info = info(request, context)
            let body = try await decode(Wire.Redemption.self, request)
            let record = try await service.redeemApproval(
                approval: body.approval, operation: body.operation, userID: UserID(body.userId), request: info)
            return try json(Wire.RedeemedApproval(userId: record.userID.rawValue, deviceId: record.deviceID.rawValue))
        }
        addUserAdministration(backend(.users).group("backend/users/:userId"), recovery: backend(.recovery).group("backend/users/:userId"))
        authenticated.get("devices") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(try await service.devices(of: session, request: info).map(Wire.Device.init))
        }
        authenticated.patch("devices/:id") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.DeviceRename.self, request)
            try await service.renameDevice(id: pathID(context), name: body.name, by: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.delete("devices/:id") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            try await service.revokeDevice(id: pathID(context), by: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.get("sessions") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(
                try await service.sessions(of: session, request: info).map { Wire.SessionInfo($0, current: $0.id == session.id) })
        }
        authenticated.delete("sessions/:id") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            try await service.revokeSession(id: pathID(context), by: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.delete("sessions") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(Wire.RevokedSessions(revoked: try await service.revokeAllSessions(of: session, request: info)))
        }
        authenticated.post("logout") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            try await service.revokeSession(id: session.id, by: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.get("security-events") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            var since: Date?
            if let text = request.uri.queryParameters["since"] {
                // As the document says: 0 to 2^53 − 1, what a JSON number holds exactly.
                guard let seconds = Int64(String(text)), (0...9_007_199_254_740_991).contains(seconds) else {
                    throw ServerError(.invalidRequest, field: "since", detail: WireFormatError.Code.invalidValue.description)
                }
                since = Date(timeIntervalSince1970: TimeInterval(seconds))
            }
            return try json(
                try await service.securityEvents(of: session, since: since, request: info).map {
                    Wire.SecurityEvent(
                        at: $0.at.seconds, kind: $0.kind.description, deviceId: $0.deviceID?.rawValue, client: $0.clientAddress)
                })
        }
        authenticated.post("password") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.PasswordChange.self, request)
            try await service.changePassword(to: body.password, approval: body.approval, session: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.get("audit") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(
                try await service.auditEvents(of: session, request: info).map {
                    Wire.AuditEntry(
                        at: $0.at.seconds, kind: $0.kind.description, deviceId: $0.deviceID?.rawValue,
                        reason: $0.reason?.userVisible, count: $0.count)
                })
        }
    }

    /// The authorization-server metadata of an issuer that is a URL (``TokenPolicy/issuerURL(_:)``); nil otherwise.
    var serverMetadata: Wire.ServerMetadata? {
        let configuration = service.configuration
        let issuer = configuration.tokens.issuer ?? configuration.relyingPartyID
        guard TokenPolicy.issuerURL(issuer) != nil else { return nil }
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        return Wire.ServerMetadata(
            issuer: issuer, jwksURI: base + "/.well-known/jwks.json", introspectionEndpoint: base + "/v1/introspect",
            subjectTypesSupported: ["public"],
            claimsSupported: [
                "iss", "aud", "sub", "exp", "iat", "jti", "client_id", "device_id", "sid", "amr", "acr", "att", "enr", "cnf",
            ],
            acrValuesSupported: [AttestationClass.attested, AttestationClass.unattested])
    }
}
