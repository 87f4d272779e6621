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

extension Serve {
    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0–65535") }
        guard challengeTTL > 0, challengeTTL <= 600 else { throw ValidationError("--challenge-ttl must be 1–600 seconds") }
        guard passwordRounds >= ServerConfiguration.recommendedPasswordRounds || (insecurePasswordRounds && passwordRounds >= 1_000) else {
            throw ValidationError(
                "--password-rounds must be at least \(ServerConfiguration.recommendedPasswordRounds) (OWASP's figure for PBKDF2-HMAC-SHA256)"
            )
        }
        for proxy in trustedProxies where IPNetwork(proxy) == nil {
            throw ValidationError("--trusted-proxy: not an address or CIDR range: \(proxy)")
        }
        let usernameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")
        for prefix in backendUserPrefixes where !(1...63).contains(prefix.count) || !prefix.allSatisfy(usernameCharacters.contains) {
            throw ValidationError("--backend-user-prefix: 1–63 letters, digits and . _ @ - (\(prefix))")
        }
        guard passwordHashThreads > 0 else { throw ValidationError("--password-hash-threads must be positive") }
        if let passwordHashQueue, passwordHashQueue < 0 { throw ValidationError("--password-hash-queue must be 0 or more") }
        guard requestsPerClient > 0 else { throw ValidationError("--requests-per-client must be positive") }
        guard apiKeyRate > 0, apiKeyRate.isFinite else { throw ValidationError("--api-key-rate must be a positive number") }
        guard apiKeyBurst > 0 else { throw ValidationError("--api-key-burst must be positive") }
        guard sessionTTL > 0 else { throw ValidationError("--session-ttl must be positive") }
        guard (3600...604_800).contains(lostDeviceDelay) else { throw ValidationError("--lost-device-delay must be 3600–604800 seconds") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level: unknown level \(logLevel)") }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format must be text or json") }
        if let managementPort, !(0...65_535).contains(managementPort) { throw ValidationError("--management-port must be 0–65535") }
        _ = try pseudonymKey()
        guard (60...3_600).contains(accessTokenTTL) else { throw ValidationError("--access-token-ttl must be 60–3600 seconds") }
        for (flag, value) in [("--token-issuer", tokenIssuer), ("--token-audience", tokenAudience), ("--token-client-id", tokenClientID)] {
            if let value, value.isEmpty || value.count > 256 || value.contains(where: { $0.isWhitespace }) {
                throw ValidationError("\(flag) must be 1–256 characters without spaces")
            }
        }
        if let tokenIssuer, tokenIssuer.contains("://"), TokenPolicy.issuerURL(tokenIssuer) == nil {
            throw ValidationError(
                "--token-issuer: a URL issuer is https (or http on loopback) with a host and no query or fragment (RFC 8414)")
        }
        for (flag, url) in [("--webhook-url", webhookURL), ("--recovery-webhook-url", recoveryWebhookURL)] {
            guard let url, !WebhookURLPolicy.isSafe(url, allowingHTTP: insecureHTTPWebhooks) else { continue }
            throw ValidationError(
                "\(flag) must be https (http only to loopback, or with --insecure-http-webhooks): its bodies are events and recovery codes")
        }
        if let recoveryWebhookURL {
            guard recoveryCodeDirectory == nil else {
                throw ValidationError("--recovery-webhook-url and --recovery-code-directory exclude each other: one recovery channel")
            }
            guard let secret = webhookSecret, RecoveryWebhook(url: recoveryWebhookURL, secret: secret) != nil else {
                throw ValidationError(
                    "--recovery-webhook-url must be an http(s) URL, with --webhook-secret (or BIOAUTH_WEBHOOK_SECRET) of at least 32 bytes")
            }
        }
        let optional = Set(AuditKind.optionalEvents.map(\.description))
        for name in webhookEvents where !optional.contains(name) {
            throw ValidationError("--webhook-events: \(name) is not one of \(optional.sorted().joined(separator: ", "))")
        }
        guard (1...64).contains(webhookConcurrency) else { throw ValidationError("--webhook-concurrency must be 1–64") }
        if let webhookURL {
            guard let secret = webhookSecret else {
                throw ValidationError("--webhook-url needs --webhook-secret (or BIOAUTH_WEBHOOK_SECRET)")
            }
            guard WebhookSink(url: webhookURL, secret: secret) != nil else {
                throw ValidationError("--webhook-url must be an http(s) URL and --webhook-secret at least 32 bytes")
            }
        }
    }

    /// A database whose signing keys are all sealed by another key-encryption key — a restored
    /// copy started without its key file — is refused: minting a new key would silently stop
    /// every access token issued before from verifying. `--new-signing-key` starts anyway.
    func refuseSealedByAnotherKey(_ service: BioAuthService, database: DatabaseOptions) async throws {
        guard !newSigningKey else { return }
        let keys = try await service.signingKeys(request: RequestInfo(clientAddress: "bioauth-server"))
        guard !keys.isEmpty, keys.allSatisfy({ $0.state == .unusable }) else { return }
        let sealers = Set(
            keys.map { key in
                if case .sealed(let fingerprint) = key.form { "kek:" + fingerprint } else { "another form" }
            })
        throw ValidationError(
            "none of the database's \(keys.count) signing keys opens with this server's key-encryption key "
                + "(\(service.configuration.tokens.signingKeys), from \(signingKeys.source(for: database))); they are sealed by "
                + sealers.sorted().joined(separator: ", ")
                + ". A new key would stop every access token issued before from verifying. Name the key that sealed them with "
                + "--signing-key-kek-file (`bioauth-server keys where` on the old host names its file), or start with "
                + "--new-signing-key to mint one anyway.")
    }

    /// The log pseudonyms' key from `--log-pseudonym-key-file` or `BIOAUTH_LOG_PSEUDONYM_KEY`; nil: random per process.
    func pseudonymKey() throws -> SecretBytes? {
        try secretKey(file: pseudonymKeyFile, orValue: env("BIOAUTH_LOG_PSEUDONYM_KEY"), name: "the log pseudonym key")
    }

    /// What an operator checks at start: every setting that decides who gets in. Names and
    /// hosts only — never a secret, a password or a key.
    func summary(_ server: ServerConfiguration, _ http: HTTPOptions) -> Logger.Metadata {
        func rule<V>(_ rule: AttestationPolicy.Rule<V>) -> String {
            switch rule {
            case .required: "required"
            case .preferred: "preferred"
            case .off: "off"
            }
        }
        let recovery =
            recoveryWebhookURL.flatMap { URL(string: $0)?.host }.map { "webhook \($0)" }
            ?? (recoveryCodeDirectory == nil ? "none" : "directory")
        return [
            "database": "\(database.described)",
            "database_tls":
                "\(database.postgres.map { $0.sslMode ?? database.databaseTLS.flatMap(PostgresStore.Options.TLSMode.init(name:)) ?? .automatic(for: $0.host) }.map(\.rawValue) ?? "n/a")",
            "relying_party": "\(server.relyingPartyID)", "password_login": "\(server.passwordLogin)", "sign_up": "\(http.allowSignUp)",
            "enrolment_proof": "\(server.enrolment.additionalDevices)", "cool_down_s": "\(Int(server.enrolment.coolDown))",
            "lost_device_delay_s": "\(Int(server.enrolment.lostDeviceDelay))",
            "apple_attestation": "\(rule(server.attestation.apple))", "android_attestation": "\(rule(server.attestation.android))",
            "android_attestation_status": "\(server.attestation.statusLists.first?.source?.description ?? "off")",
            "token_issuer": "\(server.tokens.issuer ?? server.relyingPartyID)",
            "token_audience": "\(server.tokens.audience ?? server.relyingPartyID)",
            "access_token_ttl_s": "\(Int(server.tokens.accessTokenTTL))", "signing_keys": "\(server.tokens.signingKeys)",
            "recovery_channel": "\(recovery)",
            "passkeys":
                "\(server.passkeys.map { "\($0.relyingParty.id), \($0.relyingParty.origins.count) origins\($0.relyingParty.allowsSyncedCredentials ? "" : ", device-bound only")" } ?? "off")",
            "webhook": "\(webhookURL.flatMap { URL(string: $0)?.host } ?? "none")", "trusted_proxies": "\(http.trustedProxies.count)",
            "requests_per_client": "\(server.rateLimits.requestsPerClient)", "password_rounds": "\(server.passwordRounds)",
            "access_log": "\(http.accessLog)", "sign_in_page": "\(http.signInPage)", "cross_device": "\(server.crossDevice != nil)",
            "dpop": "\(server.dpop.required ? "required" : "accepted")\(server.dpop.nonces ? ", nonces" : "")",
            "log_pseudonyms": "\(pseudonymKeyFile != nil || env("BIOAUTH_LOG_PSEUDONYM_KEY") != nil ? "configured key" : "per process")",
        ]
    }
}
