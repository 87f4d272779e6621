import Foundation

/// Finds the test vectors: `Tests/Vectors` in the package (committed, so a fresh clone has them), or
/// the folder `$BIOAUTH_VECTORS` names, laid out the same way.
public enum TestVectors {
    /// The vectors folder; `BIOAUTH_VECTORS`, when set and not empty, takes precedence.
    public static var directory: URL {
        if let path = ProcessInfo.processInfo.environment["BIOAUTH_VECTORS"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        // A link to Tests/BioAuthDeviceTests/Vectors, the device tests' bundled resources.
        return PackagePaths.root.appendingPathComponent("Tests/Vectors").resolvingSymlinksInPath()
    }

    public struct Missing: Error, CustomStringConvertible {
        public let file: String
        public var description: String {
            "test vector not found: \(file) under \(TestVectors.directory.path) (Tests/Vectors, or $BIOAUTH_VECTORS when set)"
        }
    }

    /// The contents of `relativePath` under the vectors folder.
    public static func load(_ relativePath: String) throws -> Data {
        let url = directory.appendingPathComponent(relativePath)
        guard FileManager.default.fileExists(atPath: url.path) else { throw Missing(file: relativePath) }
        return try Data(contentsOf: url)
    }
}

/// Whether the suites that need a service of the test machine (PostgreSQL, Python's joserfc) must
/// run: `BIOAUTH_REQUIRE_SERVICES=1`, which `.ci/run` sets after starting them. Without it they skip
/// with their reason — on a developer's machine, and on a hosted runner that sets `CI=true` but
/// has neither.
public enum TestServices {
    public static var required: Bool { ProcessInfo.processInfo.environment["BIOAUTH_REQUIRE_SERVICES"] == "1" }

    /// Whether this run is CI's (`CI=true`), where a tool the image lacks is installed rather than skipped.
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
}
