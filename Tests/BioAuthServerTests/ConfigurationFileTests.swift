import BioAuthServerTesting
import BioAuthTesting
import Foundation
import Testing

/// `bioauth-server --config FILE`: settings as `KEY=value` lines named like the environment
/// variables; a flag wins over the environment, the environment over the file; an unknown key
/// stops the start.
struct ConfigurationFileTests {
    /// The keys a file may hold are exactly the variables the server reads.
    @Test func theKnownKeysAreTheVariablesTheServerReads() throws {
        let folder = PackagePaths.root.appendingPathComponent("Sources/BioAuthServerApp")
        var read = Set<String>()
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".swift") {
            let source = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            read.formUnion(source.matches(of: #/env(?:List)?\("([A-Z_]+)"\)/#).map { String($0.1) })
        }
        let list = try String(contentsOf: folder.appendingPathComponent("ConfigurationFile.swift"), encoding: .utf8)
        let knownBlock = try #require(
            list.firstRange(of: "static let knownKeys").map { list[$0.upperBound...] }?.split(separator: "]").first)
        let known = Set(knownBlock.matches(of: #/"([A-Z_]+)"/#).map { String($0.1) })
        #expect(
            read.count > 30 && known == read, "missing: \(read.subtracting(known).sorted()), stale: \(known.subtracting(read).sorted())")
    }

    /// `--sqlite-decisions` takes one of its two names; anything else stops the start.
    @Test(.timeLimit(.minutes(2)))
    func sqliteDecisionsAreNamedOrRefused() throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-decisions-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) } }
        for name in ["in-writer", "before-writer"] {
            let listed = try ServerProcess.command(["api-key", "list", "--database", database, "--sqlite-decisions", name])
            #expect(listed.status == 0, "\(name): \(listed)")
        }
        let refused = try ServerProcess.command(["api-key", "list", "--database", database, "--sqlite-decisions", "sideways"])
        #expect(refused.status != 0, "\(refused)")
        let fromEnvironment = try ServerProcess.command(
            ["api-key", "list", "--database", database], environment: ["BIOAUTH_SQLITE_DECISIONS": "sideways"])
        #expect(fromEnvironment.status != 0)
    }

    @Test(.timeLimit(.minutes(2)))
    func aFileConfiguresTheServerAndTheEnvironmentWins() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("bioauth-server.conf").path
        try """
        # BioAuth behind https://auth.example.com
        BIOAUTH_TOKEN_ISSUER = "https://auth.example.com"
        BIOAUTH_TOKEN_AUDIENCE=https://api.example.com

        LOG_LEVEL=error
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let database = directory.appendingPathComponent("db.sqlite").path
        let configured = try ServerProcess(database: database, extra: ["--config", file])
        let metadata = try await ServerClient(baseURL: "http://127.0.0.1:\(configured.port)").get("/.well-known/openid-configuration")
        #expect(metadata.status == 200 && metadata["issuer"] == "https://auth.example.com", "\(metadata)")
        #expect(configured.stop() == 0)

        let overridden = try ServerProcess(
            database: database, extra: ["--config", file], environment: ["BIOAUTH_TOKEN_ISSUER": "https://other.example.com"])
        #expect(
            try await ServerClient(baseURL: "http://127.0.0.1:\(overridden.port)").get("/.well-known/openid-configuration")["issuer"]
                == "https://other.example.com")
        #expect(overridden.stop() == 0)

        let typo = directory.appendingPathComponent("typo.conf").path
        try "BIOAUTH_DATABSE=elsewhere.sqlite\n".write(toFile: typo, atomically: true, encoding: .utf8)
        #expect(
            try ServerProcess.command(["api-key", "list", "--database", database, "--config", typo]).status != 0,
            "an unknown key stops the start")
        #expect(
            try ServerProcess.command([
                "api-key", "list", "--database", database, "--config", directory.appendingPathComponent("missing").path,
            ]).status != 0)
    }
}
