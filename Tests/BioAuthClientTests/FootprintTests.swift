import BioAuthTesting
import Foundation
import Testing

/// What an app links when it depends on `BioAuthClient` (and `BioAuthApple`): no server, NIO,
/// SQLite, PostgreSQL or metrics code, no emulator, and BoringSSL (`CryptoExtras`) only where
/// CommonCrypto is absent.
struct FootprintTests {
    static let appSide = ["BioAuthClient", "BioAuth", "BioAuthCore", "BioAuthApple"]
    static let allowedImports: Set<String> = [
        "BioAuth", "BioAuthCore", "Crypto", "Foundation", "FoundationNetworking", "Logging", "Synchronization",
        "LocalAuthentication", "Security", "CryptoKit", "CommonCrypto", "CryptoExtras", "Darwin", "Glibc",
    ]

    /// One dependency of a target: a target or product name, and the platforms it is limited to (nil: all).
    struct Dependency {
        let name: String
        let platforms: [String]?
    }

    /// Each target's dependencies as SwiftPM reads the manifest (`swift package dump-package`).
    static func dependencies() throws -> [String: [Dependency]] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Its own scratch path: the running `swift test` holds the package's .build.
        process.arguments = ["swift", "package", "--package-path", PackagePaths.root.path, "--scratch-path", scratch.path, "dump-package"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let json = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "swift package dump-package failed")
        let manifest = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any], "dump-package printed no object")
        let targets = try #require(manifest["targets"] as? [[String: Any]], "dump-package printed no targets")
        var result: [String: [Dependency]] = [:]
        for target in targets {
            let name = try #require(target["name"] as? String)
            let entries = try #require(target["dependencies"] as? [[String: Any]], "\(name) has no dependency list")
            result[name] = try entries.map { entry in
                // {"byName"|"target"|"product": [name, …, condition]}
                let fields = try #require(entry.values.first as? [Any], "unreadable dependency of \(name)")
                let dependency = try #require(fields.first as? String, "unnamed dependency of \(name)")
                let condition = fields.last as? [String: Any]
                return Dependency(name: dependency, platforms: condition?["platformNames"] as? [String])
            }
        }
        return result
    }

    @Test func appSideTargetsDependOnlyOnAppSideCode() throws {
        let manifest = try Self.dependencies()
        var pending = Self.appSide, seen: Set<String> = []
        while let target = pending.popLast() {
            guard seen.insert(target).inserted else { continue }
            let dependencies = try #require(manifest[target], "no target \(target) in the manifest")
            for dependency in dependencies {
                for forbidden in [
                    "NIO", "SQLite", "Postgres", "Hummingbird", "Metrics", "Prometheus", "AsyncHTTPClient", "BioAuthServer", "BioAuthHTTP",
                    "BioAuthEmulator", "ServiceLifecycle",
                ] {
                    #expect(!dependency.name.contains(forbidden), "\(target) depends on \(dependency.name)")
                }
                if dependency.name == "CryptoExtras" {
                    // BoringSSL only where CommonCrypto is absent: never on an Apple platform.
                    let platforms = dependency.platforms ?? ["every platform"]
                    let apple = ["macos", "ios", "tvos", "watchos", "visionos", "maccatalyst", "driverkit", "every platform"]
                    #expect(
                        platforms.contains("linux") && !platforms.contains(where: apple.contains),
                        "\(target) links CryptoExtras on \(platforms)")
                }
                if dependency.name.hasPrefix("BioAuth") { pending.append(dependency.name) }
            }
        }
        #expect(seen == Set(Self.appSide))
    }

    @Test func appSideSourcesImportNothingElse() throws {
        for target in Self.appSide {
            let directory = PackagePaths.root.appendingPathComponent("Sources/\(target)")
            let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil).filter {
                $0.pathExtension == "swift"
            }
            #expect(!files.isEmpty)
            for file in files {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                    guard let module = line.firstMatch(of: /^(?:@preconcurrency |package |public )?import ([A-Za-z_]+)/)?.1 else {
                        continue
                    }
                    #expect(Self.allowedImports.contains(String(module)), "\(target)/\(file.lastPathComponent) imports \(module)")
                }
            }
        }
    }

    /// What an app's test target builds for `BioAuthTestServer`: the server over SQLite and
    /// Hummingbird, but no PostgreSQL, no outgoing HTTP client (and its second TLS stack) and no
    /// command line — they cost minutes of a first build and a test needs none of them.
    @Test func theTestServerBuildsNoPostgresNoHTTPClient() throws {
        let manifest = try Self.dependencies()
        var pending = ["BioAuthTestServer"], seen: Set<String> = []
        while let target = pending.popLast() {
            guard seen.insert(target).inserted else { continue }
            for dependency in try #require(manifest[target], "no target \(target) in the manifest") {
                for forbidden in ["Postgres", "AsyncHTTPClient", "BioAuthWebhooks", "ArgumentParser", "BioAuthServerApp", "BioAuthCLI"] {
                    #expect(!dependency.name.contains(forbidden), "\(target) depends on \(dependency.name)")
                }
                if manifest[dependency.name] != nil { pending.append(dependency.name) }
            }
        }
        #expect(seen.isSuperset(of: ["BioAuthTestServer", "BioAuthHTTP", "BioAuthServer", "BioAuthSQLite"]))
    }
}
