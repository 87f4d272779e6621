import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthSQLite
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// `bioauth-server`'s application running inside this process on a free loopback port, with a
/// temporary SQLite database.
public struct InProcessServer: Sendable {
    public let url: String
    public let clock: ManualClock
    public let databasePath: String
    /// Where the demo's recovery channel delivers codes (``DirectoryRecoveryChannel``).
    public let recoveryDirectory: URL
    /// An API key with every scope: what the app's backend would hold.
    public let apiKey: String
    let group: ServiceGroup
    let task: Task<Void, any Error>
    let app: BioAuthServerApp

    public static func start(relyingParty: String = "localhost") async throws -> InProcessServer {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-demo-\(UUID().uuidString).sqlite").path
        let configuration = ServerAppConfiguration(
            host: "127.0.0.1", port: 0, server: ServerConfiguration(relyingPartyID: relyingParty),
            http: HTTPOptions(allowSignUp: true),  // the demo's accounts sign up
            logLevel: .critical)
        let clock = ManualClock(start: Date())
        var logger = Logger(label: "bioauth-server")
        logger.logLevel = .critical
        let recovery = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-demo-recovery-\(UUID().uuidString)")
        let app = BioAuthServerApp.build(
            configuration, store: try await SQLiteStore.open(path: path, logger: logger), clock: clock, logger: logger,
            recoveryChannel: DirectoryRecoveryChannel(directory: recovery))
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = app.application(configuration, logger: logger) { port in continuation.yield(port) }
        let group = ServiceGroup(services: [application], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CLIError("the in-process server did not start") }
        let key = try await app.service.createApiKey(name: "demo backend", scopes: Set(ApiKeyScope.all), request: RequestInfo(clientAddress: "demo"))
        return InProcessServer(
            url: "http://127.0.0.1:\(port)", clock: clock, databasePath: path, recoveryDirectory: recovery, apiKey: key.secret.value, group: group, task: task,
            app: app)
    }

    /// Runs `body` against a server that is stopped (and its database deleted) when `body` ends,
    /// however it ends.
    public static func with<T>(relyingParty: String = "localhost", _ body: (InProcessServer) async throws -> T) async throws -> T {
        let server = try await start(relyingParty: relyingParty)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Stops the server and deletes its database.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        try? await app.shutdown()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: databasePath + suffix) }
        try? FileManager.default.removeItem(at: recoveryDirectory)
    }

    /// The recovery code delivered for an enrolment request, read as a user reads the e-mail.
    public func recoveryCode(for requestID: String) -> String? {
        DirectoryRecoveryChannel.readCode(for: requestID, in: recoveryDirectory)
    }
}
