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
        guard build.terminationStatus == 0, FileManager.default.isExecutableFile(atPath: built.path) else { throw CocoaError(.fileNoSuchFile) }
        return built
    }

    /// Starts `bioauth-server --port 0` on `database` and waits until it listens. Test servers
    /// allow sign-up unless `signUp` is false (the product's default is off).
    public init(database: String, extra: [String] = [], environment: [String: String] = [:], signUp: Bool = true) throws {
        process.executableURL = try Self.executable("bioauth-server")
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.arguments = ["--port", "0", "--database", database, "--password-rounds", "1000", "--insecure-password-rounds-for-tests", "--log-level", "error"] + (signUp ? ["--allow-sign-up"] : []) + extra
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(30)
        while !text.contains("\n"), Date() < deadline {
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

    /// SIGKILL: no chance to clean up.
    public func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM: graceful shutdown. Returns the exit status (0 when it shut down cleanly).
    @discardableResult
    public func stop() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

