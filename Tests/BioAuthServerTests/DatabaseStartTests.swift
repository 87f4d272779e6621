import BioAuthPostgres
import BioAuthServer
import Foundation
import Testing

/// A database that cannot be used says why at start — unreachable, the role, the database, TLS —
/// with its SQLSTATE, instead of every cause looking like a timeout; never with the password.
@Suite(.sharesPostgresServer)
struct DatabaseStartTests {
    func failure(_ url: String) async -> String? {
        guard let location = PostgresStore.Location(url: url) else { return "unparsed" }
        do {
            let store = try await PostgresStore.open(location, options: PostgresStore.Options(operationTimeout: .seconds(5)))
            try await store.close()
            return nil
        } catch let error as StoreError {
            return error.detail
        } catch {
            return "\(error)"
        }
    }

    @Test func anUnreachableServerIsNamedAsSuch() async {
        let detail = await failure("postgres://bioauth:hunter2hunter2@127.0.0.1:1/postgres?sslmode=disable")
        #expect(detail?.contains("cannot reach postgres://bioauth@127.0.0.1:1/postgres") == true, "\(detail ?? "")")
        #expect(detail?.contains("hunter2") == false)
    }

    @Test(.enabled(if: PostgresTestServer.enabled, PostgresTestServer.skipReason))
    func theRoleTheDatabaseAndTLSAreNamedWithTheirSQLState() async throws {
        let admin = try PostgresTestServer.admin()
        let base = "\(admin.host):\(admin.port)"
        let role = await failure("postgres://nobody:hunter2hunter2@\(base)/postgres?sslmode=disable")
        #expect(
            role?.contains("SQLSTATE 28000") == true && role?.contains("role") == true && role?.contains("hunter2") == false,
            "\(role ?? "")")
        let database = await failure("postgres://\(admin.username)@\(base)/no_such_database?sslmode=disable")
        #expect(
            database?.contains("the database does not exist") == true && database?.contains("SQLSTATE 3D000") == true, "\(database ?? "")")
        let tls = await failure("postgres://\(admin.username)@\(base)/postgres?sslmode=require")
        #expect(tls?.contains("offers no TLS") == true, "\(tls ?? "")")
    }
}
