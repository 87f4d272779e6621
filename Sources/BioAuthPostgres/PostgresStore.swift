import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import _ConnectionPoolModule
import Synchronization

/// A `BioAuthStore` on PostgreSQL, for several `bioauth-server` instances sharing one database.
///
/// Every write method is one transaction on a pooled connection (PostgresNIO's `PostgresClient`).
/// Exactly-once consumption is `DELETE … RETURNING` (under READ COMMITTED a second deleter waits for
/// the first and then finds nothing); counters are single-row upserts; counted caps (pending enrolment
/// requests, the first device) take a transaction-scoped advisory lock on the user.
///
/// Round trips per request (each transaction adds `BEGIN` and `COMMIT`):
///
/// | Request | Statements | Transactions |
/// |---|---|---|
/// | `POST /login/challenge` | one insert into the unlogged `challenges`, made only if the address's counter is below its limit, returning the device's row (`IssueChallengeStatement`; no transaction, no fsync) | 0 |
/// | `POST /login/finish` on the instance that issued the challenge | the signature verified on the rows remembered at the issue (`PostgresIssuedChallenges`); one statement that takes the challenge and writes the session, the device touch, the known address and the audit row (`FinishDeviceLogin`) | 1 (no `BEGIN`/`COMMIT`) |
/// | `POST /login/finish` on another instance | first the challenge read with its device row and the counter, then as above | 1 (no `BEGIN`/`COMMIT`) |
/// | a failed verification | the read as above; in a transaction: delete-returning + device, 1 upsert per subject, 1 audit insert per event | 1 |
/// | bearer-token check | 1 join read | 0 |
///
/// A connection problem, a server shutting down, or no connection within ``Options/operationTimeout``
/// is `StoreError` `unavailable` (HTTP 503); the pool reconnects when the server returns. While
/// a probe finds the server unreachable, requests answer 503 at once (`PostgresReachability`).
///
/// Its connection pool runs as a `Service` in the caller's group: make the store with
/// ``init(_:options:logger:)``, add it to your `ServiceGroup` (or a Hummingbird application's
/// `services`) ahead of what uses it, and call ``prepare()`` before the first request — in
/// Hummingbird's `beforeServerStarts`. ``open(_:options:logger:)`` does all three for a
/// short-lived process (an operator command, a test): the store then runs its own pool until
/// ``close()``.
public final class PostgresStore: BioAuthStore, Service {
    let client: PostgresClient
    /// The pool's task when the store runs it itself (``open(_:options:logger:)``); nil when the
    /// caller's group runs it (``run()``).
    private let runner: Mutex<Task<Void, Never>?> = Mutex(nil)
    private let location: Location
    private let tlsMode: Options.TLSMode
    let logger: Logger
    private let timeout: Duration
    private let reachability: PostgresReachability
    /// ``Options/preparedStatements``.
    let preparedStatements: Bool
    private let closed = Mutex(false)
    /// The login challenges this instance stored, for their logins to skip the read.
    package let issued = PostgresIssuedChallenges()

    /// Any constant: the advisory lock every starting instance takes while it migrates.
    static let migrationLock: Int64 = 0x6269_6f61_7574_68  // "bioauth"

    /// A store whose pool is not running yet: connects to nothing until the caller's group runs
    /// it (``run()``), and is ready for requests after ``prepare()``.
    public init(_ location: Location, options: Options = Options(), logger: Logger = .discarding("BioAuthPostgres")) {
        let mode = location.sslMode ?? options.tls ?? .automatic(for: location.host)
        let tls: PostgresClient.Configuration.TLS =
            switch mode {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password, database: location.database,
            tls: tls)
        configuration.options.maximumConnections = max(1, options.poolSize)
        configuration.options.connectTimeout = options.operationTimeout
        configuration.options.additionalStartupParameters = options.startupParameters
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        reachability = PostgresReachability(logger: logger) {
            try await Self.connectOnce(location, tls: mode, timeout: min(options.operationTimeout, .seconds(2)), logger: logger)
        }
        self.location = location
        tlsMode = mode
        self.logger = logger
        timeout = options.operationTimeout
        preparedStatements = options.preparedStatements
    }

