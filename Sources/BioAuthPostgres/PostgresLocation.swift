import Foundation

extension PostgresStore {
    /// Connection settings beyond the URL.
    public struct Options: Sendable {
        public enum TLSMode: String, Sendable, CaseIterable {
            /// Plain TCP (loopback or a private network you trust).
            case disable
            /// TLS when the server offers it, plain otherwise.
            case prefer
            /// TLS with full verification — the certificate chain to the system's roots and the
            /// host name (libpq's `verify-full`) — or no connection.
            case require

            /// Also reads libpq's `verify-full`, which is what ``require`` does.
            public init?(name: String) {
                self.init(rawValue: name == "verify-full" ? "require" : name)
            }

            /// The default for `host`: ``require`` unless it is a loopback address or `localhost`
            /// (``prefer`` there) — `prefer` over a network lets anyone in between strip TLS.
            public static func automatic(for host: String) -> TLSMode {
                ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()) || host.hasPrefix("127.") ? .prefer : .require
            }
        }

        /// nil: ``TLSMode/automatic(for:)``, `require` for any host but loopback.
        public var tls: TLSMode?
        /// Most connections this instance opens.
        public var poolSize: Int
        /// Longest wait for a connection or a statement before a request answers 503.
        public var operationTimeout: Duration
        /// The server's own bound on each statement (`statement_timeout`) and on waiting for a row
        /// lock (`lock_timeout`): a statement the client gave up on does not go on holding its
        /// locks. Defaults: the operation timeout, and 2 s. Migrations run without them.
        public var statementTimeout: Duration?
        public var lockTimeout: Duration
        /// Whether the statements every login runs are prepared once per connection (named
        /// prepared statements: PostgreSQL parses and plans them once). On by default; switch it
        /// off behind a pooler that cannot keep them — PgBouncer in transaction mode before 1.21,
        /// or with `max_prepared_statements = 0`.
        public var preparedStatements: Bool

        /// The parameters each connection starts with (`statement_timeout`, `lock_timeout`, in ms).
        public var startupParameters: [(String, String)] {
            func milliseconds(_ duration: Duration) -> String {
                "\(max(1, duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000))"
            }
            return [("statement_timeout", milliseconds(statementTimeout ?? operationTimeout)), ("lock_timeout", milliseconds(lockTimeout))]
        }

        /// nil: ``TLSMode/automatic(for:)`` of the host.
        public init(
            tls: TLSMode? = nil, poolSize: Int = 20, operationTimeout: Duration = .seconds(5), statementTimeout: Duration? = nil,
            lockTimeout: Duration = .seconds(2),
            preparedStatements: Bool = true
        ) {
            self.preparedStatements = preparedStatements
            self.statementTimeout = statementTimeout
            self.lockTimeout = lockTimeout
            self.tls = tls
            self.poolSize = poolSize
            self.operationTimeout = operationTimeout
        }
    }

    /// A `postgres://` URL, parsed. The password never appears in a description.
    public struct Location: Sendable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String?
        public var database: String?
        public var sslMode: Options.TLSMode?

        /// Parses `postgres://user[:password]@host[:port][/database][?sslmode=disable|prefer|require|verify-full]`;
        /// nil for anything else.
        public init?(url text: String) {
            guard let components = URLComponents(string: text), components.scheme == "postgres" || components.scheme == "postgresql",
                let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
            else { return nil }
            self.host = host
            port = components.port ?? 5432
            username = user.removingPercentEncoding ?? user
            password = components.password.map { $0.removingPercentEncoding ?? $0 }
            let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
            database = path.isEmpty ? nil : path
            if let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value {
                guard let parsed = Options.TLSMode(name: mode) else { return nil }
                sslMode = parsed
            }
        }

        public var description: String { "postgres://\(username)@\(host):\(port)/\(database ?? "")" }
    }
}
