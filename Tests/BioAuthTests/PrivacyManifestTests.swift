import BioAuthTesting
import Foundation
import Testing

/// The App Store's privacy manifest (developer.apple.com/documentation/bundleresources/privacy-manifest-files):
/// an app-side target that calls a required-reason API ships a `PrivacyInfo.xcprivacy` naming its
/// category and an approved reason
/// (developer.apple.com/documentation/bundleresources/describing-use-of-required-reason-api).
/// The sources of every app-side target are scanned, so a new use cannot ship undeclared, and a
/// declared category that is no longer used is reported too.
struct PrivacyManifestTests {
    /// Required-reason API categories, the calls of each that Swift code makes, and the reason this
    /// package may give (only System boot time is used today).
    static let categories: [(category: String, calls: [String], reasons: [String])] = [
        ("NSPrivacyAccessedAPICategorySystemBootTime", ["systemUptime", "mach_absolute_time"], ["35F9.1"]),
        ("NSPrivacyAccessedAPICategoryUserDefaults", ["UserDefaults"], []),
        (
            "NSPrivacyAccessedAPICategoryFileTimestamp",
            ["creationDate", "modificationDate", "contentModificationDate", "getattrlist", "fstat("], []
        ),
        ("NSPrivacyAccessedAPICategoryDiskSpace", ["volumeAvailableCapacity", "systemFreeSize", "statfs"], []),
        ("NSPrivacyAccessedAPICategoryActiveKeyboards", ["activeInputModes"], []),
    ]
    /// The libraries an app links (`FootprintTests`).
    static let appSideTargets = ["BioAuthCore", "BioAuth", "BioAuthClient", "BioAuthApple"]

    @Test(arguments: appSideTargets)
    func everyRequiredReasonAPIATargetCallsIsDeclaredInItsManifest(_ target: String) throws {
        let folder = PackagePaths.root.appendingPathComponent("Sources/\(target)")
        var source = ""
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".swift") {
            source += try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        }
        let used = Self.categories.filter { category in category.calls.contains { source.contains($0) } }
        let manifestURL = folder.appendingPathComponent("PrivacyInfo.xcprivacy")
        guard FileManager.default.fileExists(atPath: manifestURL.path) else {
            #expect(used.isEmpty, "\(target) calls \(used.map(\.category)) but has no PrivacyInfo.xcprivacy")
            return
        }
        let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: manifestURL), format: nil)
        let manifest = try #require(plist as? [String: Any])
        #expect(manifest["NSPrivacyTracking"] as? Bool == false, "no tracking")
        #expect((manifest["NSPrivacyCollectedDataTypes"] as? [Any])?.isEmpty == true, "no data collected")
        let declared = try #require(manifest["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        var reasons: [String: [String]] = [:]
        for entry in declared {
            reasons[try #require(entry["NSPrivacyAccessedAPIType"] as? String)] =
                entry["NSPrivacyAccessedAPITypeReasons"] as? [String] ?? []
        }
        #expect(Set(reasons.keys) == Set(used.map(\.category)), "declared \(reasons.keys.sorted()), used \(used.map(\.category))")
        for category in used { #expect(reasons[category.category] == category.reasons, "\(category.category)") }
        let manifestText = try PackagePaths.text("Package.swift")
        #expect(manifestText.contains(#"resources: [.copy("PrivacyInfo.xcprivacy")]"#), "Package.swift ships it as a resource")
    }

    /// BioAuth's app passcode delays run on the uptime clock, so its manifest is not empty.
    @Test func theAppPasscodesUptimeClockIsDeclared() throws {
        let plist = try PropertyListSerialization.propertyList(
            from: try Data(contentsOf: PackagePaths.root.appendingPathComponent("Sources/BioAuth/PrivacyInfo.xcprivacy")), format: nil)
        let types = try #require((plist as? [String: Any])?["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        #expect(
            types.contains {
                $0["NSPrivacyAccessedAPIType"] as? String == "NSPrivacyAccessedAPICategorySystemBootTime"
                    && ($0["NSPrivacyAccessedAPITypeReasons"] as? [String]) == ["35F9.1"]
            })
    }
}
