import Foundation

/// Where the package's own files are, for tests that read docs or spawn built products.
public enum PackagePaths {
    /// The package root (this file is `Sources/BioAuthTesting/PackagePaths.swift`).
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The contents of a file below the root, as text.
    public static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }
}
