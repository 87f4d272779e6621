import BioAuthCore
import BioAuthServer
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Prometheus
import Synchronization

/// Verifies the bearer token before the handler runs and puts the session into the context
/// (in the manner of hummingbird-auth's authenticators).
struct SessionAuthentication<Context: BioAuthRequestContext>: RouterMiddleware {
    let routes: BioAuthRoutes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.bioAuth.session = try await routes.authenticate(request, context).0
        return try await next(request, context)
    }
}

/// Checks the request's API key (`Authorization: Bearer bioauth_sk_…`) for one scope and puts
/// the key in the request context: 401 for a missing or unknown key, 403 for another scope.
struct ApiKeyAuthentication<Context: BioAuthRequestContext>: RouterMiddleware {
    let routes: BioAuthRoutes
    let scope: ApiKeyScope

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.bioAuth.apiKey = try await routes.service.authenticateBackend(
            apiKey: routes.bearerToken(request), scope: scope, request: routes.info(request, context))
        return try await next(request, context)
    }
}

/// Times each request once, outside the error mapping so it sees the status sent: the
/// `bioauth_http_request_duration_seconds` histogram per route pattern, method and status class,
/// and — with ``HTTPOptions/accessLog`` — one log line.
struct RequestObservation<Context: BioAuthRequestContext>: RouterMiddleware {
    let routes: BioAuthRoutes
    let durations: RequestDurations

    init(routes: BioAuthRoutes) {
        self.routes = routes
        durations = RequestDurations(registry: routes.registry)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let route = context.endpointPath ?? "unmatched"
        durations.histogram(route: route, method: request.method, status: response.status).record(elapsed)
        if routes.options.accessLog {
            let milliseconds = Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
            routes.logger.info(
                "request",
                metadata: [
                    "method": "\(request.method)", "route": "\(route)", "status": "\(response.status.code)",
                    "duration_ms": "\(String(format: "%.2f", milliseconds))", "request_id": "\(context.bioAuth.requestID)",
                    "client": "\(routes.info(request, context).clientAddress)",
                ])
        }
        return response
    }
}

/// The `bioauth_http_request_duration_seconds` histograms, one per route pattern, method and
/// status class, each looked up in the registry once and kept: a request's observation costs one
/// dictionary lookup, not a registry lookup by name and labels.
final class RequestDurations: Sendable {
    private struct Key: Hashable {
        let route: String
        let method: String
        let statusClass: Int
    }

    /// The methods a label names; any other is `other`, so a client inventing methods cannot add series.
    static let namedMethods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]

    static var buckets: [Duration] {
        [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
            .seconds(5),
        ]
    }
    static var name: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "bioauth", subsystem: "http", metricName: "request_duration", unitName: "seconds",
            helpText: "Time from the request's arrival to its response, by route pattern, method and status class")
    }

    private let registry: PrometheusCollectorRegistry
    private let histograms = Mutex<[Key: DurationHistogram]>([:])

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func histogram(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status) -> DurationHistogram {
        let key = Key(route: route, method: Self.namedMethods.contains(method) ? method.rawValue : "other", statusClass: status.code / 100)
        if let known = histograms.withLock({ $0[key] }) { return known }
        let labels = [("route", route), ("method", key.method), ("status", "\(key.statusClass)xx")]
        let made = registry.makeDurationHistogram(descriptor: Self.name, labels: labels, buckets: Self.buckets)
        histograms.withLock { $0[key] = made }
        return made
    }
}

/// Maps every error to a response: ``ServerError`` to its status (one uniform body for 401),
/// anything else to 500 after logging its type. Adds `X-Request-Id` to every response.
struct ErrorMapping<Context: BioAuthRequestContext>: RouterMiddleware {
    let logger: Logger
    /// The routes of the router this maps errors for: a known path asked with another method is a 405.
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do { response = try await next(request, context) } catch let error as ServerError {
            response = Self.response(error)
        } catch let error as HTTPError {
            let allowed = routes.methods(for: request.uri.path)
            if error.status == .notFound || error.status == .methodNotAllowed, !allowed.isEmpty {
                // A known path with another method.
                response = Self.response(ServerError(.methodNotAllowed))
                response.headers[.allow] = allowed.joined(separator: ", ")
            } else {
                response = Self.response(
                    error.status == .notFound
                        ? ServerError(.notFound) : ServerError(.invalidRequest, field: "request", detail: "\(error.status.code)"))
            }
        } catch {
            logger.error("unhandled error", metadata: ["request_id": "\(context.bioAuth.requestID)", "type": "\(type(of: error))"])
            response = Self.response(ServerError(.internalError))
        }
        response.headers[.init("X-Request-Id")!] = context.bioAuth.requestID.rawValue
        return response
    }

    static func response(_ error: ServerError) -> Response {
        let body: Wire.ErrorBody =
            switch error.code {
            // What was wrong — the field's format, the attestation's failed check — never a secret.
            case .invalidRequest, .attestationRejected, .forbidden, .invalidDPoPProof:
                Wire.ErrorBody(error: error.code.description, field: error.field, reason: error.detail)
            case .authenticationFailed: Wire.ErrorBody(error: error.code.description)  // uniform: no reason, no field
            default: Wire.ErrorBody(error: error.code.description, field: error.field)
            }
        var response = (try? json(body, status: error.code.httpStatus)) ?? Response(status: .internalServerError)
        if let retryAfter = error.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        if let nonce = error.dpopNonce { response.headers[HTTPField.Name("DPoP-Nonce")!] = nonce }
        if let challenge = error.authenticate { response.headers[.wwwAuthenticate] = challenge }
        return response
    }
}

extension ServerError.Code {
    /// The HTTP status of each code (`openapi.yaml` lists them per operation), as the code declares it.
    var httpStatus: HTTPResponse.Status { HTTPResponse.Status(code: status) }
}
