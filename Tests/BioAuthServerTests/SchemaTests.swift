import BioAuthSQL
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

    /// A migration written once (`SchemaChange`) is valid SQLite and declares the described types:
    /// a column of every kind, nullable and required with a default, and a partial index.
    @Test func aSharedMigrationAddsTheDescribedColumnsToSQLite() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-schema-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try await SQLiteStore.open(path: path).close()
        try await withRawSQLite(path) { raw in
            for statement in SchemaMigration.sample.statements(in: .sqlite) { _ = try await raw.query(statement) }
        }
        let store = try await SQLiteStore.open(path: path)
        let declared = try await store.declaredColumns().filter { $0.table == "devices" }
        #expect(Array(declared.suffix(SchemaMigration.sampleColumns.count)) == SchemaMigration.declared(typeName: SQLiteStore.typeName))
        try await store.close()
        try await withRawSQLite(path) { raw in
            let index = try await raw.query("SELECT sql FROM sqlite_master WHERE name = 'devices_sample'").first?.column("sql")?.string
            #expect(index == "CREATE INDEX devices_sample ON devices (sample_text, sample_date) WHERE sample_integer > 0")
        }
    }

    @Test func aDatabaseFromANewerBioAuthIsRefusedAndLeftAsItWas() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-schema-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try await SQLiteStore.open(path: path).close()
        _ = try await withRawSQLite(path) { raw in
            try await raw.query("INSERT INTO migrations (name, applied_at) VALUES ('Sessions carry a device attestation', 0)")
        }

        let error = await #expect(throws: StoreError.self) { try await SQLiteStore.open(path: path) }
        #expect(error?.code == .schemaTooNew)
        #expect(error?.detail?.contains("Sessions carry a device attestation") == true, "the message names what this binary does not know")
    }

    /// Only failures' audit rows enter the index that merging repeats reads, and the merging query
    /// uses it: its condition is the index's predicate word for word.
    @Test func onlyFailuresAreIndexedForMergingAndTheMergeUsesThatIndex() async throws {
        #expect(
            Set(Schema.mergedAuditKinds) == Set(AuditKind.failures.map(\.description)),
            "a new failure kind needs a migration that rebuilds audit_repeat")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-schema-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try await SQLiteStore.open(path: path).close()
        try await withRawSQLite(path) { raw in
            let plan = try await raw.query(
                "EXPLAIN QUERY PLAN SELECT seq FROM audit WHERE \(Schema.mergedAuditKindsCondition) AND client IS ? AND kind = ? AND at >= ? ORDER BY seq DESC LIMIT 1",
                [.text("203.0.113.9"), .text("login.failed"), .float(0)])
            #expect(
                plan.map { $0.column("detail")?.string ?? "" }.contains { $0.contains("audit_repeat") },
                "\(plan.map { $0.column("detail")?.string ?? "" })")
            let definition =
                try await raw.query("SELECT sql FROM sqlite_master WHERE name = 'audit_repeat'").first?.column("sql")?.string ?? ""
            #expect(definition.hasSuffix("WHERE \(Schema.mergedAuditKindsCondition)"), "\(definition)")
        }
    }
}

/// Runs `body` with a raw SQLiteNIO connection to the file at `path`, beside any store that has it
/// open (what an operator's `sqlite3` shell would be), and closes it.
func withRawSQLite<T>(_ path: String, _ body: (SQLiteConnection) async throws -> T) async throws -> T {
    let pool = NIOThreadPool(numberOfThreads: 1)
    pool.start()
    let raw = try await SQLiteConnection.open(
        storage: .file(path: path), threadPool: pool, logger: Logger(label: "raw"), on: MultiThreadedEventLoopGroup.singleton.any())
    do {
        let result = try await body(raw)
        try await raw.close()
        try await pool.shutdownGracefully()
        return result
    } catch {
        try? await raw.close()
        try? await pool.shutdownGracefully()
        throw error
    }
}

extension SchemaMigration {
    /// A nullable column of every kind but the generated row number, and a required one of each
    /// kind a default can be given.
    static let sampleColumns: [Schema.Column] =
        [Schema.ColumnType.text, .bytes, .date, .integer, .smallInteger, .boolean].map {
            Schema.Column("sample_\("\($0)".lowercased())", $0, nullable: true)
        }
        + [Schema.ColumnType.text, .integer, .smallInteger, .boolean].map { Schema.Column("sample_\("\($0)".lowercased())_required", $0) }

    /// A migration no store ships: the sample columns on `devices`, and a partial index.
    static let sample = SchemaMigration(
        "A sample migration",
        sampleColumns.map { column in
            let value: ColumnDefault? =
                column.nullable ? nil : column.type == .text ? .text("it's") : column.type == .boolean ? .boolean(true) : .integer(7)
            return .addColumn("devices", column, default: value)
        } + [.createIndex(name: "devices_sample", table: "devices", columns: ["sample_text", "sample_date"], where: "sample_integer > 0")])

    /// The sample columns as a store with these type names declares them.
    static func declared(typeName: (Schema.ColumnType) -> String) -> [Schema.DeclaredColumn] {
        sampleColumns.map { Schema.DeclaredColumn(table: "devices", column: $0.name, type: typeName($0.type), nullable: $0.nullable) }
    }
}
