import BioAuthCore
import Foundation
import Logging

/// Settings of a BioAuth server. Every value has a secure default.
public struct ServerConfiguration: Sendable, Hashable {
    /// The relying-party id bound into every signed message (your domain).
    public var relyingPartyID: String
    /// Challenge lifetime, checked in code (design §4: 60 s).
    public var challengeTTL: TimeInterval
    /// Lifetime of a session from a device-key login.
    public var sessionTTL: TimeInterval
    /// Lifetime of a session from the primary (password) login.
    public var primarySessionTTL: TimeInterval
    /// Lifetime of a step-up approval.
    public var approvalTTL: TimeInterval
    /// Largest operation description a step-up may approve, in bytes.
    public var maxOperationSize: Int
    /// PBKDF2-HMAC-SHA256 rounds for demo passwords: OWASP's current figure by default. Hashes made
    /// with fewer are replaced at the user's next successful login.
    public var passwordRounds: Int
    /// OWASP's Password Storage Cheat Sheet figure for PBKDF2-HMAC-SHA256 (2023).
    public static let recommendedPasswordRounds = 600_000
    /// Threads that hash passwords and how many password requests may wait for them; beyond that
    /// a password request answers 503 with `Retry-After` (``PasswordHashingPolicy``).
    public var passwordHashing = PasswordHashingPolicy()
    public var rateLimits: RateLimitPolicy
    /// Consecutive password attempts per user across windows and addresses: exponential back-off
    /// for addresses the user never signed in from; never a refusal for good.
    public var passwordRun: PasswordRunPolicy
    /// How long audit rows and password runs are kept.
    public var retention = RetentionPolicy()
    /// Who may enrol a device and what a new device may do at first (``EnrolmentPolicy``).
    public var enrolment = EnrolmentPolicy()
    /// Which App Attest and Android Key Attestation enrolment asks for (``AttestationPolicy``).
    /// Off until the deployment names its apps: then devices enrol unattested and their tokens
    /// claim no hardware key.
    public var attestation = AttestationPolicy()
    /// Access tokens (JWTs) and refresh tokens of device sessions (``TokenPolicy``).
    public var tokens = TokenPolicy()
    /// Sender-constrained tokens (DPoP, RFC 9449; ``DPoPPolicy``): a device that registers a
    /// proof key gets sessions, refresh tokens and access tokens bound to it. Accepted always;
    /// required only when the deployment says so.
    public var dpop = DPoPPolicy()
    /// Passkeys on the same accounts (``PasskeyPolicy``); nil, the default: the passkey
    /// endpoints answer 404.
    public var passkeys: PasskeyPolicy?
    /// Sign-ins started on another screen and approved on an enrolled phone, with number matching
    /// (``CrossDevicePolicy``); nil, the default: the cross-device endpoints answer 404. A new way
    /// in, so a deployment turns it on (`docs/ThreatModel.md`, number phishing and push bombing).
    public var crossDevice: CrossDevicePolicy?
    /// Whether the built-in username-and-password login (`POST /v1/login/password`, and sign-up
    /// where it is allowed) is served. Switch it off when your backend owns every user id (enrolment
    /// grants, ``PrimaryAuthenticator``): then no password exists that a stranger could guess or
    /// create for one of your users. On by default (the demo's accounts).
    public var passwordLogin = true
    /// The prefixes every user id of the app's backend begins with (its enrolment grants and
    /// ``PrimaryAuthenticator`` logins), say `["shop-"]`: sign-up refuses such an id before the
    /// backend ever uses it, and the backend may vouch for, list and revoke only ids that carry
    /// one (and no password account). Empty, the default: the backend's ids are those it has
    /// claimed so far — with sign-up on, a stranger can take one the backend has not used yet
    /// (`docs/ThreatModel.md`).
    public var backendUserIDPrefixes: [String] = []

    /// Whether `id` is in the namespace ``backendUserIDPrefixes`` declares (false when none is declared).
    public func isDeclaredBackendUserID(_ id: UserID) -> Bool {
        backendUserIDPrefixes.contains { !$0.isEmpty && id.rawValue.hasPrefix($0) }
    }
    /// Keys the pseudonyms that stand for usernames in log lines (HMAC-SHA256, 8 bytes): a
    /// username may be a password typed into the wrong field. Random per process by default, so
    /// lines correlate within one instance's run; set one shared key to correlate across instances.
    public var logPseudonymKey: SecretBytes = .random(count: 32)
    /// The events written to the outbox (of ``AuditKind/deliveredEvents``; their audit rows are
    /// written whatever this says). Every delivered kind by default, for an embedding backend that
    /// drains the outbox itself; `BioAuthServerApp.build` given a sink keeps only what the sink
    /// delivers, and `bioauth-server` without a webhook queues nothing — so no login pays for a row
    /// nobody reads. Give every instance of a deployment the same webhook settings: an instance
    /// without them writes no events.
    public var publishedEvents: Set<AuditKind> = AuditKind.deliveredEvents

