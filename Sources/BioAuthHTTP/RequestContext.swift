import Hummingbird
import Logging
import NIOCore

/// The request context: Hummingbird's core storage plus the peer address for rate limits.
public struct BioAuthRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Bodies are read by the routes with their own limit (``HTTPOptions/maxBodySize``).
    public var maxUploadSize: Int { 64 * 1024 }
}
