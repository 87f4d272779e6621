import Foundation

extension PostgresStore {
    /// Connection settings beyond the URL.
    public struct Options: Sendable {
        public enum TLSMode: String, Sendable, CaseIterable {
            /// Plain TCP (loopback or a private network you trust).
            case disable
            /// TLS when the server offers it, plain otherwise.
            case prefer
            /// TLS with certificate verification, or no connection.
            case require
        }

        public var tls: TLSMode
        /// Most connections this instance opens.
        public var poolSize: Int
        /// Longest wait for a connection or a statement before a request answers 503.
        public var operationTimeout: Duration

        public init(tls: TLSMode = .prefer, poolSize: Int = 20, operationTimeout: Duration = .seconds(5)) {
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

        /// Parses `postgres://user[:password]@host[:port][/database][?sslmode=disable|prefer|require]`;
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
                guard let parsed = Options.TLSMode(rawValue: mode) else { return nil }
                sslMode = parsed
            }
        }

        public var description: String { "postgres://\(username)@\(host):\(port)/\(database ?? "")" }
    }
}
