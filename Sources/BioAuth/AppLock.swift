import BioAuthCore
import Crypto
import Foundation
import Logging

/// Why the app passcode is needed instead of biometry.
public enum PasscodeReason: String, Sendable, Hashable, Codable {
    /// Biometric unlock was never turned on.
    case biometricUnlockNotEnabled
    /// The enrolled biometry changed since the passcode last succeeded.
    case enrollmentChanged
    /// The biometric secret is gone (the system destroyed it on an enrollment change).
    case biometricSecretInvalidated
    /// Biometry is locked out after too many failed matches.
    case biometryLockedOut
    /// The device passcode was removed: the system deleted every passcode-class item.
    case devicePasscodeRemoved
    /// Biometry is not enrolled, not permitted for the app, or absent.
    case biometryNotUsable
}

/// What the lock screen should offer.
public enum AppLockState: Sendable, Hashable, CustomStringConvertible {
    /// No app passcode yet: call ``AppLock/configure(passcode:)``.
    case notConfigured
    /// Biometric unlock can be tried (the passcode always works too).
    case lockedBiometryAvailable(BiometryKind)
    /// Only the app passcode unlocks, for this reason.
    case lockedPasscodeRequired(PasscodeReason)
    case unlocked
    /// The wipe limit was reached; everything the lock protected is gone.
    case wiped

    public var description: String {
        switch self {
        case .notConfigured: "not configured"
        case .lockedBiometryAvailable(let kind): "locked; \(kind) or app passcode"
        case .lockedPasscodeRequired(let reason): "locked; app passcode required (\(reason.rawValue))"
        case .unlocked: "unlocked"
        case .wiped: "wiped"
        }
    }
}

