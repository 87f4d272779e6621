import Foundation
import Testing

/// Issue 19 item 4: `docs/ServerAPI.md` is the server's public surface on one page — every public
/// type of the server modules has its row there, so a new one cannot slip in unexplained.
struct ServerAPIPageTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func everyPublicTypeOfTheServerModulesIsOnThePage() throws {
        let page = try String(contentsOf: Self.repository.appendingPathComponent("docs/ServerAPI.md"), encoding: .utf8)
        let declaration = try Regex(#"(?m)^public (?:protocol|struct|enum|final class|class|actor) ([A-Za-z]+)"#)
        var types: [String] = []
        for module in ["BioAuthServer", "BioAuthHTTP", "BioAuthSQLite", "BioAuthPostgres"] {
            let folder = Self.repository.appendingPathComponent("Sources/\(module)")
            let files = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            for case let file as URL in files where file.pathExtension == "swift" {
                let source = try String(contentsOf: file, encoding: .utf8)
                types += source.matches(of: declaration).compactMap { $0.output[1].substring.map(String.init) }
            }
        }
        #expect(types.count > 60, "the sources were found")
        let missing = types.filter { name in !["`\(name)`", "`\(name).", "`\(name)("].contains { page.contains($0) } }
        #expect(missing.isEmpty, "public types without a row in docs/ServerAPI.md: \(missing.sorted())")
    }
}
