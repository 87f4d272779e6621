import Foundation

/// `--config FILE` (or `BIOAUTH_CONFIG`): settings in a file, as `KEY=value` lines named like the
/// environment variables (`BIOAUTH_DATABASE=…`, `LOG_LEVEL=info`); `#` starts a comment, blank
/// lines are skipped, a value may be quoted. A flag wins over the environment, the environment
/// over the file. A key the server does not know stops the start, so a typo is not silently
/// ignored. Read once, before the arguments are parsed (the flags' defaults consult it).
enum ConfigurationFile {
    /// The file's settings, or why it could not be read.
    static let loaded: Result<[String: String], ConfigurationError> = load(
        arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment)

    static var values: [String: String] { (try? loaded.get()) ?? [:] }

    /// Every setting a file may hold: the environment variables `bioauth-server` reads
    /// (`ConfigurationFileTests` holds this list to the sources).
    static let knownKeys: Set<String> = [
        "BIOAUTH_ACCESS_LOG", "BIOAUTH_ACCESS_TOKEN_TTL", "BIOAUTH_ALLOW_SIGN_UP", "BIOAUTH_CROSS_DEVICE_SIGN_IN", "BIOAUTH_DPOP_REQUIRED",
        "BIOAUTH_DPOP_NONCES", "BIOAUTH_DPOP_NONCE_KEY",
        "BIOAUTH_PUBLIC_ORIGIN", "BIOAUTH_API_KEY_BURST",
        "BIOAUTH_API_KEY_RATE",
        "BIOAUTH_BACKEND_USER_PREFIXES", "BIOAUTH_ANDROID_ATTESTATION", "BIOAUTH_ANDROID_PACKAGES", "BIOAUTH_ANDROID_SIGNING_DIGESTS",
        "BIOAUTH_APPLE_APP_IDS", "BIOAUTH_PASSKEYS_DEVICE_BOUND_ONLY", "BIOAUTH_PASSKEY_ORIGINS", "BIOAUTH_PASSKEY_RP_ID",
        "BIOAUTH_PASSKEY_RP_NAME", "BIOAUTH_SIGN_IN_PAGE",
        "BIOAUTH_ANDROID_ATTESTATION_STATUS",
        "BIOAUTH_ANDROID_ATTESTATION_STATUS_MAX_AGE",
        "BIOAUTH_APPLE_ATTESTATION",
        "BIOAUTH_APP_ATTEST_ASSERTIONS", "BIOAUTH_APP_ATTEST_DEVELOPMENT", "BIOAUTH_CHALLENGE_TTL", "BIOAUTH_DATABASE",
        "BIOAUTH_DATABASE_POOL_SIZE",
        "BIOAUTH_DATABASE_TLS", "BIOAUTH_HOST", "BIOAUTH_INSECURE_HTTP_WEBHOOKS", "BIOAUTH_LOG_FORMAT", "BIOAUTH_LOG_PSEUDONYM_KEY",
        "BIOAUTH_LOST_DEVICE_DELAY", "BIOAUTH_MANAGEMENT_HOST",
        "BIOAUTH_MANAGEMENT_PORT",
        "BIOAUTH_NO_DATABASE_PREPARED_STATEMENTS", "BIOAUTH_NO_PASSWORD_LOGIN", "BIOAUTH_PASSWORD_HASH_QUEUE",
        "BIOAUTH_PASSWORD_HASH_THREADS", "BIOAUTH_PASSWORD_ROUNDS", "BIOAUTH_PORT",
        "BIOAUTH_PUBLIC_METRICS",
        "BIOAUTH_RECOVERY_CODE_DIRECTORY", "BIOAUTH_RECOVERY_WEBHOOK_URL", "BIOAUTH_RELYING_PARTY", "BIOAUTH_REQUESTS_PER_CLIENT",
        "BIOAUTH_SESSION_TTL",
        "BIOAUTH_SIGNING_KEY_KEK", "BIOAUTH_SIGNING_KEY_KEK_FILE", "BIOAUTH_SQLITE_DECISIONS", "BIOAUTH_TOKEN_AUDIENCE",
        "BIOAUTH_TOKEN_CLIENT_ID", "BIOAUTH_TOKEN_ISSUER",
        "BIOAUTH_TRUSTED_PROXIES", "BIOAUTH_WEBHOOK_CONCURRENCY", "BIOAUTH_WEBHOOK_EVENTS", "BIOAUTH_WEBHOOK_SECRET", "BIOAUTH_WEBHOOK_URL",
        "LOG_LEVEL",
    ]

    /// The settings that are secrets: a file holding one should be readable by its owner only.
    static let secretKeys: Set<String> = [
        "BIOAUTH_SIGNING_KEY_KEK", "BIOAUTH_WEBHOOK_SECRET", "BIOAUTH_LOG_PSEUDONYM_KEY", "BIOAUTH_DATABASE",
    ]

    struct ConfigurationError: Error, CustomStringConvertible {
        let description: String
    }

    /// The path from `--config PATH`, `--config=PATH` or `BIOAUTH_CONFIG`; nil without one.
    static func path(arguments: [String], environment: [String: String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "--config", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return environment["BIOAUTH_CONFIG"]
    }

    static func load(arguments: [String], environment: [String: String]) -> Result<[String: String], ConfigurationError> {
        guard let path = path(arguments: arguments, environment: environment) else { return .success([:]) }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return .failure(ConfigurationError(description: "cannot read the configuration file \(path)"))
        }
        return parse(text, path: path)
    }

    static func parse(_ text: String, path: String) -> Result<[String: String], ConfigurationError> {
        var values: [String: String] = [:]
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                return .failure(ConfigurationError(description: "\(path):\(number + 1): expected KEY=value"))
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            guard knownKeys.contains(key) else {
                return .failure(
                    ConfigurationError(
                        description: "\(path):\(number + 1): unknown setting \(key) (the environment variables' names: BIOAUTH_…)"))
            }
            values[key] = value
        }
        return .success(values)
    }
}
