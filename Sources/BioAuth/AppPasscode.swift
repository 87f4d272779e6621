import BioAuthCore
import Crypto
import Foundation
import Logging

/// Attempt limits and hashing cost of the app passcode.
public struct AppPasscodePolicy: Sendable, Hashable {
    /// Shortest passcode ``AppPasscode/set(_:)`` accepts.
    public var minimumLength: Int
    /// Seconds to wait after the n-th consecutive failure (`delays[n-1]`; the last value repeats).
    public var delays: [TimeInterval]
    /// Wipe after this many consecutive failures; nil never wipes.
    public var wipeAfter: Int?
    /// PBKDF2-HMAC-SHA256 iterations (OWASP's minimum, 210 000, by default).
    public var rounds: Int

    public init(
        minimumLength: Int = 6, delays: [TimeInterval] = [0, 0, 0, 0, 60, 300, 900, 3_600],
        wipeAfter: Int? = nil, rounds: Int = SlowHash.defaultRounds
    ) {
        self.minimumLength = minimumLength
        self.delays = delays
        self.wipeAfter = wipeAfter
        self.rounds = rounds
    }
}

/// An app-level passcode: the fallback when biometry cannot be trusted.
///
/// Stored as a salted PBKDF2-SHA256 hash (never the passcode), compared in constant time, with
/// escalating delays and an optional wipe after repeated failures. The failure is counted
/// *before* the comparison, so killing the app mid-check never gives a free attempt.
/// Verification also yields a key-encryption key derived from the passcode, so data can be
/// recovered with the passcode alone.
public actor AppPasscode {
    nonisolated public let policy: AppPasscodePolicy
    private let records: PlainRecords
    private let clock: any WallClock
    private let logger: Logger
    private let onWipe: @Sendable () -> Void

    private struct Verifier: Codable {
        var version = 1
        var salt: Data
        var rounds: Int
        var verifier: Data
    }

    /// Consecutive failures and the time before which no attempt is accepted.
    public struct Attempts: Codable, Sendable, Hashable {
        public var failures: Int
        public var lockedUntil: Date?
    }

    private static let verifierAccount = "bioauth.app-passcode"
    private static let attemptsAccount = "bioauth.app-passcode.attempts"

    /// An app passcode kept in `platform`'s keychain under `service`.
    /// - Parameter onWipe: called after the wipe limit is reached, to delete the data it protects.
    public init(
        platform: DevicePlatform, service: ServiceName, policy: AppPasscodePolicy = AppPasscodePolicy(),
        clock: any WallClock = SystemWallClock(), logger: Logger = Logger(label: "BioAuth.AppPasscode"),
        onWipe: @escaping @Sendable () -> Void = {}
    ) {
        self.init(keychain: platform.keychain, service: service.rawValue, policy: policy, clock: clock, logger: logger, onWipe: onWipe)
    }

    package init(
        keychain: any KeychainService, service: String, policy: AppPasscodePolicy = AppPasscodePolicy(),
        clock: any WallClock = SystemWallClock(), logger: Logger = Logger(label: "BioAuth.AppPasscode"),
        onWipe: @escaping @Sendable () -> Void = {}
    ) {
        records = PlainRecords(keychain: keychain, service: service)
        self.policy = policy
        self.clock = clock
        self.logger = logger
        self.onWipe = onWipe
    }

    /// Whether a passcode is set.
    public var isSet: Bool { (try? records.read(Self.verifierAccount)) != nil }

    /// The current attempt state.
    public func attempts() throws(BioAuthError) -> Attempts {
        try records.readJSON(Attempts.self, Self.attemptsAccount) ?? Attempts(failures: 0)
    }

    /// Sets (or replaces) the passcode and returns its key-encryption key.
    @discardableResult
    public func set(_ passcode: String) throws(BioAuthError) -> SecretBytes {
        guard passcode.count >= policy.minimumLength else { throw BioAuthError(.passcodeTooShort) }
        let salt = SecretBytes.random(count: 16).data
        let (verifier, kek) = try derive(passcode, salt: salt, rounds: policy.rounds)
        try records.writeJSON(Verifier(salt: salt, rounds: policy.rounds, verifier: verifier), Self.verifierAccount)
        try records.remove(Self.attemptsAccount)
        logger.info("app passcode set")
        return kek
    }

    /// Checks the passcode; on success returns its key-encryption key and clears the failures.
    ///
    /// - Throws: ``BioAuthError`` `passcodeTemporarilyLocked` (with `retryAfter`) while a delay
    ///   runs, `passcodeIncorrect`, `wiped` when the wipe limit is reached, `appPasscodeNotSet`.
    public func verify(_ passcode: String) throws(BioAuthError) -> SecretBytes {
        guard let stored = try records.readJSON(Verifier.self, Self.verifierAccount) else {
            throw BioAuthError(.appPasscodeNotSet)
        }
        var state = try attempts()
        let now = clock.now()
        if let until = state.lockedUntil, until > now {
            throw BioAuthError(.passcodeTemporarilyLocked, retryAfter: until.timeIntervalSince(now))
        }
        state.failures += 1
        state.lockedUntil = nil
        try records.writeJSON(state, Self.attemptsAccount)

        let (verifier, kek) = try derive(passcode, salt: stored.salt, rounds: stored.rounds)
        if constantTimeEquals(verifier, stored.verifier) {
            try records.remove(Self.attemptsAccount)
            logger.info("app passcode accepted")
            return kek
        }
        if let limit = policy.wipeAfter, state.failures >= limit {
            logger.warning("app passcode wipe limit reached", metadata: ["failures": "\(state.failures)"])
            try remove()
            onWipe()
            throw BioAuthError(.wiped)
        }
        let delay = policy.delays.isEmpty ? 0 : policy.delays[min(state.failures, policy.delays.count) - 1]
        if delay > 0 { state.lockedUntil = now.addingTimeInterval(delay) }
        try records.writeJSON(state, Self.attemptsAccount)
        logger.notice("app passcode rejected", metadata: ["failures": "\(state.failures)", "delay": "\(Int(delay))"])
        throw BioAuthError(
            .passcodeIncorrect, retryAfter: delay > 0 ? delay : nil,
            attemptsBeforeWipe: policy.wipeAfter.map { $0 - state.failures })
    }

    /// Deletes the passcode and its attempt state.
    public func remove() throws(BioAuthError) {
        try records.remove(Self.verifierAccount)
        try records.remove(Self.attemptsAccount)
    }

    private func derive(_ passcode: String, salt: Data, rounds: Int) throws(BioAuthError) -> (verifier: Data, kek: SecretBytes) {
        guard let bytes = try? SlowHash.derive(passcode, salt: salt, rounds: rounds, outputByteCount: 64) else {
            throw BioAuthError(.cryptographyFailure)
        }
        return (bytes.prefix(32), SecretBytes(bytes.suffix(32)))
    }
}
