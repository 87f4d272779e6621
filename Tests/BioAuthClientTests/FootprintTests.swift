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

    /// Each target's dependency list as `Package.swift` writes it.
    static func dependencies() throws -> [String: String] {
        let manifest = try PackagePaths.text("Package.swift")
        var result: [String: String] = [:]
        for block in manifest.components(separatedBy: ".target(").dropFirst() {
            guard let name = block.firstMatch(of: /name: "([A-Za-z]+)"/)?.1 else { continue }
            let dependencies = block.components(separatedBy: "),\n        .").first ?? block
            result[String(name)] = dependencies
        }
        return result
    }

    @Test func appSideTargetsDependOnlyOnAppSideCode() throws {
        let manifest = try Self.dependencies()
        var pending = Self.appSide, seen: Set<String> = []
        while let target = pending.popLast() {
            guard seen.insert(target).inserted else { continue }
            let block = try #require(manifest[target], "no target \(target) in Package.swift")
            for forbidden in ["NIO", "SQLite", "Postgres", "Hummingbird", "Metrics", "Prometheus", "AsyncHTTPClient", "BioAuthServer", "BioAuthHTTP", "BioAuthEmulator", "ServiceLifecycle"] {
                #expect(!block.contains(forbidden), "\(target) depends on \(forbidden)")
            }
            if block.contains("\"CryptoExtras\"") {
                #expect(block.contains("condition: .when(platforms: [.linux"), "\(target) links CryptoExtras on Apple platforms")
                #expect(!block.contains(".macOS") && !block.contains(".iOS"))
            }
            for match in block.matches(of: /"(BioAuth[A-Za-z]*)"/) where match.1 != target { pending.append(String(match.1)) }
        }
        #expect(seen == Set(Self.appSide))
    }

    @Test func appSideSourcesImportNothingElse() throws {
        for target in Self.appSide {
            let directory = PackagePaths.root.appendingPathComponent("Sources/\(target)")
            let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil).filter { $0.pathExtension == "swift" }
            #expect(!files.isEmpty)
            for file in files {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                    guard let module = line.firstMatch(of: /^(?:@preconcurrency |package |public )?import ([A-Za-z_]+)/)?.1 else { continue }
                    #expect(Self.allowedImports.contains(String(module)), "\(target)/\(file.lastPathComponent) imports \(module)")
                }
            }
        }
    }
}
