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
    /// Refuse to set a passcode on a device without a Secure Enclave (the default). false lets
    /// the passcode work there with PBKDF2 alone — a weaker, explicit choice: a copy of the
    /// keychain then suffices to guess it offline (`docs/ThreatModel.md`).
    public var requiresSecureEnclave: Bool

    public init(
        minimumLength: Int = 6, delays: [TimeInterval] = [0, 0, 0, 0, 60, 300, 900, 3_600],
        wipeAfter: Int? = nil, rounds: Int = SlowHash.defaultRounds, requiresSecureEnclave: Bool = true
    ) {
        self.minimumLength = minimumLength
        self.delays = delays
        self.wipeAfter = wipeAfter
        self.rounds = rounds
        self.requiresSecureEnclave = requiresSecureEnclave
    }
}

/// Seconds since the device started, which moving the date does not change
/// (`ProcessInfo.systemUptime`).
public struct SystemUptimeClock: WallClock {
    public init() {}
    public func now() -> Date { Date(timeIntervalSinceReferenceDate: ProcessInfo.processInfo.systemUptime) }
}

/// An app-level passcode: the fallback when biometry cannot be trusted.
///
/// **Bound to this phone.** The key-encryption key and the verifier come from HKDF over the
/// PBKDF2 output *and* a 32-byte device secret that only this phone's Secure Enclave can open (it
/// is sealed with ECIES to an enclave key that needs no biometry: `.privateKeyUsage`,
/// `WhenPasscodeSetThisDeviceOnly`). A copy of the keychain — a forensic dump, a backup — is not
/// enough to test a single guess offline; every guess needs the phone. The verifier is derived
/// from the whole output, so no shortcut tests a guess with less work than the real check.
///
/// **Bounded guessing through the app.** The failure is counted *before* the comparison (killing
/// the app mid-check never gives a free attempt), delays escalate, an optional wipe ends it, and a
/// delay must pass on the uptime clock as well as the wall clock: moving the date does not skip
/// it (after a restart the delay starts again). The limit: code running inside the app's process
/// (a jailbreak tweak, a malicious SDK) can ask the enclave to open the device secret — the key
/// needs no user presence — and then guess offline without the counter. Prefer a long passphrase
/// where that attacker matters.
///
/// Records are `WhenPasscodeSetThisDeviceOnly`: removing the device passcode deletes them and the
/// enclave key, and with them the vault this passcode protects (``AppLock`` then reports `.wiped`).
public actor AppPasscode {
    nonisolated public let policy: AppPasscodePolicy
    private let records: PlainRecords
    private let enclave: any EnclaveKeyStore
    private let deviceKeyTag: String
    private let clock: any WallClock
    private let uptime: any WallClock
    private let logger: Logger
    private let onWipe: @Sendable () -> Void

    private struct Verifier: Codable {
        var version = 2
        var salt: Data
        var rounds: Int
        var verifier: Data
        /// The device secret, sealed to the enclave key; nil only with `requiresSecureEnclave` off on a device without one.
        var sealedDeviceSecret: Data?
    }

    /// Consecutive failures and the time before which no attempt is accepted.
    public struct Attempts: Codable, Sendable, Hashable {
        public var failures: Int
        public var lockedUntil: Date?
        /// The same deadline on the uptime clock, and the delay (to restart it after a reboot).
        var lockedUntilUptime: Date?
        var delay: TimeInterval?
    }

    private static let verifierAccount = "bioauth.app-passcode"
    private static let attemptsAccount = "bioauth.app-passcode.attempts"

    /// An app passcode kept in `platform`'s keychain under `service`. `onWipe` is called after the
    /// wipe limit is reached, to delete the data it protects.
    public init(
        platform: DevicePlatform, service: ServiceName, policy: AppPasscodePolicy = AppPasscodePolicy(),
        clock: any WallClock = SystemWallClock(), uptime: any WallClock = SystemUptimeClock(),
        logger: Logger = Logger(label: "BioAuth.AppPasscode") { _ in SwiftLogNoOpLogHandler() }, onWipe: @escaping @Sendable () -> Void = {}
    ) {
        self.init(
            platform: platform, service: service.rawValue, policy: policy, clock: clock, uptime: uptime, logger: logger, onWipe: onWipe)
    }

    package init(
        platform: DevicePlatform, service: String, policy: AppPasscodePolicy = AppPasscodePolicy(),
        clock: any WallClock = SystemWallClock(), uptime: any WallClock = SystemUptimeClock(),
        logger: Logger = Logger(label: "BioAuth.AppPasscode") { _ in SwiftLogNoOpLogHandler() }, onWipe: @escaping @Sendable () -> Void = {}
    ) {
        records = PlainRecords(keychain: platform.keychain, service: service, accessibility: .whenPasscodeSetThisDeviceOnly)
        enclave = platform.enclave
        deviceKeyTag = service + ".app-passcode.device-key"
        self.policy = policy
        self.clock = clock
        self.uptime = uptime
        self.logger = logger
        self.onWipe = onWipe
    }

    /// Whether a passcode is set.
    public var isSet: Bool { (try? records.read(Self.verifierAccount)) != nil }

    /// The current attempt state.
    public func attempts() throws(BioAuthError) -> Attempts {
        try records.readJSON(Attempts.self, Self.attemptsAccount) ?? Attempts(failures: 0)
    }

    /// Sets (or replaces) the passcode and returns its key-encryption key. Creates a new device
    /// secret each time.
    ///
    /// - Throws: `passcodeTooShort`; `secureEnclaveUnavailable` (see
    ///   ``AppPasscodePolicy/requiresSecureEnclave``); `passcodeNotSet` without a device passcode.
    @discardableResult
    public func set(_ passcode: String) throws(BioAuthError) -> SymmetricKey {
        guard passcode.count >= policy.minimumLength else { throw BioAuthError(.passcodeTooShort) }
        let secret = try newDeviceSecret()
        let salt = SecretBytes.random(count: 16).data
        let (verifier, kek) = try derive(passcode, salt: salt, rounds: policy.rounds, deviceSecret: secret?.secret)
        try records.writeJSON(
            Verifier(salt: salt, rounds: policy.rounds, verifier: verifier, sealedDeviceSecret: secret?.sealed), Self.verifierAccount)
        try records.remove(Self.attemptsAccount)
        logger.info("app passcode set")
        return kek
    }

    /// Checks the passcode; on success returns its key-encryption key and clears the failures.
    ///
    /// - Throws: ``BioAuthError`` `passcodeTemporarilyLocked` (with `retryAfter`) while a delay
    ///   runs, `passcodeIncorrect`, `wiped` when the wipe limit is reached, `appPasscodeNotSet`.
    public func verify(_ passcode: String) throws(BioAuthError) -> SymmetricKey {
        guard let stored = try records.readJSON(Verifier.self, Self.verifierAccount), stored.version == 2 else {
            throw BioAuthError(.appPasscodeNotSet)
        }
        var state = try attempts()
        if let wait = try remainingDelay(&state) { throw BioAuthError(.passcodeTemporarilyLocked, retryAfter: wait) }
        state.failures += 1
        state.lockedUntil = nil
        state.lockedUntilUptime = nil
        state.delay = nil
        try records.writeJSON(state, Self.attemptsAccount)

        var deviceSecret: SecretBytes?
        if let sealed = stored.sealedDeviceSecret {
            do { deviceSecret = try enclave.decrypt(tag: deviceKeyTag, ciphertext: sealed, context: nil) } catch {
                // The enclave key is gone (the device passcode was removed, or the app reinstalled).
                throw BioAuthError(.appPasscodeNotSet)
            }
        }
        let (verifier, kek) = try derive(passcode, salt: stored.salt, rounds: stored.rounds, deviceSecret: deviceSecret)
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
        if delay > 0 {
            state.lockedUntil = clock.now().addingTimeInterval(delay)
            state.lockedUntilUptime = uptime.now().addingTimeInterval(delay)
            state.delay = delay
        }
        try records.writeJSON(state, Self.attemptsAccount)
        logger.notice("app passcode rejected", metadata: ["failures": "\(state.failures)", "delay": "\(Int(delay))"])
        throw BioAuthError(
            .passcodeIncorrect, retryAfter: delay > 0 ? delay : nil,
            attemptsBeforeWipe: policy.wipeAfter.map { $0 - state.failures })
    }

    /// Deletes the passcode, its attempt state and its device secret.
    public func remove() throws(BioAuthError) {
        try records.remove(Self.verifierAccount)
        try records.remove(Self.attemptsAccount)
        try? enclave.deleteKey(tag: deviceKeyTag)
    }

    // MARK: - Internals

    /// Seconds still to wait, by whichever clock says longer. An uptime deadline from before a
    /// restart (uptime went backwards) restarts the delay now.
    private func remainingDelay(_ state: inout Attempts) throws(BioAuthError) -> TimeInterval? {
        let wall = state.lockedUntil.map { $0.timeIntervalSince(clock.now()) } ?? 0
        var monotonic: TimeInterval = 0
        if let until = state.lockedUntilUptime, let delay = state.delay {
            let now = uptime.now()
            if until.timeIntervalSince(now) > delay {  // the device restarted since: start again
                state.lockedUntilUptime = now.addingTimeInterval(delay)
                try records.writeJSON(state, Self.attemptsAccount)
            }
            monotonic = (state.lockedUntilUptime ?? now).timeIntervalSince(now)
        }
        let wait = max(wall, monotonic)
        return wait > 0 ? wait : nil
    }

    /// A fresh enclave key and a random secret sealed to it; nil on a device without an enclave
    /// when the policy allows that.
    private func newDeviceSecret() throws(BioAuthError) -> (secret: SecretBytes, sealed: Data)? {
        guard enclave.isAvailable else {
            if policy.requiresSecureEnclave { throw BioAuthError(.secureEnclaveUnavailable) }
            return nil
        }
        let access: AccessControl
        do { access = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: [.privateKeyUsage]) } catch {
            throw BioAuthError(status: error)
        }
        try? enclave.deleteKey(tag: deviceKeyTag)
        let publicKey: Data
        do { publicKey = try enclave.createKey(EnclaveKeyParameters(tag: deviceKeyTag, accessControl: access)) } catch {
            if error == .status(.errSecAuthFailed) { throw BioAuthError(.passcodeNotSet, status: .errSecAuthFailed) }
            throw BioAuthError(enclave: error)
        }
        let secret = SecretBytes.random(count: 32)
        do {
            let recipient = try P256.KeyAgreement.PublicKey(x963Representation: publicKey)
            return (secret, try ECIES.encrypt(secret.data, to: recipient))
        } catch { throw BioAuthError(.cryptographyFailure) }
    }

    /// HKDF-SHA256 over the whole PBKDF2 output and the device secret, expanded twice: the
    /// verifier and the key-encryption key never share bytes.
    private func derive(_ passcode: String, salt: Data, rounds: Int, deviceSecret: SecretBytes?) throws(BioAuthError) -> (
        verifier: Data, kek: SymmetricKey
    ) {
        guard let stretched = try? SlowHash.derive(passcode, salt: salt, rounds: rounds, outputByteCount: 32) else {
            throw BioAuthError(.cryptographyFailure)
        }
        let material = SymmetricKey(data: stretched + (deviceSecret?.data ?? Data()))
        func expand(_ label: String) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: material, salt: salt, info: Data("BioAuth app passcode v2 \(label)".utf8), outputByteCount: 32)
        }
        return (expand("verifier").withUnsafeBytes { Data($0) }, expand("key-encryption key"))
    }
}
