import BioAuthPostgres
import Testing

/// Every PostgreSQL connection starts with the server's own bounds, so a statement the client
/// gave up on does not keep its locks: `statement_timeout` (the operation timeout unless set)
/// and `lock_timeout` (2 s).
@Suite(.sharesPostgresServer)
struct StatementBoundTests {
    @Test func theBoundsAreStartupParameters() {
        let defaults = PostgresStore.Options()
        #expect(defaults.startupParameters.map { "\($0.0)=\($0.1)" } == ["statement_timeout=5000", "lock_timeout=2000"])
        let custom = PostgresStore.Options(
            operationTimeout: .seconds(120), statementTimeout: .milliseconds(1500), lockTimeout: .milliseconds(250))
        #expect(custom.startupParameters.map { "\($0.0)=\($0.1)" } == ["statement_timeout=1500", "lock_timeout=250"])
    }

    @Test(.enabled(if: PostgresTestServer.enabled, PostgresTestServer.skipReason))
    func theStoresConnectionsCarryThem() async throws {
        let store = try await PostgresTestServer.freshStore(
            // A generous operation bound (a fresh database on a loaded machine is slow to open); the
            // statement bound is set on its own.
            options: PostgresStore.Options(
                tls: .disable, poolSize: 2, operationTimeout: .seconds(120), statementTimeout: .seconds(30), lockTimeout: .milliseconds(750)
            ))
        #expect(try await store.setting("statement_timeout") == "30s")
        #expect(try await store.setting("lock_timeout") == "750ms")
        try await store.close()
    }
}
