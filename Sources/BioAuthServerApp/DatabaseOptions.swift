import ArgumentParser
import BioAuthAttestation
import BioAuthCore
import BioAuthHTTP
import BioAuthPostgres
import BioAuthServer
import BioAuthSQLite
import BioAuthWebhooks
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// Which database, for every subcommand.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help:
            "A file of KEY=value settings named like the environment variables (env BIOAUTH_CONFIG); flags and the environment win over it."
    )
    var configFile: String?
    @Option(help: "SQLite database file, :memory:, or postgres://user[:password]@host[:port]/database (env BIOAUTH_DATABASE).")
    var database: String = env("BIOAUTH_DATABASE") ?? "bioauth.sqlite"
    @Option(
        name: .customLong("database-tls"),
        help:
            "PostgreSQL TLS: disable, prefer, require (= verify-full: chain and host name) (env BIOAUTH_DATABASE_TLS; a URL's sslmode wins). Default: require, prefer for a loopback host."
    )
    var databaseTLSOption: String?
    var databaseTLS: String? { databaseTLSOption ?? env("BIOAUTH_DATABASE_TLS") }
    @Option(name: .customLong("database-pool-size"), help: "Most PostgreSQL connections of this instance (env BIOAUTH_DATABASE_POOL_SIZE).")
    var databasePoolSize: Int = env("BIOAUTH_DATABASE_POOL_SIZE").flatMap(Int.init) ?? 20
    @Flag(
        name: .customLong("no-database-prepared-statements"),
        help:
            "Run every PostgreSQL statement unnamed: for a pooler that cannot keep prepared statements, e.g. PgBouncer in transaction mode before 1.21 (env BIOAUTH_NO_DATABASE_PREPARED_STATEMENTS=1)."
    )
    var noPreparedStatementsFlag = false
    var preparedStatements: Bool { !noPreparedStatementsFlag && env("BIOAUTH_NO_DATABASE_PREPARED_STATEMENTS") != "1" }

    @Option(
        name: .customLong("sqlite-decisions"),
        help:
            "Where SQLite verifies a finishing challenge's signature: before-writer (default: on the request's thread, the rows read twice) or in-writer (in the one writer's transaction; only for a process that shares its cores with other heavy work) (env BIOAUTH_SQLITE_DECISIONS)."
    )
    var sqliteDecisionsOption: String?
    /// `--sqlite-decisions`, nil if its value is neither name.
    var sqliteDecisions: SQLiteStore.Decisions? {
        switch sqliteDecisionsOption ?? env("BIOAUTH_SQLITE_DECISIONS") ?? "before-writer" {
        case "in-writer": .inTheWriter
        case "before-writer": .beforeTheWriter
        default: nil
        }
    }

    /// The PostgreSQL server `--database` names, if it names one.
    var postgres: PostgresStore.Location? { PostgresStore.Location(url: database) }

    /// The database as it may be printed: never the password.
    var described: String { postgres?.description ?? database }

    func validate() throws {
        if case .failure(let error) = ConfigurationFile.loaded { throw ValidationError(error.description) }
        if database.hasPrefix("postgres:") || database.hasPrefix("postgresql:") {
            guard postgres != nil else {
                throw ValidationError(
                    "--database: expected postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]")
            }
        }
        if let databaseTLS, PostgresStore.Options.TLSMode(name: databaseTLS) == nil {
            throw ValidationError("--database-tls must be disable, prefer, require or verify-full")
        }
        guard (1...1_000).contains(databasePoolSize) else { throw ValidationError("--database-pool-size must be 1–1000") }
        guard sqliteDecisions != nil else { throw ValidationError("--sqlite-decisions must be before-writer or in-writer") }
    }

    /// Opens the store (applying pending migrations) for a short-lived command.
    func open(logLevel: Logger.Level, logger: Logger) async throws -> any BioAuthStore {
        if let postgres { return try await PostgresStore.open(postgres, options: postgresOptions, logger: poolLogger(logLevel)) }
        return try await openSQLite(logger: logger)
    }

    /// The store for `serve`: SQLite opened (and migrated) now; PostgreSQL made with its pool
    /// not yet running — the server's group runs it (`pool`) and prepares it before listening.
    func serving(logLevel: Logger.Level, logger: Logger) async throws -> (store: any BioAuthStore, pool: PostgresStore?) {
        guard let postgres else { return (try await openSQLite(logger: logger), nil) }
        let pool = PostgresStore(postgres, options: postgresOptions, logger: poolLogger(logLevel))
        return (pool, pool)
    }

    private func openSQLite(logger: Logger) async throws -> any BioAuthStore {
        let decisions = sqliteDecisions ?? .beforeTheWriter
        if database == ":memory:" { return try SQLiteStore.inMemory(decisions: decisions, logger: logger) }
        return try await SQLiteStore.open(path: database, decisions: decisions, logger: logger)
    }

    private var postgresOptions: PostgresStore.Options {
        PostgresStore.Options(
            tls: databaseTLS.flatMap(PostgresStore.Options.TLSMode.init(name:)), poolSize: databasePoolSize,
            preparedStatements: preparedStatements)
    }

    private func poolLogger(_ level: Logger.Level) -> Logger {
        var logger = Logger(label: "BioAuthPostgres")
        logger.logLevel = max(.notice, level)  // the pool logs each reconnect attempt at info; migrations are notices
        return logger
    }
}
