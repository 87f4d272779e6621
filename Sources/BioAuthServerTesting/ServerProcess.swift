import BioAuthServer
import BioAuthTesting
import Foundation

/// A spawned `bioauth-server` process on loopback.
public final class ServerProcess {
    let process = Process()
    /// The port it listens on (127.0.0.1).
    public let port: Int

    /// The built executable beside the test bundle. If `swift test` did not link it (it builds
    /// modules, not always executables), it is built once into a separate scratch path, so this
    /// never waits on the lock of the build that is running the tests.
    public static func executable(_ name: String) throws -> URL {
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let beside = products.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        let root = PackagePaths.root
        let scratch = root.appendingPathComponent(".build-test-products")
        let build = Process()
        build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        build.arguments = ["swift", "build", "--package-path", root.path, "--scratch-path", scratch.path, "--product", name]
        try build.run()
        build.waitUntilExit()
        let built = scratch.appendingPathComponent("debug").appendingPathComponent(name)
        guard build.terminationStatus == 0, FileManager.default.isExecutableFile(atPath: built.path) else {
            throw CocoaError(.fileNoSuchFile)
        }
        return built
    }

    /// Starts `bioauth-server --port 0 --management-port 0` on `database` and waits until it listens. Test servers
    /// allow sign-up unless `signUp` is false (the product's default is off).
    /// Its log lines go to `standardError` when given (a file the test reads), else to the test's own.
    public init(
        database: String, extra: [String] = [], environment: [String: String] = [:], signUp: Bool = true, standardError: FileHandle? = nil
    ) throws {
        process.executableURL = try Self.executable("bioauth-server")
        if let standardError { process.standardError = standardError }
        process.environment = Self.environment(environment)
        process.arguments =
            [
                "--port", "0", "--management-port", "0", "--database", database, "--password-rounds", "1000",
                "--insecure-password-rounds-for-tests", "--log-level", "error",
            ]
            + (signUp ? ["--allow-sign-up"] : []) + extra
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while !text.contains("\n"), Date() < deadline {
            // Waits at most until the deadline: a server that hangs before listening fails the test.
            var ready = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { break }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let range = text.range(of: "http://127.0.0.1:"), let port = Int(text[range.upperBound...].prefix { $0.isNumber }) else {
            process.terminate()
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
    }

    public var processIdentifier: Int32 { process.processIdentifier }

    /// Where test servers keep the key-encryption keys of their SQLite files (`XDG_STATE_HOME`):
    /// a temporary directory, not the home of whoever runs the tests.
    public static let stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-test-state").path

    /// This process's environment with `overrides`, and ``stateDirectory`` unless they name one.
    static func environment(_ overrides: [String: String]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(["XDG_STATE_HOME": stateDirectory]) { $1 }.merging(overrides) { $1 }
    }

    /// The key-encryption key file a test server makes for the SQLite file `database`.
    public static func kekFile(forDatabase database: String) -> String {
        DefaultKEKLocation.file(forSQLiteDatabase: database, environment: ["XDG_STATE_HOME": stateDirectory]) ?? database + ".signing-kek"
    }

    /// Runs `bioauth-server` with `arguments` (and `environment` over this process's) to completion:
    /// its exit status and standard output (with standard error too, `includingErrors`).
    public static func command(_ arguments: [String], environment: [String: String] = [:], includingErrors: Bool = false) throws -> (
        status: Int32, output: String
    ) {
        let process = Process()
        process.executableURL = try executable("bioauth-server")
        process.arguments = arguments
        process.environment = Self.environment(environment)
        let output = Pipe()
        process.standardOutput = output
        if includingErrors { process.standardError = output }
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A new backend API key for `database` (`bioauth-server api-key create`): the key, which the
    /// command prints on its last line.
    public static func createApiKey(database: String, scopes: [String] = ["approvals", "enrolment-grants"]) throws -> String {
        let (status, output) = try command(
            ["api-key", "create", "--database", database, "--name", "test backend"] + scopes.flatMap { ["--scope", $0] })
        guard status == 0, let key = output.split(separator: "\n").last, key.hasPrefix("bioauth_sk_") else {
            throw CocoaError(.fileReadCorruptFile)
        }
        return String(key)
    }

    /// SIGKILL: no chance to clean up.
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// SIGTERM: graceful shutdown. Returns the exit status (0 when it shut down cleanly); a server
    /// still running after `grace` is killed (and reports SIGKILL), so a hung shutdown fails a
    /// test instead of hanging the run.
    @discardableResult
    public func stop(grace: Duration = .seconds(30)) -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        let deadline = ContinuousClock.now + grace
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning { kill() }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
