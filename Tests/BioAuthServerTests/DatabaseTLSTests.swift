import BioAuthPostgres
import Testing

/// PostgreSQL over a network verifies the server by default (libpq's `verify-full`): `prefer`
/// would let anyone in between strip TLS and read every statement, password hashes included.
struct DatabaseTLSTests {
    @Test func tlsIsVerifiedForEveryHostButLoopback() throws {
        typealias Mode = PostgresStore.Options.TLSMode
        for host in ["db.internal", "10.0.0.5", "db.example.com", "LOCALHOST.example.com"] {
            #expect(Mode.automatic(for: host) == .require, "\(host)")
        }
        for host in ["localhost", "127.0.0.1", "127.0.0.2", "::1", "[::1]"] { #expect(Mode.automatic(for: host) == .prefer, "\(host)") }
        #expect(Mode(name: "verify-full") == .require && Mode(name: "disable") == .disable && Mode(name: "verify-ca") == nil)
        #expect(PostgresStore.Location(url: "postgres://u@db.internal/x?sslmode=verify-full")?.sslMode == .require)
        #expect(PostgresStore.Location(url: "postgres://u@db.internal/x")?.sslMode == nil, "no sslmode: the automatic default applies")
        #expect(PostgresStore.Options().tls == nil)
    }
}
