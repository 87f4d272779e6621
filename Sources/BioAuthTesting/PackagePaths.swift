import Foundation

/// Where the package's own files are, for tests that read docs or spawn built products.
public enum PackagePaths {
    /// The package root (this file is `Sources/BioAuthTesting/PackagePaths.swift`).
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The contents of a file below the root, as text.
    public static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// Whether the document at `document` prints, as one ```swift block, the code of `source`
    /// between the lines `// MARKER-BEGIN` and `// MARKER-END` — byte for byte.
    public static func document(_ document: String, printsBlock marker: String, of source: String) throws -> Bool {
        let code = try text(source)
        guard code.contains("// \(marker)-BEGIN\n"),
            let block = code.components(separatedBy: "// \(marker)-BEGIN\n").last?.components(separatedBy: "// \(marker)-END").first
        else { return false }
        return try text(document).contains("```swift\n" + block + "```")
    }
}
