import BioAuthTesting
import Foundation
import Testing

/// The committed vectors stand alone: a fresh clone finds them in the package, and every set has
/// its licence and a row in `Tests/Vectors/README.md`.
@Suite
struct TestVectorFolderTests {
    /// `Tests/Vectors` links to `Tests/BioAuthDeviceTests/Vectors`, where the device tests bundle them.
    static let folder = PackagePaths.root.appendingPathComponent("Tests/Vectors").resolvingSymlinksInPath()

    @Test func withoutAnOverrideTheVectorsAreThePackagesOwn() {
        guard ProcessInfo.processInfo.environment["BIOAUTH_VECTORS"]?.isEmpty ?? true else { return }
        #expect(TestVectors.directory.standardizedFileURL == Self.folder.standardizedFileURL)
    }

    @Test func everySetHasARowAndALicence() throws {
        let fileManager = FileManager.default
        let readme = try PackagePaths.text("Tests/Vectors/README.md")
        let sets = try fileManager.contentsOfDirectory(atPath: Self.folder.path).filter { name in
            var isDirectory: ObjCBool = false
            return fileManager.fileExists(atPath: Self.folder.appendingPathComponent(name).path, isDirectory: &isDirectory)
                && isDirectory.boolValue
        }
        #expect(sets.sorted() == ["apple", "attestation", "dpop", "hardware-ecdsa", "webauthn", "wycheproof"])
        for set in sets {
            #expect(readme.contains("| `\(set)/"), "no row for \(set)/ in Tests/Vectors/README.md")
        }
        // Every folder that holds vector files carries its source's licence beside them.
        let walker = try #require(fileManager.enumerator(at: Self.folder, includingPropertiesForKeys: [.isRegularFileKey]))
        var folders: [URL: [String]] = [:]
        for case let file as URL in walker where (try file.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
            folders[file.deletingLastPathComponent().standardizedFileURL, default: []].append(file.lastPathComponent)
        }
        #expect(folders.count >= 10)
        for (folder, names) in folders where names.contains(where: { !$0.hasPrefix("LICENSE") && $0 != "README.md" }) {
            #expect(names.contains { $0.hasPrefix("LICENSE") }, "\(folder.path) has vector files but no licence file")
        }
    }

    @Test func aMissingVectorIsATypedErrorNamingTheFile() {
        #expect(throws: TestVectors.Missing.self) { try TestVectors.load("wycheproof/no_such_file.json") }
    }
}
