import BioAuthPostgres
import BioAuthTesting
import Foundation
import Logging
import PostgresNIO
import Testing

/// The PostgreSQL server `.ci/run` starts (`. .ci/postgres` locally): its URL is in
/// `BIOAUTH_TEST_POSTGRES_URL`. Without it the PostgreSQL tests are skipped with that reason,
/// except where `.ci/run` demands them (`BIOAUTH_REQUIRE_SERVICES=1`): there they run and fail.
/// `CI=true` alone does not (a hosted runner without PostgreSQL skips them).
enum PostgresTestServer {
    static let environment = ProcessInfo.processInfo.environment
    static let url = environment["BIOAUTH_TEST_POSTGRES_URL"]
    /// Run the PostgreSQL tests: a server is configured, or `.ci/run` demands them.
    static let enabled = url != nil || TestServices.required
    static let skipReason: Comment = "no PostgreSQL: run `. .ci/postgres` first (sets BIOAUTH_TEST_POSTGRES_URL)"

    struct NotConfigured: Error, CustomStringConvertible {
        var description: String { "BIOAUTH_REQUIRE_SERVICES=1 but BIOAUTH_TEST_POSTGRES_URL is not set: .ci/run must start PostgreSQL" }
    }

    static func admin() throws -> PostgresStore.Location {
        guard let url, let location = PostgresStore.Location(url: url) else { throw NotConfigured() }
        return location
    }

    /// Creates an empty database and returns its URL.
    static func freshDatabaseURL() async throws -> String {
        let admin = try admin()
        let name = "bioauth_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let logger = Logger(label: "postgres-test")
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                host: admin.host, port: admin.port, username: admin.username, password: admin.password, database: admin.database,
                tls: .disable),
            id: 1, logger: logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
        return "postgres://\(admin.username)@\(admin.host):\(admin.port)/\(name)?sslmode=disable"
    }

    /// A generous operation bound: the conformance suite races hundreds of calls on a loaded CI
    /// machine, and what it tests is the store, not the bound (`aLostDatabaseAnswers503…` does that).
    /// A store on a fresh database. The operation timeout is generous: on a 2-core CI machine the
    /// parallel suites (server processes, CLI runs) can keep the cooperative pool busy for tens of
    /// seconds, and a timeout here would measure the machine, not the store (a lost database's
    /// 503 has its own test).
    /// The lock bound is as generous: beside busy loops a lock holder can be off the CPU for
    /// seconds, and the 2 s default would measure that (`aLockTimeoutIsUnavailable` tests the bound).
    static func freshStore(options: PostgresStore.Options = PostgresTestServer.testOptions()) async throws -> PostgresStore {
        try await PostgresStore.open(try #require(PostgresStore.Location(url: try await freshDatabaseURL())), options: options)
    }

    /// The test stores' options: generous operation and lock bounds; prepared statements or not.
    static func testOptions(preparedStatements: Bool = true) -> PostgresStore.Options {
        PostgresStore.Options(
            tls: .disable, poolSize: 10, operationTimeout: .seconds(120), lockTimeout: .seconds(30), preparedStatements: preparedStatements)
    }

    /// Runs one SQL statement on a database (for tests that plant rows or read the schema).
    static func execute(_ sql: String, on url: String) async throws -> [PostgresRow] {
        let location = try #require(PostgresStore.Location(url: url))
        let logger = Logger(label: "postgres-test")
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                host: location.host, port: location.port, username: location.username, password: location.password,
                database: location.database, tls: .disable),
            id: 2, logger: logger)
        defer { Task { try? await connection.close() } }
        return try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).collect()
    }

    /// ``execute(_:on:)`` from synchronous code (a store's `decide` closure). It waits on SwiftNIO's
    /// futures, whose work runs on the event loops: a task it started and waited for would need a
    /// thread of the cooperative pool, which the waiting caller holds — with every other one busy,
    /// nothing would ever run it.
    static func executeBlocking(_ sql: String, on url: String) throws {
        let location = try #require(PostgresStore.Location(url: url))
        let logger = Logger(label: "postgres-test")
        let connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(),
            configuration: .init(
                host: location.host, port: location.port, username: location.username, password: location.password,
                database: location.database, tls: .disable),
            id: 3, logger: logger
        ).wait()
        defer { try? connection.close().wait() }
        _ = try connection.simpleQuery(sql).wait()
    }

    /// Stops or starts the server with the `pg_ctl` command `.ci/postgres` exported. Spawned and
    /// reaped directly: Foundation's `Process` can miss the exit of a shell whose grandchild (the
    /// server) outlives it.
    static func control(_ action: String) throws {
        guard let command = environment["BIOAUTH_TEST_POSTGRES_CTL"] else { throw NotConfigured() }
        let arguments = ["/bin/sh", "-c", "\(command) \(action) </dev/null >/dev/null 2>&1"]
        var pid: pid_t = 0
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, &argv, environ) == 0 else { throw ControlFailed(action: action, status: -1) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        guard status == 0 else { throw ControlFailed(action: action, status: status) }
    }

    struct ControlFailed: Error, CustomStringConvertible {
        let action: String
        let status: Int32
        var description: String { "pg_ctl \(action) failed (wait status \(status)); the server's log is beside its data directory" }
    }
}

/// Who uses the shared PostgreSQL server while one test stops and restarts it
/// (`aLostDatabaseAnswers503AndTheServerRecovers`): tests of other suites share it, the restart
/// has it alone — so on a busy machine no other test meets a server that is down.
actor PostgresServerGate {
    private var sharers = 0
    private var restarting = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquireShared() async {
        while restarting { await wait() }
        sharers += 1
    }

    func releaseShared() {
        sharers -= 1
        wakeAll()
    }

    func acquireExclusive() async {
        while restarting || sharers > 0 { await wait() }
        restarting = true
    }

    func releaseExclusive() {
        restarting = false
        wakeAll()
    }

    private func wait() async { await withCheckedContinuation { waiters.append($0) } }

    private func wakeAll() {
        let woken = waiters
        waiters = []
        for waiter in woken { waiter.resume() }
    }
}

extension PostgresTestServer {
    static let gate = PostgresServerGate()

    /// Runs `body` while the server is not being restarted.
    static func sharing(_ body: () async throws -> Void) async throws {
        await gate.acquireShared()
        do { try await body() } catch {
            await gate.releaseShared()
            throw error
        }
        await gate.releaseShared()
    }

    /// Runs `body` with the server to itself: no test of another suite uses it meanwhile.
    static func alone(_ body: () async throws -> Void) async throws {
        await gate.acquireExclusive()
        do { try await body() } catch {
            await gate.releaseExclusive()
            throw error
        }
        await gate.releaseExclusive()
    }
}

/// A suite or test that uses the shared PostgreSQL server outside `PostgresTests` (whose tests run
/// one at a time, the restart among them): each of its test cases waits out a restart.
struct SharesPostgresServer: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> SharesPostgresServer? { testCase == nil ? nil : self }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await PostgresTestServer.sharing(function)
    }
}

extension Trait where Self == SharesPostgresServer {
    static var sharesPostgresServer: Self { Self() }
}
