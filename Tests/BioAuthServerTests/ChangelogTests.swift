import BioAuthCore
import BioAuthSQL
import BioAuthTesting
import Foundation
import Testing

/// Releases an operator can tell apart: `CHANGELOG.md`'s newest release is the version the
/// binaries print, and every migration a database can be given is listed under a release.
struct ChangelogTests {
    @Test func theNewestReleaseIsTheVersionTheBinariesPrint() throws {
        let changelog = try PackagePaths.text("CHANGELOG.md")
        // What main has and no release yet: `## [Unreleased]`, above the newest release.
        let newest = try #require(changelog.components(separatedBy: "\n").first { $0.hasPrefix("## [") && $0 != "## [Unreleased]" })
        #expect(newest.hasPrefix("## [\(BioAuthVersion.current)] - "), "\(newest) is not \(BioAuthVersion.current)")
    }

    @Test func everyMigrationIsListedUnderARelease() throws {
        let changelog = try PackagePaths.text("CHANGELOG.md")
        for name in Schema.migrations {
            #expect(changelog.contains("- " + name), "CHANGELOG.md does not list the migration \"\(name)\"")
        }
    }
}
