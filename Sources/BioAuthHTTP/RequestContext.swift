import BioAuthServer
import Hummingbird
import Logging
import NIOCore

/// The request context: Hummingbird's core storage plus the peer address for rate limits.
public struct BioAuthRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// Identifies the request in the response (`X-Request-Id`), the logs and the audit log.
    /// Generated here: Hummingbird's own id lives in logger metadata, which a log handler may drop.
    public let requestID: String
    /// The verified session, set by the authentication middleware on routes that need one.
    public var session: SessionRecord?
    /// The verified API key, set by the backend API's middleware.
    public var apiKey: ApiKeyRecord?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        requestID = String(UInt64.random(in: .min ... .max), radix: 16)
    }

    /// The session the middleware verified, with the request's info; a route outside the
    /// authenticated group asking for it is a programming error answered with 401, never a pass.
    func authenticated(_ info: RequestInfo) throws -> (SessionRecord, RequestInfo) {
        guard let session else { throw ServerError(.authenticationFailed) }
        return (session, info)
    }

    /// Bodies are read by the routes with their own limit (``HTTPOptions/maxBodySize``).
    public var maxUploadSize: Int { 64 * 1024 }
}
