import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import NIOCore
import Synchronization

/// A shop's backend that owns its login and embeds BioAuth:
/// - `POST /shop/login {email, password}` — its own login → a shop session;
/// - `POST /shop/enrolment-grant` (shop session) → a BioAuth enrolment grant for the app;
/// - `/auth/…` — BioAuth's API, mounted beside the shop's routes;
/// - `POST /hooks/bioauth` — BioAuth's signed webhooks (device enrolled, revoked, …);
/// - `GET /shop/orders` — protected by BioAuth's access token, verified against the JWKS.
public final class ShopBackend: Sendable {
    public let bioauth: BioAuthServerApp
    let webhookSecret: SymmetricKey
    let accounts: [String: (password: String, userID: String)]
    let shopSessions = Mutex<[String: String]>([:])
    /// Events received from BioAuth's webhooks, each once.
    public let events = Mutex<[Wire.Event]>([])
    /// The access-token audience and issuer BioAuth uses: its relying-party id.
    let relyingParty: String

    /// `signingKeyEncryption` seals BioAuth's access-token signing keys in the database: in
    /// production, the shop's secret store hands it over (or a KMS stands behind
    /// `SigningKeySealer`); a database backup alone then mints nothing.
    public init(
        store: any BioAuthStore, relyingParty: String = "shop.example", webhookSecret: String,
        signingKeyEncryption: KeyEncryptionKey = .random(),
        clock: any WallClock = SystemWallClock()
    ) {
        self.relyingParty = relyingParty
        self.webhookSecret = SymmetricKey(data: Data(webhookSecret.utf8))
        accounts = ["ada@shop.example": ("correct horse battery staple", "customer-1815")]
        var server = ServerConfiguration(relyingPartyID: relyingParty)
        server.tokens.signingKeys = .keyEncryptionKey(signingKeyEncryption)
        bioauth = BioAuthServerApp.build(ServerAppConfiguration(server: server, logLevel: .error), store: store, clock: clock)
    }

    /// The shop's router, with the shop's own request context: its own routes and middleware, and
    /// BioAuth's under `/auth`.
    public func router() -> Router<ShopContext> {
        let router = Router(context: ShopContext.self)
        router.add(middleware: ShopHeaders())
        router.add(middleware: ShopSessions(backend: self))
        bioauth.routes.addRoutes(to: router.group("auth"))

        router.post("shop/login") { request, context -> Response in
            let body = try await request.decode(as: [String: String].self, context: context)
            guard let account = self.accounts[body["email"] ?? ""], account.password == body["password"] else {
                return Response(status: .unauthorized)
            }
            let token = Base64URL.encode(SecretBytes.random(count: 32).data)
            self.shopSessions.withLock { $0[token] = account.userID }
            return try Self.json(["shopSession": token])
        }
        router.post("shop/enrolment-grant") { request, context -> Response in
            guard let userID = context.shopUser else { return Response(status: .unauthorized) }
            // The shop vouches for its user: BioAuth gives a one-time grant that enrols their first phone.
            let grant = try await self.bioauth.service.issueEnrolmentGrant(
                userID: UserID(userID), request: RequestInfo(clientAddress: "shop", requestID: context.bioAuth.requestID))
            return try Self.json(["grant": grant.token, "userId": userID])
        }
        router.post("hooks/bioauth") { request, _ -> Response in
            let body = Data(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
            let signature = request.headers[HTTPField.Name(WebhookSignature.header)!] ?? ""
            guard WebhookSignature.isValid(signature, body: body, secret: self.webhookSecret, now: Date()),
                let event = try? JSONDecoder().decode(Wire.Event.self, from: body)
            else { return Response(status: .unauthorized) }
            self.events.withLock { events in if !events.contains(where: { $0.id == event.id }) { events.append(event) } }
            return Response(status: .noContent)
        }
        router.get("shop/orders") { request, _ -> Response in
            guard let customer = try await self.customer(request) else { return Response(status: .unauthorized) }
            return try Self.json(["customer": customer, "orders": "2"])
        }
        return router
    }

    /// The customer a BioAuth access token names, verified as any other service would: with the
    /// JWKS (here read in-process; elsewhere fetched from `/auth/.well-known/jwks.json`), ES256
    /// only, issuer, audience and expiry checked.
    func customer(_ request: Request) async throws -> String? {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        let keys = try await bioauth.service.publishedKeys(request: RequestInfo(clientAddress: "shop"))
        let jwks = Wire.JWKS(keys: keys.map { Wire.JWK(kid: $0.id, x: $0.coordinates.x, y: $0.coordinates.y) })
        let collection = try await JWTKeyCollection().add(jwksJSON: String(decoding: try JSONEncoder().encode(jwks), as: UTF8.self))
        guard let claims = try? await collection.verify(String(header.dropFirst(7)), as: ShopAccessClaims.self),
            claims.iss.value == relyingParty, claims.aud.value.contains(relyingParty), claims.exp.value > Date()
        else { return nil }
        return claims.sub.value
    }

    func shopUser(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
        return shopSessions.withLock { $0[String(header.dropFirst(7))] }
    }

    static func json(_ value: [String: String]) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(value))))
    }
}

/// The claims the shop reads from BioAuth's access token.
struct ShopAccessClaims: JWTPayload {
    var iss: IssuerClaim
    var aud: AudienceClaim
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var device_id: String
    func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
}

/// The shop's request context: its own field (the shop session's user) beside the state
/// BioAuth's routes keep (``BioAuthRequestContext``).
public struct ShopContext: BioAuthRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public var bioAuth = BioAuthRequestState()
    /// The user of the request's shop session, set by ``ShopSessions``.
    public var shopUser: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The shop's own authentication: a shop session's bearer token puts its user in the context.
struct ShopSessions: RouterMiddleware {
    let backend: ShopBackend

    func handle(_ request: Request, context: ShopContext, next: (Request, ShopContext) async throws -> Response) async throws -> Response {
        var context = context
        context.shopUser = backend.shopUser(request)
        return try await next(request, context)
    }
}

/// The shop's own middleware, beside BioAuth's routes.
struct ShopHeaders: RouterMiddleware {
    func handle(_ request: Request, context: ShopContext, next: (Request, ShopContext) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[HTTPField.Name("X-Shop")!] = "1"
        return response
    }
}
