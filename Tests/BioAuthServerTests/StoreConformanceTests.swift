import BioAuthServer
import BioAuthSQLite
import BioAuthTesting
import Foundation
import Testing

func temporaryDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-\(UUID().uuidString).sqlite").path
}

struct StoreConformanceTests {
    @Test func inMemoryStoreConforms() async throws {
        try await StoreConformance { InMemoryStore() }.run()
    }

    @Test func sqliteStoreConforms() async throws {
        try await StoreConformance { try await SQLiteStore.open(path: temporaryDatabasePath()) }.run()
    }

    /// Reopening a database keeps every row and applies no migration twice.
    @Test func sqliteStoreSurvivesReopening() async throws {
        let path = temporaryDatabasePath()
        let first = try await SQLiteStore.open(path: path)
        try await first.insertDevice(DeviceRecord(id: "d", userID: "u", name: "n", publicKey: Data([1]), createdAt: Date(timeIntervalSince1970: 5)))
        try await first.close()
        let second = try await SQLiteStore.open(path: path)
        #expect(try await second.device(id: "d")?.name == "n")
        try await second.close()
    }
}
