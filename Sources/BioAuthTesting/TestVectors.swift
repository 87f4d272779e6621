import Foundation

/// Finds the shared test vectors: `$BIOAUTH_VECTORS`, else `../shared/vectors` beside the package.
///
/// Under CI (`CI=true`) a missing folder is an error; elsewhere ``directory`` is nil and tests
/// print why they skip.
public enum TestVectors {
    public static var directory: URL? {
        let fileManager = FileManager.default
        if let path = ProcessInfo.processInfo.environment["BIOAUTH_VECTORS"], !path.isEmpty {
            return fileManager.fileExists(atPath: path) ? URL(fileURLWithPath: path) : nil
        }
        let candidate = PackagePaths.root.deletingLastPathComponent().appendingPathComponent("shared/vectors")
        return fileManager.fileExists(atPath: candidate.path) ? candidate : nil
    }

    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    public struct Missing: Error, CustomStringConvertible {
        public let file: String
        public var description: String { "test vectors not found: \(file) (set BIOAUTH_VECTORS or place shared/ beside the package)" }
    }

    /// The contents of `relativePath` under the vectors folder.
    public static func load(_ relativePath: String) throws -> Data {
        guard let directory else { throw Missing(file: relativePath) }
        return try Data(contentsOf: directory.appendingPathComponent(relativePath))
    }

    /// Whether vector tests can run here; under CI they must.
    public static var available: Bool { directory != nil || isCI }
}

/// Whether the suites that need a service of the test machine (PostgreSQL, Python's joserfc) must
/// run: `BIOAUTH_REQUIRE_SERVICES=1`, which `.ci/run` sets after starting them. Without it they skip
/// with their reason — on a developer's machine, and on a hosted runner that sets `CI=true` but
/// has neither.
public enum TestServices {
    public static var required: Bool { ProcessInfo.processInfo.environment["BIOAUTH_REQUIRE_SERVICES"] == "1" }
}
