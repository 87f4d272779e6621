import Foundation

/// Whose failures are counted: one counter per factor. Wrong passwords count against the user;
/// every failure counts against the sending address. Signature failures count against nobody
/// else — a forged signature cannot succeed, so counting it against the device or its owner would
/// only let anyone who knows a device id lock the owner out.
public enum FailureSubject: Sendable, Hashable, CustomStringConvertible {
    /// Wrong passwords for this user, from any address, in the current window.
    case password(UserID)
    /// This user's consecutive password attempts without a success, across windows.
    case passwordRun(UserID)
    case client(String)

    /// The kind of subject, for the audit log.
    public var kind: String {
        switch self {
        case .password: "fail:password"
        case .passwordRun: "fail:password-run"
        case .client: "fail:client"
        }
    }

    public var description: String { kind }
}

/// Failure limits in force for one request: the current fixed window and each subject's limit.
public struct LockoutQuery: Sendable, Hashable {
    public var windowStart: Date
    public var client: String
    public var clientLimit: Int
    /// Wrong passwords per user; nil when the request proves another factor (a signature), whose
    /// failures are counted per address only.
    public var passwordLimit: Int?

    public init(windowStart: Date, client: String, clientLimit: Int, passwordLimit: Int?) {
        self.windowStart = windowStart
        self.client = client
        self.clientLimit = clientLimit
        self.passwordLimit = passwordLimit
    }

    /// The subjects a request about `user` is counted against, with their limits.
    public func subjects(user: UserID?) -> [(subject: FailureSubject, limit: Int)] {
        var subjects: [(FailureSubject, Int)] = [(.client(client), clientLimit)]
        if let user, let passwordLimit { subjects.append((.password(user), passwordLimit)) }
        return subjects
    }

    /// True if any count has reached its subject's limit.
    public func isLockedOut(_ counts: [FailureSubject: Int], user: UserID?) -> Bool {
        subjects(user: user).contains { (counts[$0.subject] ?? 0) >= $0.limit }
    }
}

/// Consecutive password failures per user, across windows (NIST SP 800-63B §5.2.2): after
/// `threshold` the next attempt waits `base` × 2^(failures − threshold), at most `cap`; after
/// `maximum` password login stays refused for that user (device login is untouched).
public struct PasswordRunPolicy: Sendable, Hashable {
    public var threshold: Int
    public var base: TimeInterval
    public var cap: TimeInterval
    public var maximum: Int

    public init(threshold: Int = 10, base: TimeInterval = 60, cap: TimeInterval = 86_400, maximum: Int = 100) {
        self.threshold = threshold
        self.base = base
        self.cap = cap
        self.maximum = min(maximum, 100)
    }

    /// When the next attempt may come after `count` consecutive attempts, the last at `last`;
    /// nil when it may come now. `.distantFuture` once `maximum` is reached.
    public func nextAttempt(count: Int, last: Date) -> Date? {
        if count >= maximum { return .distantFuture }
        guard count >= threshold else { return nil }
        let delay = min(cap, base * pow(2, Double(min(count - threshold, 30))))
        return last.addingTimeInterval(delay)
    }

    /// The decision of ``BioAuthStore/beginPasswordAttempt(username:lockout:run:now:)`` from the
    /// counters as stored: every store calls this, so they cannot disagree.
    public func decide(
        lockout: LockoutQuery, user: UserID, now: Date, client: (window: Date, count: Int)?, password: (window: Date, count: Int)?,
        run: (last: Date, count: Int)?
    ) -> PasswordAttemptDecision {
        let clientCount = client.flatMap { $0.window == lockout.windowStart ? $0.count : nil } ?? 0
        let passwordCount = password.flatMap { $0.window == lockout.windowStart ? $0.count : nil } ?? 0
        let passwordLimit = lockout.passwordLimit ?? .max
        var refusedUntil: Date?
        if clientCount >= lockout.clientLimit || passwordCount >= passwordLimit { refusedUntil = lockout.windowStart }
        if let run, let next = nextAttempt(count: run.count, last: run.last), next > now { refusedUntil = max(refusedUntil ?? next, next) }
        if let refusedUntil { return .refused(until: refusedUntil) }
        let newRun = (run?.count ?? 0) + 1
        var reached: [FailureSubject] = []
        if passwordCount + 1 == passwordLimit { reached.append(.password(user)) }
        if newRun == threshold || newRun == maximum { reached.append(.passwordRun(user)) }
        return .counted(password: passwordCount + 1, run: newRun, reached: reached)
    }
}

/// What ``PasswordRunPolicy/decide(lockout:user:now:client:password:run:)`` decides.
public enum PasswordAttemptDecision: Sendable, Hashable {
    /// Refused, counting nothing; `until` is when the longest applicable wait ends (the window's
    /// start for a window limit: the caller adds the window).
    case refused(until: Date)
    /// Counted: the new window and run counts, and the subjects whose limit this attempt reached.
    case counted(password: Int, run: Int, reached: [FailureSubject])
}

/// What ``BioAuthStore/beginPasswordAttempt(username:lockout:run:now:)`` returns.
public struct PasswordAttempt: Sendable, Hashable {
    public var user: UserRecord?
    /// Refused: nothing was counted; the wait ends then (the window's start for a window limit).
    public var refusedUntil: Date?
    /// Subjects whose limit this attempt reached (audited as lockouts if the attempt fails).
    public var reached: [FailureSubject]

    public init(user: UserRecord?, refusedUntil: Date?, reached: [FailureSubject]) {
        self.user = user
        self.refusedUntil = refusedUntil
        self.reached = reached
    }
}

/// What ``BioAuthStore/passwordLoginState(username:lockout:)`` finds.
public struct PasswordLoginState: Sendable, Hashable {
    public var user: UserRecord?
    public var lockedOut: Bool

    public init(user: UserRecord?, lockedOut: Bool) {
        self.user = user
        self.lockedOut = lockedOut
    }
}
