import Hummingbird
import Logging
import ServiceLifecycle

/// A Hummingbird app on a free loopback port: the real HTTP peer a test talks to (a backend's
/// webhook, a status-list mirror). Stop it when the test ends.
struct LoopbackServer: Sendable {
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    static func start(_ router: Router<BasicRequestContext>) async throws -> LoopbackServer {
        var logger = Logger(label: "loopback")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return LoopbackServer(port: port, group: group, task: task)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