    /// Runs the connection pool until the task is cancelled or the group shuts down gracefully
    /// (a `Service`'s `run()`). Place the store before the services that use it: a group shuts
    /// its services down in reverse order, so the pool ends after the listener has drained.
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.client.run() }
    }

    /// Makes the database ready for requests once the pool runs: one direct connection first (the
    /// pool retries quietly until its timeout, so only this one can say why the database cannot be
    /// used), then the pending migrations (safe when several instances start at once).
    public func prepare() async throws {
        try await Self.probe(location, tls: tlsMode, timeout: timeout, logger: logger)
        try await migrate()
    }

    /// Makes a store that runs its own pool, and prepares it: for a short-lived process (an
    /// operator command, a test). ``close()`` stops the pool. A server runs the pool in its group
    /// instead (``init(_:options:logger:)``).
    public static func open(_ location: Location, options: Options = Options(), logger: Logger = .discarding("BioAuthPostgres"))
        async throws -> PostgresStore
    {
        let store = PostgresStore(location, options: options, logger: logger)
        // Probed before the pool starts: a wrong password or host fails here, with its reason.
        try await probe(location, tls: store.tlsMode, timeout: store.timeout, logger: logger)
        store.runner.withLock { $0 = Task { await store.client.run() } }
        do { try await store.migrate() } catch {
            try? await store.close()
            throw error
        }
        return store
    }

    /// Connects once, outside the pool, and closes: a failure is a ``StoreError`` `unavailable`
    /// whose detail says which (``startFailure(_:at:)``).
    static func probe(_ location: Location, tls mode: Options.TLSMode, timeout: Duration, logger: Logger) async throws {
        do {
            try await connectOnce(location, tls: mode, timeout: timeout, logger: logger)
        } catch {
            throw StoreError(.unavailable, detail: startFailure(error, at: location))
        }
    }

    /// One connection outside the pool, closed again; throws what connecting threw.
    static func connectOnce(_ location: Location, tls mode: Options.TLSMode, timeout: Duration, logger: Logger) async throws {
        let tls: PostgresConnection.Configuration.TLS =
            switch mode {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password, database: location.database,
            tls: tls)
        configuration.options.connectTimeout = .seconds(max(1, timeout.components.seconds))
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        try await connection.close()
    }

    /// Why a connection to `location` failed, for an operator: the SQLSTATE and the server's
    /// message (authentication, a missing database, privileges, too many connections), a TLS
    /// failure, or an unreachable host. Never the password: `location` prints without it.
    static func startFailure(_ error: any Error, at location: Location) -> String {
        guard let error = error as? PSQLError else { return "cannot connect to \(location): \(String(describing: error))" }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? "?"
            let causes = [
                "28P01": "authentication failed", "28000": "the role may not log in, or does not exist",
                "3D000": "the database does not exist",
                "42501": "insufficient privilege", "53300": "too many connections", "57P03": "the server is starting or shutting down",
            ]
            return
                "\(causes[state] ?? "the server refused the connection") at \(location) (SQLSTATE \(state): \(error.serverInfo?[.message] ?? ""))"
        case .sslUnsupported:
            return
                "the server at \(location) offers no TLS and TLS is required (sslmode, --database-tls; disable only on a network you trust)"
        case .failedToAddSSLHandler:
            return "TLS could not start for \(location)"
        case .connectionError:
            let cause = error.underlying.map { String(describing: $0) } ?? "no answer"
            if error.underlying is NIOSSLError || cause.contains("certificate") {
                return "TLS handshake with \(location) failed — the certificate does not verify for this host name or chain: \(cause)"
            }
            return "cannot reach \(location): \(cause)"
        default:
            return "cannot connect to \(location): \(error.code)"
        }
    }

    /// A run-time parameter as this store's connections see it (`SHOW`), for tests and diagnostics.
    package func setting(_ name: String) async throws -> String {
        let rows = try await self.rows(PostgresQuery(unsafeSQL: "SHOW \(name.filter { $0.isLetter || $0 == "_" })"))
        return try rows.first?.decode(String.self) ?? ""
    }

    /// Stops the pool. Idempotent.
    public func close() async throws {
        guard
            closed.withLock({ closed in
                defer { closed = true }; return !closed
            })
        else { return }
        reachability.stop()
        if let runner = runner.withLock({ $0 }) {
            runner.cancel()
            await runner.value
        }
    }

    // MARK: Plumbing

    /// Runs `body` in one transaction, bounded by the operation timeout; classifies failures.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await bounded { try await self.client.withTransaction(logger: self.logger) { connection in try await body(connection) } }
    }

    /// Runs one statement outside a transaction (reads).
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await bounded { try await self.client.query(query, logger: self.logger).collect() }
    }

    /// What a request that waited out ``Options/operationTimeout`` fails with.
    static let timeoutDetail = "postgres timeout"

    /// Runs `body` within the operation timeout, or refuses at once while ``PostgresReachability``
    /// knows the database to be unreachable.
    func bounded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try reachability.admit()
        do {
            return try await withThrowingTaskGroup(of: T.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: self.timeout)
                    throw StoreError(.unavailable, detail: Self.timeoutDetail)
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch {
            reachability.observe(error)
            throw Self.classify(error)
        }
    }

    /// Classifies by SQLSTATE and PostgresNIO's error codes, never by message text.
    static func classify(_ error: any Error) -> any Error {
        if error is StoreError { return error }
        if let transaction = error as? PostgresTransactionError {
            // What failed first decides: BEGIN, the body, or COMMIT.
            if let cause = transaction.beginError ?? transaction.closureError ?? transaction.commitError { return classify(cause) }
            return StoreError(.unavailable, detail: "postgres transaction")
        }
        if error is PostgresDecodingError { return StoreError(.corruptRow, detail: "postgres decoding") }
        if error is CancellationError { return StoreError(.unavailable, detail: "postgres cancelled") }
        // The pool is shut down (after the group's graceful shutdown), the request was cancelled,
        // or no connection could be made for a while: each passes, or is safe to retry.
        if error is ConnectionPoolError { return StoreError(.unavailable, detail: "postgres pool") }
        guard let error = error as? PSQLError else { return error }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            if state == "23505" { return StoreError(.duplicate, detail: "postgres 23505") }
            // 08: connection exception; 57P0x: shutdown or not yet accepting; 53: insufficient
            // resources; 40001/40P01: serialisation failure or deadlock; 55P03: a row lock not had
            // within lock_timeout; 57014: statement_timeout — each safe to retry.
            if state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53")
                || ["40001", "40P01", "55P03", "57014"].contains(state)
            {
                return StoreError(.unavailable, detail: "postgres \(state)")
            }
            return error
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed, .queryCancelled,
            .sslUnsupported,
            .failedToAddSSLHandler:
            return StoreError(.unavailable, detail: "postgres \(error.code)")
        default:
            return error
        }
    }

    // MARK: Plans

    public func apply(_ plan: WritePlan) async throws -> PlanOutcome {
        // A plan that only stores challenges (an unlogged table) needs neither BEGIN and COMMIT
        // nor a durable commit: its guard is read and its insert made in one statement each.
        if let issue = IssueChallengeStatement(plan) {
            let stored = try await bounded { try await self.client.withConnection { c in try await self.run(issue, c).first } }
            guard let stored else { return .refused(plan.guards[0]) }
            issued.remember(issue.challenge, device: try stored.makeRandomAccess().joinedDevice())
            return .applied()
        }
        if plan.isEphemeral { return try await bounded { try await self.client.withConnection { c in try await self.apply(plan, c) } } }
        return try await transaction { c in try await self.apply(plan, c) }
    }

    public func decide<Verdict: Sendable>(
        locking: RowLocks, _ decide: @escaping @Sendable (LockedRows) -> (verdict: Verdict, plan: WritePlan)
    ) async throws -> (verdict: Verdict, outcome: PlanOutcome) {
        try await transaction { c in
            let rows = try await self.lockedRows(locking, c)
            let decision = decide(rows)
            return (decision.verdict, try await self.apply(decision.plan, c))
        }
    }

    // MARK: Users

    public func passwordLoginState(username: UserID?, lockout: LockoutQuery) async throws -> PasswordLoginState {
        try await transaction { c in
            PasswordLoginState(
                user: try await self.first(Reads.user(username), c, UserRecord.init(row:)),
                lockedOut: try await self.isLockedOut(lockout, c),
                knownClient: try await !self.rows(Reads.knownClient(username, lockout.client), c).isEmpty)
        }
    }

    // MARK: Challenges

    public func sweep(windowsBefore: Date, runsBefore: Date, auditBefore: Date, sessionsBefore: Date) async throws -> SweepResult {
        try await transaction { c in
            var result = SweepResult(counters: 0, auditRows: 0, approvals: 0, enrolmentRequests: 0, sessions: 0)
            let deletions = SweepStatements.deletions(
                windowsBefore: windowsBefore, runsBefore: runsBefore, auditBefore: auditBefore, sessionsBefore: sessionsBefore)
            for (delete, counted) in deletions {
                // Counted in the database: a large sweep sends one row, not one per deleted row.
                let deleted = try await self.first("WITH gone AS (\(delete) RETURNING 1) SELECT COUNT(*) AS count FROM gone", c) {
                    try $0.int("count")
                }
                if let counted { result[keyPath: counted] += deleted ?? 0 }
            }
            return result
        }
    }

    public func challenge(id: ChallengeID) async throws -> ChallengeRecord? {
        try await read(Reads.challenge(id)).first.map(ChallengeRecord.init(row:))
    }

    public func deleteChallenges(expiredBefore date: Date) async throws -> Int {
        try await read("WITH gone AS (DELETE FROM challenges WHERE expires_at < \(date) RETURNING 1) SELECT COUNT(*) AS count FROM gone")
            .first?.int("count") ?? 0
    }
}
