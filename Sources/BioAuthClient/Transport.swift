import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request to `bioauth-server`: a JSON body, an optional bearer token. Its description shows
/// neither.
public struct TransportRequest: Sendable, CustomStringConvertible {
    public enum Method: String, Sendable, Hashable { case get = "GET", post = "POST", patch = "PATCH", delete = "DELETE" }

    public var method: Method
    /// The path below the server's base URL, starting with `/`.
    public var path: String
    /// `application/json` when present.
    public var body: Data?
    public var bearerToken: BearerToken?
    /// Signs the request's DPoP proof (RFC 9449) for its full URL, which only the transport
    /// knows: send the result as the `DPoP` header. A token that ``BearerToken/isDPoPBound`` goes
    /// as `Authorization: DPoP …`.
    public var dpop: DPoPSigning?

    public init(method: Method, path: String, body: Data? = nil, bearerToken: BearerToken? = nil, dpop: DPoPSigning? = nil) {
        self.method = method
        self.path = path
        self.body = body
        self.bearerToken = bearerToken
        self.dpop = dpop
    }

    /// The `Authorization` header's value, when the request has a token.
    public var authorization: String? { bearerToken.map { ($0.isDPoPBound ? "DPoP " : "Bearer ") + $0.value } }

    public var description: String { "\(method.rawValue) \(path)" }
}

/// Makes a request's DPoP proof once its URL is known (``TransportRequest/dpop``).
public struct DPoPSigning: Sendable {
    /// The proof for the request's full URL.
    public let proof: @Sendable (_ url: String) throws -> String
    public init(_ proof: @escaping @Sendable (_ url: String) throws -> String) { self.proof = proof }
}

/// The server's answer. Its description shows only the status: bodies carry tokens and nonces.
public struct TransportResponse: Sendable, CustomStringConvertible {
    public var status: Int
    /// The `Retry-After` header in seconds, when present.
    public var retryAfter: TimeInterval?
    public var body: Data
    /// The `DPoP-Nonce` header: the nonce the server wants in the next proof (RFC 9449 §8).
    public var dpopNonce: String?

    public init(status: Int, retryAfter: TimeInterval? = nil, body: Data = Data(), dpopNonce: String? = nil) {
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
        self.dpopNonce = dpopNonce
    }

    public var description: String { "HTTP \(status), \(body.count) bytes" }
}

/// How ``BioAuthClient`` reaches the server. ``URLSessionTransport`` is the default; supply your
/// own for certificate pinning, a custom HTTP stack, or tests.
///
/// Throw for a request that never got an answer (network, timeout, TLS); return every answer,
/// whatever its status. Honour task cancellation.
public protocol BioAuthTransport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// ``BioAuthTransport`` over `URLSession` (Foundation on Apple platforms, FoundationNetworking on Linux).
///
/// Pin certificates by passing a session whose delegate checks the server trust
/// (`urlSession(_:didReceive:completionHandler:)`); `docs/Client.md` shows it.
public struct URLSessionTransport: BioAuthTransport {
    public let baseURL: URL
    public let session: URLSession
    /// Seconds before a request without an answer fails.
    public let timeout: TimeInterval

    public init(baseURL: URL, session: URLSession = .shared, timeout: TimeInterval = 30) {
        self.baseURL = baseURL
        self.session = session
        self.timeout = timeout
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard let url = URL(string: baseURL.absoluteString.trimmingSuffix("/") + request.path) else { throw URLError(.badURL) }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body = request.body {
            urlRequest.httpBody = body
            urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let authorization = request.authorization { urlRequest.setValue(authorization, forHTTPHeaderField: "Authorization") }
        if let dpop = request.dpop { urlRequest.setValue(try dpop.proof(url.absoluteString), forHTTPHeaderField: "DPoP") }
        let (data, response) = try await withDeadline(timeout) { [session, urlRequest] in try await session.data(for: urlRequest) }
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        let retryAfter = (http.value(forHTTPHeaderField: "Retry-After")).flatMap(TimeInterval.init)
        return TransportResponse(
            status: http.statusCode, retryAfter: retryAfter, body: data, dpopNonce: http.value(forHTTPHeaderField: "DPoP-Nonce"))
    }
}

/// Runs `body`, failing with `URLError(.timedOut)` after `seconds`: a deadline for the whole
/// exchange, which `URLRequest.timeoutInterval` (an idle timeout, and not honoured the same way
/// by every Foundation) does not give.
func withDeadline<T: Sendable>(_ seconds: TimeInterval, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw URLError(.timedOut)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}

/// A transport that answers with a closure: for tests, or to tamper with traffic in a scenario.
public struct ClosureTransport: BioAuthTransport {
    let handler: @Sendable (TransportRequest) async throws -> TransportResponse
    public init(_ handler: @escaping @Sendable (TransportRequest) async throws -> TransportResponse) { self.handler = handler }
    public func send(_ request: TransportRequest) async throws -> TransportResponse { try await handler(request) }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
