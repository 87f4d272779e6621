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

/// `bioauth-server`: the BioAuth HTTP server (`serve`, the default) and the administration of
/// the backend API's keys (`api-key`).
@main
struct BioAuthServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bioauth-server",
        abstract: "Verifies device-key signatures: enrolment, login, step-up, sessions.",
        version: BioAuthVersion.current,
        subcommands: [Serve.self, ApiKeyCommand.self, KeysCommand.self, WebhooksCommand.self], defaultSubcommand: Serve.self)
}

/// `bioauth-server serve` (the default): with no flags, 127.0.0.1:8080 and `bioauth.sqlite` in
/// the working directory. Each flag also reads an environment variable. Stops gracefully on
/// SIGTERM and SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP server (the default subcommand).")

    @Option(help: "Address to bind (env BIOAUTH_HOST).")
    var host: String = env("BIOAUTH_HOST") ?? "127.0.0.1"
    @Option(help: "Port (env BIOAUTH_PORT; 0 picks a free one).")
    var port: Int = env("BIOAUTH_PORT").flatMap(Int.init) ?? 8080
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var attestation: AttestationOptions
    @OptionGroup var passkeys: PasskeyOptions
    @OptionGroup var dpop: DPoPOptions
    @OptionGroup var signingKeys: SigningKeyOptions
    @Option(name: .customLong("relying-party"), help: "Relying-party id bound into signatures (env BIOAUTH_RELYING_PARTY).")
    var relyingParty: String = env("BIOAUTH_RELYING_PARTY") ?? "localhost"
    @Option(name: .customLong("challenge-ttl"), help: "Challenge lifetime in seconds (env BIOAUTH_CHALLENGE_TTL).")
    var challengeTTL: Int = env("BIOAUTH_CHALLENGE_TTL").flatMap(Int.init) ?? 60
    @Option(name: .customLong("session-ttl"), help: "Device-login session lifetime in seconds (env BIOAUTH_SESSION_TTL).")
    var sessionTTL: Int = env("BIOAUTH_SESSION_TTL").flatMap(Int.init) ?? 43_200
    @Option(
        name: .customLong("lost-device-delay"),
        help:
            "Seconds between the recovery code that confirms a device's removal without another device and the removal, 3600–604800 (env BIOAUTH_LOST_DEVICE_DELAY; default 86400): the owner's devices may cancel it meanwhile."
    )
    var lostDeviceDelay: Int = env("BIOAUTH_LOST_DEVICE_DELAY").flatMap(Int.init) ?? 86_400
    @Flag(
        name: .customLong("trust-forwarded-for"),
        help: "Shorthand for --trusted-proxy 127.0.0.0/8 --trusted-proxy ::1 (a reverse proxy on this host).")
    var trustForwardedFor = false
    @Option(
        name: .customLong("trusted-proxy"),
        help:
            "A reverse proxy's address or CIDR range; repeatable (env BIOAUTH_TRUSTED_PROXIES, comma-separated). The client is the rightmost X-Forwarded-For address not in these."
    )
    var trustedProxies: [String] =
        env("BIOAUTH_TRUSTED_PROXIES")?.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } ?? []
    @Flag(
        name: .customLong("allow-sign-up"),
        help:
            "Enable POST /v1/users, the demo accounts' open sign-up (env BIOAUTH_ALLOW_SIGN_UP=1). Off by default: it reveals which usernames exist."
    )
    var allowSignUp = false
    @Flag(
        name: .customLong("no-password-login"),
        help:
            "Switch the built-in password login and sign-up off (env BIOAUTH_NO_PASSWORD_LOGIN=1): for a deployment whose backend owns every user id (enrolment grants)."
    )
    var noPasswordLogin = false
    @Option(
        name: .customLong("backend-user-prefix"),
        help: """
            A prefix every user id of your backend begins with (say shop-); repeatable (env BIOAUTH_BACKEND_USER_PREFIXES, comma-separated). \
            Sign-up refuses such ids before your backend uses them; the backend API acts only on them.
            """)
    var backendUserPrefixes: [String] =
        env("BIOAUTH_BACKEND_USER_PREFIXES")?.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } ?? []
    @Option(
        name: .customLong("password-rounds"),
        help: "PBKDF2-HMAC-SHA256 rounds for demo passwords, at least 600000 (env BIOAUTH_PASSWORD_ROUNDS).")
    var passwordRounds: Int = env("BIOAUTH_PASSWORD_ROUNDS").flatMap(Int.init) ?? ServerConfiguration.recommendedPasswordRounds
    @Flag(
        name: .customLong("insecure-password-rounds-for-tests"),
        help: "Allow --password-rounds below 600000 (test suites only: makes offline guessing of a stolen database cheap).")
    var insecurePasswordRounds = false
    @Option(
        name: .customLong("password-hash-threads"),
        help:
            "Threads that hash passwords, apart from the ones serving requests (env BIOAUTH_PASSWORD_HASH_THREADS; default half the cores, at least 1)."
    )
    var passwordHashThreads: Int = env("BIOAUTH_PASSWORD_HASH_THREADS").flatMap(Int.init) ?? PasswordHashingPolicy().threads
    @Option(
        name: .customLong("password-hash-queue"),
        help:
            "Password requests of one lane (proven, existing user; the anonymous lane has a quarter) that may wait for a hashing thread; more answer 503 with Retry-After (env BIOAUTH_PASSWORD_HASH_QUEUE; default 8 per thread)."
    )
    var passwordHashQueueOption: Int?
    var passwordHashQueue: Int? { passwordHashQueueOption ?? env("BIOAUTH_PASSWORD_HASH_QUEUE").flatMap(Int.init) }
    @Option(
        name: .customLong("requests-per-client"),
        help:
            "Requests per IPv4 address or IPv6 /64 per 5-minute window, shared by every instance through the database (plus (N - 1) x a twentieth of it); API-key calls are not counted (env BIOAUTH_REQUESTS_PER_CLIENT)."
    )
    var requestsPerClient: Int = env("BIOAUTH_REQUESTS_PER_CLIENT").flatMap(Int.init) ?? RateLimitPolicy().requestsPerClient
    @Option(
        name: .customLong("api-key-rate"),
        help: "Requests per second each backend API key may send, counted by this instance (env BIOAUTH_API_KEY_RATE; 100).")
    var apiKeyRate: Double = env("BIOAUTH_API_KEY_RATE").flatMap(Double.init) ?? RateLimitPolicy().apiKeyRequestsPerSecond
    @Option(
        name: .customLong("api-key-burst"), help: "Requests an API key may send at once above its rate (env BIOAUTH_API_KEY_BURST; 200).")
    var apiKeyBurst: Int = env("BIOAUTH_API_KEY_BURST").flatMap(Int.init) ?? RateLimitPolicy().apiKeyBurst
    @Option(
        name: .customLong("recovery-code-directory"),
        help:
            "Demo recovery channel: write each enrolment recovery code to a file in this directory, as an e-mail would arrive (env BIOAUTH_RECOVERY_CODE_DIRECTORY). Without it, only another device's approval adds a device."
    )
    var recoveryCodeDirectoryOption: String?
    var recoveryCodeDirectory: String? { recoveryCodeDirectoryOption ?? env("BIOAUTH_RECOVERY_CODE_DIRECTORY") }
    @Option(
        name: .customLong("recovery-webhook-url"),
        help:
            "Recovery channel of a backend that sends its own e-mail or SMS: POST each enrolment recovery code to this URL, signed with --webhook-secret (env BIOAUTH_RECOVERY_WEBHOOK_URL). The body holds the code: use https."
    )
    var recoveryWebhookURLOption: String?
    var recoveryWebhookURL: String? { recoveryWebhookURLOption ?? env("BIOAUTH_RECOVERY_WEBHOOK_URL") }
    @Option(
        name: .customLong("webhook-url"),
        help:
            "Post each event (device enrolled, key replaced, device revoked, lockout, device login) to this URL, signed; retried until delivered (env BIOAUTH_WEBHOOK_URL)."
    )
    var webhookURLOption: String?
    var webhookURL: String? { webhookURLOption ?? env("BIOAUTH_WEBHOOK_URL") }
    @Flag(
        name: .customLong("insecure-http-webhooks"),
        help:
            "Allow plain-http webhook URLs to hosts other than loopback (env BIOAUTH_INSECURE_HTTP_WEBHOOKS=1): anyone on the path reads the events and the recovery codes."
    )
    var insecureHTTPWebhooksFlag = false
    var insecureHTTPWebhooks: Bool { insecureHTTPWebhooksFlag || env("BIOAUTH_INSECURE_HTTP_WEBHOOKS") == "1" }

    @Option(
        name: .customLong("webhook-events"),
        help:
            "Also deliver these events, comma-separated: login.succeeded (every device login), lockout (anyone can cause one from an address of their own) (env BIOAUTH_WEBHOOK_EVENTS). Device enrolled, re-keyed and revoked are always delivered."
    )
    var webhookEventsOption: String?
    var webhookEvents: [String] {
        (webhookEventsOption ?? env("BIOAUTH_WEBHOOK_EVENTS") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }
    @Option(
        name: .customLong("webhook-concurrency"),
        help: "Users whose events are delivered at once, each user's in order (env BIOAUTH_WEBHOOK_CONCURRENCY; default 8).")
    var webhookConcurrency: Int = env("BIOAUTH_WEBHOOK_CONCURRENCY").flatMap(Int.init) ?? 8
    @Option(
        name: .customLong("webhook-secret"),
        help: "The webhooks' HMAC-SHA256 key, at least 32 bytes (env BIOAUTH_WEBHOOK_SECRET; prefer the variable: arguments show in ps).")
    var webhookSecretOption: String?
    var webhookSecret: String? { webhookSecretOption ?? env("BIOAUTH_WEBHOOK_SECRET") }
    @Option(
        name: .customLong("token-issuer"),
        help:
            "Access tokens' iss: this server's public https URL, which /.well-known/openid-configuration then describes (env BIOAUTH_TOKEN_ISSUER; default the relying-party id)."
    )
    var tokenIssuerOption: String?
    var tokenIssuer: String? { tokenIssuerOption ?? env("BIOAUTH_TOKEN_ISSUER") }
    @Option(
        name: .customLong("token-audience"),
        help: "Access tokens' aud: your services' identifier (env BIOAUTH_TOKEN_AUDIENCE; default the relying-party id).")
    var tokenAudienceOption: String?
    var tokenAudience: String? { tokenAudienceOption ?? env("BIOAUTH_TOKEN_AUDIENCE") }
    @Option(
        name: .customLong("token-client-id"),
        help: "Access tokens' client_id (RFC 9068): your app (env BIOAUTH_TOKEN_CLIENT_ID; default the relying-party id).")
    var tokenClientIDOption: String?
    var tokenClientID: String? { tokenClientIDOption ?? env("BIOAUTH_TOKEN_CLIENT_ID") }
    @Option(
        name: .customLong("access-token-ttl"),
        help: "Access-token lifetime in seconds, 60–3600 (env BIOAUTH_ACCESS_TOKEN_TTL; default 300).")
    var accessTokenTTL: Int = env("BIOAUTH_ACCESS_TOKEN_TTL").flatMap(Int.init) ?? 300
    @Option(
        name: .customLong("management-port"),
        help:
            "Port of the management listener, which serves /metrics and the health probes (env BIOAUTH_MANAGEMENT_PORT; default 9464; 0 picks a free one). The public listener serves no /metrics."
    )
    var managementPortOption: Int?
    var managementPort: Int? {
        if let port = managementPortOption ?? env("BIOAUTH_MANAGEMENT_PORT").flatMap(Int.init) { return port }
        return publicMetrics ? nil : Self.defaultManagementPort
    }
    static let defaultManagementPort = 9464
    @Flag(
        name: .customLong("public-metrics"),
        help:
            "Serve /metrics on the public listener, and no management listener unless --management-port names one (env BIOAUTH_PUBLIC_METRICS=1): anyone who reaches the API then reads its traffic, failures and lockouts."
    )
    var publicMetricsFlag = false
    var publicMetrics: Bool { publicMetricsFlag || env("BIOAUTH_PUBLIC_METRICS") == "1" }
    @Flag(
        name: .customLong("new-signing-key"),
        help:
            "Start even when no stored signing key opens with the key-encryption key (a restored copy without its key file): a new key is minted and tokens issued before stop verifying."
    )
    var newSigningKey = false

    @Option(name: .customLong("management-host"), help: "Address of the management listener (env BIOAUTH_MANAGEMENT_HOST).")
    var managementHost: String = env("BIOAUTH_MANAGEMENT_HOST") ?? "127.0.0.1"
    @Option(
        name: .customLong("log-format"),
        help: "text (swift-log's lines) or json (one object per line, for log pipelines) (env BIOAUTH_LOG_FORMAT).")
    var logFormatOption: String?
    var logFormat: String { logFormatOption ?? env("BIOAUTH_LOG_FORMAT") ?? "text" }
    @Flag(
        name: .customLong("access-log"),
        help: "Log one line per request: method, route pattern, status, duration, request id, client (env BIOAUTH_ACCESS_LOG=1).")
    var accessLogFlag = false
    var accessLog: Bool { accessLogFlag || env("BIOAUTH_ACCESS_LOG") == "1" }
    @Option(
        name: .customLong("log-pseudonym-key-file"),
        help:
            "A file holding the key (at least 32 bytes, base64) of the pseudonyms that stand for user ids in log lines; the same on every instance makes them correlate across instances and restarts (env BIOAUTH_LOG_PSEUDONYM_KEY holds the key itself). Default: random per process."
    )
    var pseudonymKeyFile: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error (env LOG_LEVEL).")
    var logLevel: String = env("LOG_LEVEL") ?? "info"

    /// The recovery channel the flags name: the backend's webhook, the demo directory, or none.
    var recoveryChannel: (any RecoveryChannel)? {
        if let recoveryWebhookURL, let secret = webhookSecret { return RecoveryWebhook(url: recoveryWebhookURL, secret: secret) }
        return recoveryCodeDirectory.map { DirectoryRecoveryChannel(directory: URL(fileURLWithPath: $0)) }
    }

    func run() async throws {
        // Logs go to stderr; stdout carries only the "listening on" line scripts wait for.
        if logFormat == "json" {
            LoggingSystem.bootstrap(JSONLogHandler.init(label:))
        } else {
            LoggingSystem.bootstrap(StreamLogHandler.standardError)
        }
        var serverConfiguration = ServerConfiguration(
            relyingPartyID: relyingParty, challengeTTL: TimeInterval(challengeTTL), sessionTTL: TimeInterval(sessionTTL),
            passwordRounds: passwordRounds,
            rateLimits: RateLimitPolicy(requestsPerClient: requestsPerClient, apiKeyRequestsPerSecond: apiKeyRate, apiKeyBurst: apiKeyBurst)
        )
        serverConfiguration.passwordHashing = PasswordHashingPolicy(threads: passwordHashThreads, queueLimit: passwordHashQueue)
        serverConfiguration.passwordLogin = !(noPasswordLogin || env("BIOAUTH_NO_PASSWORD_LOGIN") == "1")
        serverConfiguration.enrolment.lostDeviceDelay = TimeInterval(lostDeviceDelay)
        serverConfiguration.backendUserIDPrefixes = backendUserPrefixes
        serverConfiguration.attestation = try attestation.policy()
        serverConfiguration.passkeys = passkeys.policy()
        serverConfiguration.dpop = try dpop.policy()
        serverConfiguration.crossDevice = passkeys.crossDevice ? CrossDevicePolicy() : nil
        serverConfiguration.tokens = TokenPolicy(
            issuer: tokenIssuer, audience: tokenAudience, clientID: tokenClientID, accessTokenTTL: TimeInterval(accessTokenTTL))
        serverConfiguration.tokens.signingKeys = try signingKeys.protection(for: database)
        if let key = try pseudonymKey() { serverConfiguration.logPseudonymKey = key }
        // No webhook, nobody to deliver to: no event is queued (the audit log has them all).
        if webhookURL == nil { serverConfiguration.publishedEvents = [] }
        var http = HTTPOptions(
            trustedProxies: trustedProxies.compactMap(IPNetwork.init) + (trustForwardedFor ? HTTPOptions.loopbackProxies : []),
            allowSignUp: allowSignUp || env("BIOAUTH_ALLOW_SIGN_UP") == "1")
        http.accessLog = accessLog
        http.publicMetrics = publicMetrics
        http.signInPage = passkeys.signInPage
        let configuration = ServerAppConfiguration(
            host: host, port: port, server: serverConfiguration, http: http,
            logLevel: Logger.Level(rawValue: logLevel) ?? .info)
        var logger = Logger(label: "bioauth-server")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        logger.info("bioauth-server \(BioAuthVersion.current): the policy in force", metadata: summary(serverConfiguration, http))
        logger.notice(
            "signing keys sealed by \(serverConfiguration.tokens.signingKeys)", metadata: ["kek": "\(signingKeys.source(for: database))"])
        if let path = ConfigurationFile.path(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment),
            !ConfigurationFile.secretKeys.isDisjoint(with: ConfigurationFile.values.keys),
            let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int, mode & 0o077 != 0
        {
            logger.warning("the configuration file holds secrets and others may read it: chmod 600", metadata: ["file": "\(path)"])
        }
        if serverConfiguration.tokens.signingKeys == .plaintextInDatabase {
            logger.warning(
                "access-token signing keys are stored unsealed (--insecure-plaintext-signing-keys): a copy of the database mints tokens")
        } else if let beside = signingKeys.kekBesideDatabase(database) {
            logger.warning(
                "the key-encryption key lies beside the database: a copy of that directory opens the signing keys. Move it elsewhere and name it with --signing-key-kek-file",
                metadata: ["file": "\(beside)"])
        } else {
            logger.info("access-token signing keys sealed", metadata: ["by": "\(serverConfiguration.tokens.signingKeys)"])
        }
        for option in attestation.insecureRoots {
            logger.warning(
                "\(option): attestations are checked against a test root, not the platform's: whoever holds its key attests anything")
        }
        if serverConfiguration.attestation.acceptsUnattested {
            logger.warning(
                "enrolment accepts devices without attestation: a software key from any client can enrol (its tokens say amr pop, acr unattested-key); name your apps with --apple-app-id / --android-package"
            )
        }
        // A status list in a file is read before the first request, so it is in force from it. A URL
        // is fetched by the refresher as the server starts: an unreachable source (up to a 30 s
        // timeout) never delays serving logins; until it answers, Android enrolments get 503.
        for status in serverConfiguration.attestation.statusLists {
            guard case .file? = status.source else { continue }
            do { try await status.refresh(now: Date()) } catch {
                logger.warning(
                    "attestation status list not read: Android enrolments are refused until it is", metadata: ["why": "\(error)"])
            }
        }
        let (store, pool) = try await database.serving(logLevel: Logger.Level(rawValue: logLevel) ?? .info, logger: logger)
        let described = database.described
        let server = BioAuthServerApp.build(
            configuration, store: store, logger: logger,
            recoveryChannel: recoveryChannel,
            eventSink: webhookURL.flatMap { url in webhookSecret.flatMap { WebhookSink(url: url, secret: $0) } },
            delivery: DeliveryPolicy(
                concurrency: webhookConcurrency,
                optionalEvents: Set(AuditKind.optionalEvents.filter { webhookEvents.contains($0.description) })))
        try ListenerPorts.requireFree(host: configuration.host, port: configuration.port, listener: "API listener", flag: "--port")
        if let managementPort {
            try ListenerPorts.requireFree(
                host: managementHost, port: managementPort, listener: "management listener (metrics, health)", flag: "--management-port")
        }
        // PostgreSQL's pool runs in the application's group, and the database is prepared (probed,
        // migrated) before the listener accepts a request.
        let app = server.application(
            configuration, services: pool.map { [$0] } ?? [],
            onRunning: { [described] port in
                FileHandle.standardOutput.write(
                    Data("bioauth-server listening on http://\(configuration.host):\(port) (database: \(described))\n".utf8))
            },
            beforeServerStarts: {
                try await pool?.prepare()
                // Once the database answers (PostgreSQL's pool runs in this group): a restored copy
                // without its key-encryption key stops here, before a token is minted.
                try await refuseSealedByAnotherKey(server.service, database: database)
            })
        if let managementPort {
            let management = server.managementApplication(host: managementHost, port: managementPort) { [logger, managementHost] port in
                logger.notice("management listener (metrics, health)", metadata: ["address": "\(managementHost):\(port)"])
            }
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: app), .init(service: management)], gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            try await group.run()
        } else {
            try await app.runService()
        }
        logger.notice("shutting down: requests drained, closing the database")
        try await server.shutdown()
        logger.notice("stopped")
    }
}
