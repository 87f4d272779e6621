import BioAuthServer
import Hummingbird
import Logging
import NIOCore

/// What BioAuth's routes need of a request context: the peer address (for rate limits) and a
/// ``BioAuthRequestState``. Your application keeps its own context and mounts BioAuth's routes on
/// its router (``BioAuthRoutes/addRoutes(to:)``) by conforming it:
///
/// ```swift
/// struct ShopContext: BioAuthRequestContext {
///     var coreContext: CoreRequestContextStorage
///     let remoteAddress: SocketAddress?
///     var bioAuth = BioAuthRequestState()
///     var shopUser: String?  // your own fields
///
///     init(source: ApplicationRequestContextSource) {
///         coreContext = .init(source: source)
///         remoteAddress = source.channel.remoteAddress
///     }
/// }
/// ```
public protocol BioAuthRequestContext: RequestContext, RemoteAddressRequestContext {
    /// BioAuth's part of the request: start it as `BioAuthRequestState()`.
    var bioAuth: BioAuthRequestState { get set }
}

/// BioAuth's per-request state in a ``BioAuthRequestContext``.
public struct BioAuthRequestState: Sendable {
    /// Identifies the request in the response (`X-Request-Id`), the logs and the audit log.
    /// Generated here: Hummingbird's own id lives in logger metadata, which a log handler may drop.
    public let requestID: BioAuthRequestID
    /// The verified session, set by BioAuth's authentication middleware on routes that need one.
    public internal(set) var session: SessionRecord?
    /// The verified API key, set by the backend API's middleware.
    public internal(set) var apiKey: ApiKeyRecord?

    public init() {
        requestID = BioAuthRequestID(String(UInt64.random(in: .min ... .max), radix: 16))
    }
}

/// BioAuth's own request context: the standalone server's, and the one ``BioAuthRoutes/makeRouter()``
/// uses.
public struct BasicBioAuthRequestContext: BioAuthRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public var bioAuth = BioAuthRequestState()

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Bodies are read by the routes with their own limit (``HTTPOptions/maxBodySize``).
    public var maxUploadSize: Int { 64 * 1024 }
}

extension BioAuthRequestContext {
    /// The session the middleware verified, with the request's info; a route outside the
    /// authenticated group asking for it is a programming error answered with 401, never a pass.
    func authenticated(_ info: RequestInfo) throws -> (SessionRecord, RequestInfo) {
        guard let session = bioAuth.session else { throw ServerError(.authenticationFailed) }
        return (session, info)
    }
}
