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

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        requestID = String(UInt64.random(in: .min ... .max), radix: 16)
    }

    /// Bodies are read by the routes with their own limit (``HTTPOptions/maxBodySize``).
    public var maxUploadSize: Int { 64 * 1024 }
}
