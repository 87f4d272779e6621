import BioAuth
import BioAuthClient
import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthSQLite
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// A real BioAuth server inside the test process, for an app's own tests: the HTTP API of
/// `bioauth-server` on a free loopback port, a temporary SQLite database, an API key with every
/// scope (what the app's backend holds), a recovery inbox the test reads as the user reads their
/// mail, and a clock that runs like a real one until the test moves it. No executable to build, no network beyond loopback.
///
/// ```swift
/// try await InProcessServer.with { server in
///     let client = BioAuthClient(server: URL(string: server.url)!, relyingPartyID: "localhost", platform: phone.platform)
///     …
/// }
/// ```
public struct InProcessServer: Sendable {
    /// The base URL, `http://127.0.0.1:PORT`.
    public let url: String
    /// The server's clock: real time unless the test moves it (`TestClock`), so a client on the
    /// system clock keeps working however long a test runs. Move it with `advance(by:)` to expire
    /// challenges, sessions and tokens — and then give the client and the emulated device this
    /// clock too (``client(platform:relyingPartyID:biometricPolicy:)`` does), so they move with it.
    public let clock: TestClock
    public let databasePath: String
    /// Where the recovery channel delivers codes (`DirectoryRecoveryChannel`).
    public let recoveryDirectory: URL
    /// An API key with every scope: what the app's backend would hold.
    public let apiKey: String
    let group: ServiceGroup
    let task: Task<Void, any Error>
    let app: BioAuthServerApp

    /// PBKDF2 rounds for the test server's passwords, unless `server` sets others: a test
    /// password guards nothing, and at the production figure
    /// (`ServerConfiguration.recommendedPasswordRounds`) every sign-in of a parallel test run
    /// costs a third of a second of CPU — enough, on a small machine, to time requests out.
    public static let passwordRounds = 1_000

    /// Starts a server. `allowSignUp` lets the test create password accounts (the built-in
    /// primary login); `server` sets the relying party, lifetimes and policies.
    public static func start(
        relyingParty: String = "localhost", allowSignUp: Bool = true, server configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> InProcessServer {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-test-\(UUID().uuidString).sqlite").path
        var serverConfiguration = ServerConfiguration(relyingPartyID: relyingParty, passwordRounds: passwordRounds)
        configure(&serverConfiguration)
        let configuration = ServerAppConfiguration(
            host: "127.0.0.1", port: 0, server: serverConfiguration, http: HTTPOptions(allowSignUp: allowSignUp), logLevel: .critical)
        let clock = TestClock()
        var logger = Logger(label: "bioauth-server")
        logger.logLevel = .critical
        let recovery = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-test-recovery-\(UUID().uuidString)")
        let app = BioAuthServerApp.build(
            configuration, store: try await SQLiteStore.open(path: path, logger: logger), clock: clock, logger: logger,
            recoveryChannel: DirectoryRecoveryChannel(directory: recovery))
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = app.application(configuration, logger: logger) { port in continuation.yield(port) }
        let group = ServiceGroup(services: [application], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestServerError("the in-process server did not start") }
        let key = try await app.service.createApiKey(
            name: "test backend", scopes: Set(ApiKeyScope.all), request: RequestInfo(clientAddress: "test"))
        return InProcessServer(
            url: "http://127.0.0.1:\(port)", clock: clock, databasePath: path, recoveryDirectory: recovery, apiKey: key.secret.value,
            group: group, task: task,
            app: app)
    }

    /// A client of this server that keeps time with it: the client reads ``clock`` for a
    /// challenge's expiry and its sessions' lifetimes, so `clock.advance(by:)` moves the phone and
    /// the server alike (give the emulated device the same clock:
    /// `EmulatedDevice(configuration: .init(biometry: .faceID, clock: server.clock))`). A client made
    /// with the system clock instead refuses every challenge once the server's clock has moved on.
    public func client(
        platform: DevicePlatform, relyingPartyID: String = "localhost", biometricPolicy: BiometricPolicy = .always
    ) -> BioAuthClient {
        BioAuthClient(
            configuration: .init(relyingPartyID: relyingPartyID, biometricPolicy: biometricPolicy, clock: clock), platform: platform,
            transport: URLSessionTransport(baseURL: URL(string: url)!))
    }

    /// Runs `body` against a server that is stopped (and its database deleted) when `body` ends,
    /// however it ends.
    public static func with<T>(
        relyingParty: String = "localhost", allowSignUp: Bool = true, server configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (InProcessServer) async throws -> T
    ) async throws -> T {
        let server = try await start(relyingParty: relyingParty, allowSignUp: allowSignUp, server: configure)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Stops the server and deletes its database: afterwards a client finds nobody there.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        try? await app.shutdown()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: databasePath + suffix) }
        try? FileManager.default.removeItem(at: recoveryDirectory)
    }

    /// Runs the server's once-a-minute maintenance now, at ``clock``'s time: expired rows go, and
    /// device removals whose security delay has passed happen. Call it after `clock.advance(by:)`.
    public func runMaintenance() async throws {
        _ = try await app.service.sweep()
    }

    /// The recovery code delivered for an enrolment request or a device removal, read as a user
    /// reads the e-mail.
    public func recoveryCode(for requestID: String) -> String? {
        DirectoryRecoveryChannel.readCode(for: EnrolmentRequestID(requestID), in: recoveryDirectory)
    }

    /// The last sign-in code delivered to `username` (`requestSignInCode(username:)`), read as the
    /// user reads their mail; nil if none was.
    public func signInCode(for username: String) -> String? {
        DirectoryRecoveryChannel.readSignInCode(for: UserID(username), in: recoveryDirectory)
    }
}

/// The in-process server could not start.
public struct TestServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
