import Foundation

/// Whose failures are counted. Every failure counts against the sending address; a wrong password
/// also counts against the user *from that address* and against the user's run of attempts
/// without a success. Signature failures count against nobody else — a forged signature cannot
/// succeed, so counting it against the device or its owner would only let anyone who knows a
/// device id lock the owner out.
public enum FailureSubject: Sendable, Hashable, CustomStringConvertible {
    /// Wrong passwords for this user from this client address, in the current window: a stranger's
    /// guesses from elsewhere never fill the owner's budget (NIST SP 800-63B §5.2.2).
    case password(UserID, client: String)
    /// This user's consecutive password attempts without a success, from every address, across
    /// windows: it slows attempts from addresses the user never signed in from (back-off).
    case passwordRun(UserID)
    case client(String)
    /// Not a failure: the recovery codes sent for this user's requests asked from this client
    /// address in the current day (``RecoveryCodeLimits/perRequesterPerDay``).
    case recoveryCodes(UserID, client: String)
    /// Not a failure: the recovery codes sent for this user from every address in the current day
    /// (``RecoveryCodeLimits/perUserPerDay``): what five addresses with the password can mail the
    /// owner is bounded too.
    case userRecoveryCodes(UserID)
    /// Not a failure: a sign-in code sent to this user for a password login from this client
    /// address, by the hash of the code; the counter's time is when the code expires, and a
    /// login that uses it deletes it (``PasswordAttempt/decide(_:user:limits:now:)``).
    case signInCode(UserID, client: String, code: TokenHash)
    /// Not a failure: an Android attestation challenge issued to this session, by its hash; the
    /// counter's time is when it expires, and the registration finish whose chain carries it
    /// deletes it (one challenge, one enrolment).
    case attestationChallenge(SessionID, challenge: TokenHash)
    /// Not a failure: requests of this client (an IPv4 address or an IPv6 /64) in the current
    /// window, as every instance counted them (``RateLimitPolicy/requestsPerClient``).
    case requests(String)
    /// Failed approval redemptions for one backend key (or anonymous client) and one user,
    /// `‹key id›|‹user id›`, in the current window, across every instance
    /// (``RateLimitPolicy/failedRedemptionsPerUser``).
    case failedRedemptions(String)

    /// The prefix of the ``kind`` of every subject that counts failures (a lockout's reason).
    public static let failureCounterPrefix = "fail:"

    /// The kind of subject, for the audit log.
    public var kind: String {
        switch self {
        case .password: Self.failureCounterPrefix + "password"
        case .passwordRun: Self.failureCounterPrefix + "password-run"
        case .client: Self.failureCounterPrefix + "client"
        case .recoveryCodes, .userRecoveryCodes: "rate:recovery-codes"
        case .signInCode: "code:sign-in"
        case .attestationChallenge: "code:android-attestation"
        case .requests: "rate:requests"
        case .failedRedemptions: "rate:failed-redemptions"
        }
    }

    public var description: String { kind }

    /// The counters a recovery code is charged to: the requester's for the user, and the user's.
    public static func recoveryCodeCounters(_ user: UserID, client: String) -> [FailureSubject] {
        [.recoveryCodes(user, client: client), .userRecoveryCodes(user)]
    }
}

/// The failure limit in force for one request's client address in the current fixed window.
public struct LockoutQuery: Sendable, Hashable {
    public var windowStart: Date
    public var client: String
    public var clientLimit: Int

    public init(windowStart: Date, client: String, clientLimit: Int) {
        self.windowStart = windowStart
        self.client = client
        self.clientLimit = clientLimit
    }

    /// True if the client's count in this window has reached its limit.
    public func isLockedOut(clientCount: Int) -> Bool { clientCount >= clientLimit }
}

/// A failure counter as stored: a window counter's window start, or a run's last attempt.
/// (For a ``FailureSubject/signInCode(_:client:code:)``: when the code expires.)
public struct FailureCounter: Sendable, Hashable {
    public var since: Date
    public var count: Int

