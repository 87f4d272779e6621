import BioAuthTesting
import Foundation
import Testing

/// `docs/EmulatorFidelity.md` names only tests that exist, so the page cannot drift from the suite.
struct FidelityPageTests {
    @Test func everyTestTheFidelityPageNamesExists() throws {
        let page = try PackagePaths.text("docs/EmulatorFidelity.md")
        var sources = ""
        let enumerator = FileManager.default.enumerator(
            at: PackagePaths.root.appendingPathComponent("Tests"), includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == "swift" { sources += try String(contentsOf: url, encoding: .utf8) }
        }
        var named = 0
        for row in page.split(separator: "\n") where row.hasPrefix("|") {
            guard let testColumn = row.split(separator: "|").last else { continue }
            for candidate in testColumn.split(separator: "`").enumerated() where candidate.offset % 2 == 1 {
                let name = candidate.element.split(separator: " ").first.map(String.init) ?? ""
                guard name.first?.isLowercase == true else { continue }
                named += 1
                #expect(sources.contains("func \(name)("), "docs/EmulatorFidelity.md names \(name), which is not a test")
            }
        }
        #expect(named > 30)
    }
}