/// The app lock: one state machine over biometry, the enrollment guard and the app passcode,
/// guarding a random 32-byte vault key that the app uses to protect its data.
///
/// The vault key is stored twice: wrapped with a key derived from the app passcode, and in a
/// `.biometryCurrentSet` keychain item. Biometric unlock reads the item with the context it just
/// evaluated — one prompt — and only after the enrollment guard agrees; an enrollment change,
/// a lockout or a removed device passcode forces the app passcode, after which the biometric copy
/// and the baseline are re-created. Nothing is ever granted on the result of `evaluatePolicy`
/// alone: without a real match the keychain does not release the item.
public actor AppLock {
    public let platform: DevicePlatform
    /// Package-only: changing the passcode outside ``changePasscode(from:to:)`` would leave a
    /// vault key that no longer unwraps.
    package let passcode: AppPasscode
    private let records: PlainRecords
    private let biometricCopy: ProtectedItemStore
    private let enrollment: EnrollmentGuard
    private let logger: Logger
    private var isUnlocked = false
    /// Serialises every change of the passcode, vault key or biometric copy: the actor alone lets
    /// two calls interleave at each `await`, which could wrap the vault key under a passcode that
    /// another call replaced — a vault key that never unwraps again.
    private let changes = SerialLock()
    private var didWipe = false

    private static let wrappedVaultAccount = "bioauth.vault.passcode-wrapped"
    private static let biometricVaultAccount: AccountName = "bioauth.vault.biometric"
    private static let enabledAccount = "bioauth.biometric-unlock-enabled"
    private static let requiredAccount = "bioauth.passcode-required"

    public init(
        platform: DevicePlatform, service: ServiceName = "bioauth.app-lock", passcodePolicy: AppPasscodePolicy = AppPasscodePolicy(),
        clock: any WallClock = SystemWallClock(), uptime: any WallClock = SystemUptimeClock(),
        logger: Logger = Logger(label: "BioAuth.AppLock") { _ in SwiftLogNoOpLogHandler() }
    ) {
        self.platform = platform
        let records = PlainRecords(keychain: platform.keychain, service: service.rawValue)
        let biometricCopy = ProtectedItemStore(platform: platform, service: service, policy: .biometryCurrentSet)
        let enrollment = EnrollmentGuard(keychain: platform.keychain, service: service.rawValue)
        self.records = records
        self.biometricCopy = biometricCopy
        self.enrollment = enrollment
        self.logger = logger
        passcode = AppPasscode(
            platform: platform, service: service.rawValue, policy: passcodePolicy, clock: clock, uptime: uptime, logger: logger,
            onWipe: {
                for account in [Self.wrappedVaultAccount, Self.enabledAccount, Self.requiredAccount] { try? records.remove(account) }
                try? biometricCopy.remove(Self.biometricVaultAccount)
                try? enrollment.clear()
            })
    }

    /// What the lock screen should offer now. Reads device state; shows no UI.
    public var state: AppLockState {
        get async {
            if didWipe { return .wiped }
            // A wrapped vault without its passcode: the system deleted the passcode's records and
            // enclave key with the device passcode. The vault cannot be opened again.
            guard await passcode.isSet else {
                let orphanedVault = ((try? records.read(Self.wrappedVaultAccount)) ?? nil) != nil  // a read error counts as none
                return orphanedVault ? .wiped : .notConfigured
            }
            if isUnlocked { return .unlocked }
            return lockedState()
        }
    }

    /// Sets the app passcode and creates the vault key. Returns the vault key; the lock is unlocked.
    ///
    /// - Throws: ``BioAuthError`` `alreadyConfigured` if a passcode exists (a second vault key would
    ///   orphan the first): use ``changePasscode(from:to:)``.
    @discardableResult
    public func configure(passcode code: String) async throws(BioAuthError) -> SymmetricKey {
        try await changes.withLock { () async throws(BioAuthError) -> SymmetricKey in
            guard !(await passcode.isSet) else { throw BioAuthError(.alreadyConfigured) }
            let kek = try await passcode.set(code)
            let vault = SecretBytes.random(count: 32)
            try records.write(try wrap(vault, with: kek), Self.wrappedVaultAccount)
            didWipe = false
            isUnlocked = true
            logger.info("app lock configured")
            return SymmetricKey(data: vault.data)
        }
    }

    /// Turns biometric unlock on. Requires the app passcode: biometry never enables itself.
    public func enableBiometricUnlock(passcode code: String) async throws(BioAuthError) {
        try await changes.withLock { () async throws(BioAuthError) in try await enableBiometricUnlockNow(passcode: code) }
    }

    private func enableBiometricUnlockNow(passcode code: String) async throws(BioAuthError) {
        let vault = try await vaultKey(passcode: code)
        let status = BiometricStatus(contexts: platform.contexts)
        guard status.isAvailable else { throw BioAuthError(status.errorCode) }
        try records.write(SecretBytes([1]), Self.enabledAccount)
        try storeBiometricCopy(vault)
        logger.info("biometric unlock enabled", metadata: ["biometry": "\(status.biometryKind)"])
    }

    /// Turns biometric unlock off and deletes the biometric copy. No prompt.
    public func disableBiometricUnlock() async throws(BioAuthError) {
        try await changes.withLock { () async throws(BioAuthError) in
            try records.remove(Self.enabledAccount)
            try biometricCopy.remove(Self.biometricVaultAccount)
            try enrollment.clear()
        }
    }

    /// Unlocks with biometry: one prompt, then the vault key from the keychain with that context.
    ///
    /// - Throws: ``BioAuthError`` `passcodeRequired` when biometry cannot be trusted now (read
    ///   ``state`` for the reason), `enrollmentChanged`, `biometryLockedOut`, `userCancelled`,
    ///   `fallbackRequested` (show the passcode entry), `authenticationFailed`.
    public func unlockWithBiometry(_ prompt: Prompt) async throws(BioAuthError) -> SymmetricKey {
        guard await passcode.isSet, !didWipe else { throw BioAuthError(.notConfigured) }
        guard case .lockedBiometryAvailable = lockedState() else { throw BioAuthError(.passcodeRequired) }
        let context = try await platform.authenticatedContext(policy: .deviceOwnerAuthenticationWithBiometrics, prompt: prompt)
        defer { context.invalidate() }
        switch try enrollment.check(context) {
        case .changed, .noBaseline:
            try requirePasscode(.enrollmentChanged)
            throw BioAuthError(.enrollmentChanged)
        case .unchanged, .unknown:
            break  // .unknown: no real match on this context; the keychain read below decides.
        }
        do {
            let vault = try biometricCopy.read(Self.biometricVaultAccount, context: context)
            isUnlocked = true
            logger.info("unlocked with biometry")
            return SymmetricKey(data: vault.data)
        } catch {
            if error.code == .itemNotFound {
                try requirePasscode(.biometricSecretInvalidated)
                throw BioAuthError(.passcodeRequired, status: error.status)
            }
            logger.notice("biometric unlock failed", metadata: ["error": "\(error.code)"])
            throw error
        }
    }

    /// Unlocks with the app passcode. If biometric unlock is on and biometry is usable, re-creates
    /// the biometric copy and the enrollment baseline (the user just proved who they are).
    public func unlockWithPasscode(_ code: String) async throws(BioAuthError) -> SymmetricKey {
        try await changes.withLock { () async throws(BioAuthError) -> SymmetricKey in
            SymmetricKey(data: try await unlockWithPasscodeNow(code).data)
        }
    }

    private func unlockWithPasscodeNow(_ code: String) async throws(BioAuthError) -> SecretBytes {
        let vault = try await vaultKey(passcode: code)
        try records.remove(Self.requiredAccount)
        if try records.read(Self.enabledAccount) != nil, BiometricStatus(contexts: platform.contexts).isAvailable {
            do { try storeBiometricCopy(vault) } catch {
                logger.notice("could not re-create the biometric copy", metadata: ["error": "\(error.code)"])
            }
        }
        isUnlocked = true
        logger.info("unlocked with app passcode")
        return vault
    }

    /// Changes the app passcode; the vault key stays the same.
    public func changePasscode(from old: String, to new: String) async throws(BioAuthError) {
        try await changes.withLock { () async throws(BioAuthError) in
            let vault = try await vaultKey(passcode: old)
            let kek = try await passcode.set(new)
            try records.write(try wrap(vault, with: kek), Self.wrappedVaultAccount)
        }
    }

    /// Locks again.
    public func lock() { isUnlocked = false }

    // MARK: - Internals

    private func vaultKey(passcode code: String) async throws(BioAuthError) -> SecretBytes {
        let kek: SymmetricKey
        do { kek = try await passcode.verify(code) } catch {
            if error.code == .wiped {
                didWipe = true
                isUnlocked = false
            }
            throw error
        }
        guard let wrapped = try records.read(Self.wrappedVaultAccount) else { throw BioAuthError(.notConfigured) }
        return try unwrap(wrapped, with: kek)
    }

    private func lockedState() -> AppLockState {
        guard (try? records.read(Self.enabledAccount)) ?? nil != nil else { return .lockedPasscodeRequired(.biometricUnlockNotEnabled) }
        if let pending = try? records.read(Self.requiredAccount),
            let reason = PasscodeReason(rawValue: String(decoding: pending.data, as: UTF8.self))
        {
            return .lockedPasscodeRequired(reason)
        }
        switch BiometricStatus(contexts: platform.contexts) {
        case .available(let kind):
            return biometricCopy.contains(Self.biometricVaultAccount)
                ? .lockedBiometryAvailable(kind) : .lockedPasscodeRequired(.biometricSecretInvalidated)
        case .lockedOut: return .lockedPasscodeRequired(.biometryLockedOut)
        case .noPasscode: return .lockedPasscodeRequired(.devicePasscodeRemoved)
        case .notEnrolled, .deniedForApp, .unavailable, .accessoryNotConnected: return .lockedPasscodeRequired(.biometryNotUsable)
        }
    }

    private func requirePasscode(_ reason: PasscodeReason) throws(BioAuthError) {
        logger.notice("app passcode required", metadata: ["reason": "\(reason.rawValue)"])
        try records.write(SecretBytes(Data(reason.rawValue.utf8)), Self.requiredAccount)
    }

    private func storeBiometricCopy(_ vault: SecretBytes) throws(BioAuthError) {
        let context = platform.contexts.makeContext()
        defer { context.invalidate() }
        do { try context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics) } catch { throw BioAuthError(laError: error) }
        try biometricCopy.set(vault, for: Self.biometricVaultAccount)
        try enrollment.rebaseline(from: context)
    }

    private func wrap(_ vault: SecretBytes, with kek: SymmetricKey) throws(BioAuthError) -> SecretBytes {
        do {
            let sealed = try AES.GCM.seal(vault.data, using: kek)
            guard let combined = sealed.combined else { throw BioAuthError(.cryptographyFailure) }
            return SecretBytes(combined)
        } catch { throw BioAuthError(.cryptographyFailure) }
    }

    private func unwrap(_ wrapped: SecretBytes, with kek: SymmetricKey) throws(BioAuthError) -> SecretBytes {
        do {
            return SecretBytes(try AES.GCM.open(AES.GCM.SealedBox(combined: wrapped.data), using: kek))
        } catch { throw BioAuthError(.cryptographyFailure) }
    }
}

extension BiometricStatus {
    /// The error code for a status that is not `.available`.
    var errorCode: BioAuthError.Code {
        switch self {
        case .available: .invalidParameters
        case .notEnrolled: .biometryNotEnrolled
        case .lockedOut: .biometryLockedOut
        case .deniedForApp, .unavailable, .accessoryNotConnected: .biometryNotAvailable
        case .noPasscode: .passcodeNotSet
        }
    }
}