    public init(since: Date, count: Int) {
        self.since = since
        self.count = count
    }
}

/// Consecutive password attempts per user without a success, across windows and addresses (NIST
/// SP 800-63B §5.2.2 lockout avoidance): after `threshold` the next attempt from an address the
/// user never signed in from waits `base` × 2^(attempts − threshold), at most `cap`. It slows and
/// never refuses for good: the owner's known addresses are not slowed at all, so a stranger's
/// guesses cannot keep the owner out.
public struct PasswordRunPolicy: Sendable, Hashable {
    public var threshold: Int
    public var base: TimeInterval
    public var cap: TimeInterval

    public init(threshold: Int = 10, base: TimeInterval = 60, cap: TimeInterval = 86_400) {
        self.threshold = threshold
        self.base = base
        self.cap = cap
    }

    /// When the next attempt from an unknown address may come after `count` consecutive attempts,
    /// the last at `last`; nil when it may come now.
    public func nextAttempt(count: Int, last: Date) -> Date? {
        guard count >= threshold else { return nil }
        let delay = min(cap, base * pow(2, Double(min(count - threshold, 30))))
        return last.addingTimeInterval(delay)
    }
}

/// The rows a password attempt is decided on (``RowLocks/passwordAttempt``), read under a
/// per-user lock: parallel guesses cannot all pass the check.
public struct PasswordAttemptRows: Sendable, Hashable {
    public var user: UserRecord?
    /// The client's, the (user, client) and the run counter, where they exist.
    public var counters: [FailureSubject: FailureCounter]
    /// True if the user signed in successfully from this client address before, or the app's
    /// backend vouched for the address (``WritePlan/Mutation/rememberClient(userID:client:at:)``).
    public var knownClient: Bool

    public init(user: UserRecord?, counters: [FailureSubject: FailureCounter], knownClient: Bool) {
        self.user = user
        self.counters = counters
        self.knownClient = knownClient
    }
}

/// The limits a password attempt is decided on.
public struct PasswordAttemptLimits: Sendable, Hashable {
    /// The hash of the sign-in code the attempt carries (``FailureSubject/signInCode(_:client:code:)``), if any.
    public var signInCode: TokenHash?
    /// The window, the sending address and its limit for failures of any kind.
    public var lockout: LockoutQuery
    /// When the window ends: the wait for a window limit.
    public var windowEnd: Date
    /// Wrong passwords for one user from this address per window.
    public var passwordsPerClient: Int
    public var run: PasswordRunPolicy

    public init(lockout: LockoutQuery, windowEnd: Date, passwordsPerClient: Int, run: PasswordRunPolicy, signInCode: TokenHash? = nil) {
        self.signInCode = signInCode
        self.lockout = lockout
        self.windowEnd = windowEnd
        self.passwordsPerClient = passwordsPerClient
        self.run = run
    }
}

/// One password attempt, decided before its slow hash and counted with the check.
public struct PasswordAttempt: Sendable, Hashable {
    public var user: UserRecord?
    /// Refused, nothing counted: the attempt may be repeated then (the real end of the longest wait).
    public var refusedUntil: Date?
    /// Subjects whose limit this attempt reached (audited as lockouts if the attempt fails).
    public var reached: [FailureSubject]
    /// True if the user signed in from this address before (``PasswordAttemptRows/knownClient``),
    /// or the attempt carries a sign-in code sent for this address: the run's back-off does not
    /// apply, and the attempt hashes in the proven lane.
    public var proven: Bool = false
    /// The attempt carried a sign-in code that is wrong, expired or sent for another address: it
    /// was counted like a wrong password, and is answered as one without a hash.
    public var rejectedCode: Bool = false

    public init(user: UserRecord?, refusedUntil: Date?, reached: [FailureSubject], proven: Bool = false, rejectedCode: Bool = false) {
        self.user = user
        self.refusedUntil = refusedUntil
        self.reached = reached
        self.proven = proven
        self.rejectedCode = rejectedCode
    }

