import BioAuthServer
import BioAuthSQLite
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
import Testing

/// Both SQL stores build the one schema `Schema` describes, through the one list of migrations;
/// a database written by a newer BioAuth is refused. (PostgreSQL's side: `PostgresTests`.)
struct SchemaTests {
    @Test func sqliteMigrationsAreTheSharedListInOrder() {
        #expect(SQLiteStore.migrations.map(\.name) == Schema.migrations)
    }

    @Test func aMigratedSQLiteDatabaseHasExactlyTheDescribedColumns() async throws {
        let store = try SQLiteStore.inMemory()
        #expect(try await store.declaredColumns() == Schema.declared(typeName: SQLiteStore.typeName))
        try await store.close()
    }

    @Test func aDatabaseFromANewerBioAuthIsRefusedAndLeftAsItWas() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-schema-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try await SQLiteStore.open(path: path).close()
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let raw = try await SQLiteConnection.open(storage: .file(path: path), threadPool: pool, logger: Logger(label: "raw"), on: MultiThreadedEventLoopGroup.singleton.any())
        _ = try await raw.query("INSERT INTO migrations (name, applied_at) VALUES ('Sessions carry a device attestation', 0)")
        try await raw.close()
        try await pool.shutdownGracefully()

        let error = await #expect(throws: StoreError.self) { try await SQLiteStore.open(path: path) }
        #expect(error?.code == .schemaTooNew)
        #expect(error?.detail?.contains("Sessions carry a device attestation") == true, "the message names what this binary does not know")
    }
}