    public init(
        relyingPartyID: String = "localhost", challengeTTL: TimeInterval = 60,
        sessionTTL: TimeInterval = 12 * 3600, primarySessionTTL: TimeInterval = 15 * 60, approvalTTL: TimeInterval = 300,
        maxOperationSize: Int = 4096, passwordRounds: Int = ServerConfiguration.recommendedPasswordRounds,
        rateLimits: RateLimitPolicy = RateLimitPolicy(),
        passwordRun: PasswordRunPolicy = PasswordRunPolicy()
    ) {
        self.passwordRun = passwordRun
        self.relyingPartyID = relyingPartyID
        self.challengeTTL = challengeTTL
        self.sessionTTL = sessionTTL
        self.primarySessionTTL = primarySessionTTL
        self.approvalTTL = approvalTTL
        self.maxOperationSize = maxOperationSize
        self.passwordRounds = passwordRounds
        self.rateLimits = rateLimits
    }
}

/// Fixed-window limits. Failure counters live in the store, so several instances share them; the
/// request limit is counted by each instance.
public struct RateLimitPolicy: Sendable, Hashable {
    /// Length of a window in seconds.
    public var window: TimeInterval
    /// Wrong passwords for one user from one client address before password login of that user
    /// *from that address* is refused for the rest of the window (NIST SP 800-63B §5.2.2: a
    /// stranger's guesses never use up the owner's budget). Across addresses the user's run slows
    /// guesses instead (``PasswordRunPolicy``). Password failures never lock device-signature login.
    public var passwordFailuresPerClient: Int
    /// Failed guesses (wrong passwords, refused primary logins) per client address before that
    /// address's guesses are refused for the rest of the window. Device proofs are not guesses:
    /// a forged signature counts against nobody and a valid one is never refused for an address's
    /// failures (a device proof counts against nobody).
    public var failuresPerClient: Int
    /// Requests per window per requesting IPv4 address or IPv6 /64 (``RequestInfo/requestSubject``),
    /// counted by each instance: what throttles a sender of forged signatures.
    public var requestsPerClient: Int
    /// Requests per second each backend API key may send, whatever its address, counted by each
    /// instance (a token bucket): a busy shop behind one address never meets the anonymous
    /// per-address limit, and one key's traffic never spends another's. 100 by default.
    public var apiKeyRequestsPerSecond: Double
    /// How many requests an API key may send at once above its rate (200 by default).
    public var apiKeyBurst: Int
    /// Failed approval redemptions per user per window before that user's redemptions are refused
    /// for the rest of the window (10), counted by each instance: one user's junk approvals cannot
    /// spend the budget another user's genuine approval needs.
    public var failedRedemptionsPerUser: Int

    public init(
        window: TimeInterval = 300, passwordFailuresPerClient: Int = 10, failuresPerClient: Int = 30, requestsPerClient: Int = 300,
        apiKeyRequestsPerSecond: Double = 100, apiKeyBurst: Int = 200, failedRedemptionsPerUser: Int = 10
    ) {
        self.window = window
        self.passwordFailuresPerClient = passwordFailuresPerClient
        self.failuresPerClient = failuresPerClient
        self.requestsPerClient = requestsPerClient
        self.apiKeyRequestsPerSecond = apiKeyRequestsPerSecond
        self.apiKeyBurst = apiKeyBurst
        self.failedRedemptionsPerUser = failedRedemptionsPerUser
    }
}

/// One HTTP request's id: sent back as `X-Request-Id`, logged as `request_id`, kept in its audit
/// rows. Opaque text chosen by the server, never by the client.
public struct BioAuthRequestID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A fresh random id.
    public init() { rawValue = UUID().uuidString.lowercased() }

    public var description: String { rawValue }
}

/// Who made a request, for rate limits and the audit log.
public struct RequestInfo: Sendable, Hashable {
    /// The client as guessing budgets count it: an IPv4 address, or an IPv6 /48 (a subscriber
    /// holds many /64s, so counting those would let one guesser rotate identities).
    public var clientAddress: String
    /// The client as the request limit counts it: an IPv4 address, or an IPv6 /64 — the
    /// smallest network a carrier or cloud hands one customer, so neighbours in one /48 never
    /// share a request budget. The client address when not given.
    public var requestSubject: String
    public var requestID: BioAuthRequestID
    /// The API key a backend request presented, once it is verified: every audit row the request
    /// writes names it.
    public var apiKeyID: ApiKeyID?
    /// The request's own logger (the HTTP framework's, with whatever metadata it carries): the
    /// service writes this request's log lines through it, with `request_id` added. Nil: the
    /// service's logger. Not part of the request's identity (equality and hashing ignore it).
    public var logger: Logger?
    /// The request's DPoP proof, with the method and URL it must name; nil when it carried none.
    /// Not part of the request's identity.
    public var dpop: DPoPPresentation?

    public init(
        clientAddress: String = "unknown", requestSubject: String? = nil, requestID: BioAuthRequestID = BioAuthRequestID(),
        apiKeyID: ApiKeyID? = nil, logger: Logger? = nil, dpop: DPoPPresentation? = nil
    ) {
        self.dpop = dpop
        self.clientAddress = clientAddress
        self.requestSubject = requestSubject ?? clientAddress
        self.requestID = requestID
        self.apiKeyID = apiKeyID
        self.logger = logger
    }

    public static func == (lhs: RequestInfo, rhs: RequestInfo) -> Bool {
        (lhs.clientAddress, lhs.requestSubject, lhs.requestID, lhs.apiKeyID) == (
            rhs.clientAddress, rhs.requestSubject, rhs.requestID, rhs.apiKeyID
        )
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(clientAddress)
        hasher.combine(requestSubject)
        hasher.combine(requestID)
        hasher.combine(apiKeyID)
    }
}