    /// The hashing lane the attempt waits in (``PasswordHashLane``): an existing user's proven
    /// attempt first, then an existing user's from elsewhere, then unknown usernames.
    public var lane: PasswordHashLane {
        guard user != nil else { return .anonymous }
        return proven ? .proven : .existingUser
    }

    /// The decision on the rows as read, every store alike: refused while the (user, address)
    /// window limit is reached; while the address's limit is reached — unless the user signed in
    /// from it before or carries a sign-in code sent for it, so that strangers behind one NAT
    /// address or IPv6 prefix never lock its known users out; and — from an address the user never
    /// signed in from, without a matching sign-in code — while the run's back-off runs. Otherwise
    /// counted against the (user, address) window and the run. A sign-in code that does not match
    /// one sent for this user and address, unexpired, skips nothing and rejects the attempt,
    /// counted against the (user, address) window but not the run: made-up codes cannot lengthen
    /// the owner's back-off.
    public static func decide(_ rows: PasswordAttemptRows, user: UserID, limits: PasswordAttemptLimits, now: Date) -> (
        verdict: PasswordAttempt, plan: WritePlan
    ) {
        let (lockout, passwordLimit, run) = (limits.lockout, limits.passwordsPerClient, limits.run)
        let pair = FailureSubject.password(user, client: lockout.client)
        func windowCount(_ subject: FailureSubject) -> Int {
            rows.counters[subject].flatMap { $0.since == lockout.windowStart ? $0.count : nil } ?? 0
        }
        let pairCount = windowCount(pair)
        let runCounter = rows.counters[.passwordRun(user)]
        let code = limits.signInCode.map { FailureSubject.signInCode(user, client: lockout.client, code: $0) }
        let codeAccepted = code.flatMap { rows.counters[$0] }.map { $0.since > now } ?? false
        let proven = rows.knownClient || codeAccepted
        var waits: [Date] = []
        if (!proven && lockout.isLockedOut(clientCount: windowCount(.client(lockout.client)))) || pairCount >= passwordLimit {
            waits.append(limits.windowEnd)
        }
        if !proven, let runCounter, let next = run.nextAttempt(count: runCounter.count, last: runCounter.since), next > now {
            waits.append(next)
        }
        if let until = waits.max() { return (PasswordAttempt(user: rows.user, refusedUntil: until, reached: []), WritePlan()) }
        let rejectedCode = code != nil && !codeAccepted
        let runCount = (runCounter?.count ?? 0) + 1
        var reached: [FailureSubject] = []
        if pairCount + 1 == passwordLimit { reached.append(pair) }
        if runCount == run.threshold && !rejectedCode { reached.append(.passwordRun(user)) }
        var plan = WritePlan()
        plan.add(.setCounter(pair, FailureCounter(since: lockout.windowStart, count: pairCount + 1)))
        if !rejectedCode { plan.add(.setCounter(.passwordRun(user), FailureCounter(since: now, count: runCount))) }
        let verdict = PasswordAttempt(user: rows.user, refusedUntil: nil, reached: reached, proven: proven, rejectedCode: rejectedCode)
        return (verdict, plan)
    }
}

/// What ``BioAuthStore/passwordLoginState(username:lockout:)`` finds.
public struct PasswordLoginState: Sendable, Hashable {
    public var user: UserRecord?
    /// True if the client address's failure limit is reached.
    public var lockedOut: Bool
    /// True if the user signed in from the client address before (``PasswordAttemptRows/knownClient``).
    public var knownClient: Bool

    public init(user: UserRecord?, lockedOut: Bool, knownClient: Bool = false) {
        self.user = user
        self.lockedOut = lockedOut
        self.knownClient = knownClient
    }

    /// The hashing lane an attempt on this state would wait in, without a sign-in code.
    public var lane: PasswordHashLane {
        guard user != nil else { return .anonymous }
        return knownClient ? .proven : .existingUser
    }
}
