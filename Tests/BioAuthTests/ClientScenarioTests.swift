import BioAuth
import BioAuthCore
import BioAuthEmulator
import BioAuthTesting
import Crypto
import Foundation
import InMemoryLogging
import Logging
import Testing

/// The pen-test scenarios of design §3 / issue 2, on the emulator.
struct ClientScenarioTests {
    let clock = ManualClock()
    let device: EmulatedDevice
    let logs = InMemoryLogHandler()
    let lock: AppLock
    static let appPasscode = "246810"
    static let fastHashing = AppPasscodePolicy(rounds: 1_000)

    init() {
        device = EmulatedDevice.faceID(clock: clock)
        var handler = logs
        handler.logLevel = .trace
        lock = AppLock(
            platform: device.platform, passcodePolicy: Self.fastHashing, clock: clock, logger: Logger(label: "test") { _ in handler })
    }

    /// Configured, biometric unlock on, locked.
    func configuredLock() async throws -> SymmetricKey {
        let vault = try await lock.configure(passcode: Self.appPasscode)
        try await lock.enableBiometricUnlock(passcode: Self.appPasscode)
        await lock.lock()
        return vault
    }

    @Test func biometricUnlockPromptsExactlyOnceAndAgainNextTime() async throws {
        let vault = try await configuredLock()
        #expect(await lock.state == .lockedBiometryAvailable(.faceID))
        #expect(device.promptCount == 0)  // enabling and storing never prompt
        #expect(try await lock.unlockWithBiometry(Prompt(reason: "Unlock")) == vault)
        #expect(device.promptCount == 1)  // the evaluated context was handed to the keychain read
        #expect(device.prompts.map(\.source) == [.evaluatePolicy])
        await lock.lock()
        #expect(try await lock.unlockWithBiometry(Prompt(reason: "Unlock")) == vault)
        #expect(device.promptCount == 2)  // fresh context per attempt
    }

    /// Someone who knows the device passcode enrols a new finger: biometric unlock is refused, the
    /// app passcode is demanded, and after it the lock re-baselines and re-creates the secret.
    @Test func newFingerEnrolledByPasscodeHolderForcesTheAppPasscode() async throws {
        let vault = try await configuredLock()
        device.enrollBiometry()
        #expect(await lock.state == .lockedPasscodeRequired(.biometricSecretInvalidated))
        let refused = await bioAuthError { _ = try await self.lock.unlockWithBiometry(Prompt(reason: "Unlock")) }
        #expect(refused?.code == .passcodeRequired)
        #expect(device.promptCount == 0)

        #expect(try await lock.unlockWithPasscode(Self.appPasscode) == vault)
        await lock.lock()
        #expect(await lock.state == .lockedBiometryAvailable(.faceID))
        #expect(try await lock.unlockWithBiometry(Prompt(reason: "Unlock")) == vault)
    }

    /// The domain state changed while the item survived (a major OS update): the guard demands the
    /// passcode and nothing is destroyed.
    @Test func domainStateChangeDemandsThePasscodeWithoutDataLoss() async throws {
        let vault = try await configuredLock()
        device.changeDomainStateAsAfterOSUpdate()
        let refused = await bioAuthError { _ = try await self.lock.unlockWithBiometry(Prompt(reason: "Unlock")) }
        #expect(refused?.code == .enrollmentChanged)
        #expect(await lock.state == .lockedPasscodeRequired(.enrollmentChanged))
        #expect(try await lock.unlockWithPasscode(Self.appPasscode) == vault)
        await lock.lock()
        #expect(try await lock.unlockWithBiometry(Prompt(reason: "Unlock")) == vault)
    }

    /// With the jailbreak hook on, no protected item, key signature or secret is obtainable.
    @Test func jailbreakHookObtainsNothing() async throws {
        _ = try await configuredLock()
        let items = ProtectedItemStore(platform: device.platform, service: "app")
        try items.set(secret, for: "token")
        let signer = BiometricSigner(platform: device.platform, tag: "login")
        try signer.createKey()

        device.jailbreakHookEnabled = true
        device.unscriptedAction = .noMatch  // the attacker's face
        let unlock = await bioAuthError { _ = try await self.lock.unlockWithBiometry(Prompt(reason: "Unlock")) }
        #expect(unlock?.code == .authenticationFailed)
        let read = await bioAuthError { _ = try await items.read("token", prompt: Prompt(reason: "Read")) }
        #expect(read?.code == .authenticationFailed)
        let signature = await bioAuthError { _ = try await signer.sign(Data("nonce".utf8), prompt: Prompt(reason: "Sign")) }
        #expect(signature?.code == .biometryLockedOut)  // the attacker's failed matches add up to a lockout
        #expect(device.isLockedOut)
        // The hooked evaluatePolicy showed nothing; each refusal came from the platform's own prompt.
        #expect(device.prompts.allSatisfy { $0.source != .evaluatePolicy })
        #expect(await lock.state != .unlocked)
        // A keychain dump finds no protected value either.
        #expect(!device.dumpKeychain().contains { $0.data == secret })
    }

    /// The device passcode is removed: "all previously protected items" are deleted by the system
    /// (`SecItem.h`), including the app passcode's records and its enclave key — the app passcode
    /// is bound to the phone's passcode-protected hardware, so the vault is gone too, and the lock
    /// says `.wiped` rather than offering a passcode that can no longer open anything. Setting a
    /// device passcode again lets the app configure a new lock.
    @Test func devicePasscodeRemovedWipesTheLock() async throws {
        _ = try await configuredLock()
        let items = ProtectedItemStore(platform: device.platform, service: "app")
        try items.set(secret, for: "token")
        device.removePasscode()
        #expect(BiometricStatus(contexts: device.platform.contexts) == .noPasscode(.faceID))
        #expect(!items.contains("token"))
        #expect(await lock.state == .wiped)
        let refused = await bioAuthError { try items.set(secret, for: "token") }
        #expect(refused?.code == .passcodeNotSet)
        #expect(await bioAuthError { _ = try await self.lock.unlockWithPasscode(Self.appPasscode) }?.code == .appPasscodeNotSet)
        #expect(await bioAuthError { _ = try await self.lock.configure(passcode: Self.appPasscode) }?.code == .passcodeNotSet)

        device.setPasscode("654321")
        let fresh = try await lock.configure(passcode: Self.appPasscode)
        await lock.lock()
        #expect(try await lock.unlockWithPasscode(Self.appPasscode) == fresh)
    }

    /// Lockout: status is lockedOut with the right type, and the passcode path is offered.
    @Test func lockoutOffersThePasscodePath() async throws {
        let vault = try await configuredLock()
        device.script(.noMatch, .noMatch, .noMatch)
        #expect(await bioAuthError { _ = try await self.lock.unlockWithBiometry(Prompt(reason: "Unlock")) }?.code == .authenticationFailed)
        device.script(.noMatch, .noMatch)
        #expect(await bioAuthError { _ = try await self.lock.unlockWithBiometry(Prompt(reason: "Unlock")) }?.code == .biometryLockedOut)
        #expect(BiometricStatus(contexts: device.platform.contexts) == .lockedOut(.faceID))
        #expect(await lock.state == .lockedPasscodeRequired(.biometryLockedOut))
        #expect(try await lock.unlockWithPasscode(Self.appPasscode) == vault)
        // The device passcode clears the lockout; biometry is offered again.
        device.unlockDeviceWithPasscode("123456")
        await lock.lock()
        #expect(await lock.state == .lockedBiometryAvailable(.faceID))
    }

    @Test func touchIDPhoneSaysTouchID() async throws {
        let device = EmulatedDevice(configuration: .init(biometry: .touchID), enrolled: false)
        #expect(BiometricStatus(contexts: device.platform.contexts) == .notEnrolled(.touchID))
        device.enrollBiometry()
        #expect(BiometricStatus(contexts: device.platform.contexts) == .available(.touchID))
    }

    @Test func enablingBiometryRequiresTheAppPasscode() async throws {
        try await lock.configure(passcode: Self.appPasscode)
        let wrong = await bioAuthError { try await self.lock.enableBiometricUnlock(passcode: "000000") }
        #expect(wrong?.code == .passcodeIncorrect)
        await lock.lock()
        #expect(await lock.state == .lockedPasscodeRequired(.biometricUnlockNotEnabled))
    }

    @Test func fallbackAtTheUnlockPromptAsksForThePasscode() async throws {
        _ = try await configuredLock()
        device.script(.noMatch, .noMatch, .fallback)
        let error = await bioAuthError {
            _ = try await self.lock.unlockWithBiometry(Prompt(reason: "Unlock", fallbackTitle: "Use App Passcode"))
        }
        #expect(error?.code == .fallbackRequested)
        #expect(device.prompts.last?.fallbackTitle == "Use App Passcode")
    }

    @Test func protectedItemsReadWithOnePromptAndCheckExistenceWithoutOne() async throws {
        let items = ProtectedItemStore(platform: device.platform, service: "app")
        try items.set(secret, for: "token")
        try items.set(secret, for: "token")  // write = delete + add: no duplicate, no prompt
        #expect(device.promptCount == 0)
        #expect(items.contains("token"))
        #expect(!items.contains("missing"))
        #expect(items.unprotectedAccounts().isEmpty)
        #expect(device.promptCount == 0)
        #expect(try await items.read("token", prompt: Prompt(reason: "Read", fallbackTitle: "")) == secret)
        #expect(device.promptCount == 1)
        #expect(device.prompts.last?.fallbackTitle == nil)
        device.script(.cancel)
        #expect(await bioAuthError { _ = try await items.read("token", prompt: Prompt(reason: "Read")) }?.code == .userCancelled)
    }

    @Test(arguments: ProtectionPolicy.allCases)
    func everyPolicyReadsWithOnePrompt(policy: ProtectionPolicy) async throws {
        let items = ProtectedItemStore(platform: device.platform, service: "app", policy: policy)
        try items.set(secret, for: "token")
        if policy == .devicePasscode { device.script(.passcode("123456")) }
        #expect(try await items.read("token", prompt: Prompt(reason: "Read")) == secret)
        #expect(device.promptCount == 1)
    }

    @Test func signerSignsProtocolMessagesWithOnePromptEach() async throws {
        let signer = BiometricSigner(platform: device.platform, tag: "login")
        let publicKey = try signer.createKey()
        #expect(try signer.publicKey() == publicKey)
        let message = try SignedMessage(
            purpose: .login, relyingPartyID: "example.com", challengeID: Data(count: 16), nonce: Data(repeating: 7, count: 32),
            userID: "alice", deviceID: "phone", expiresAt: 1_767_225_660)
        let signature = try await signer.sign(ChallengeEnvelope(message), prompt: Prompt(reason: "Sign in"))
        #expect(publicKey.isValidSignature(der: signature.derRepresentation, for: message.encoded))
        #expect(device.promptCount == 1)
        _ = try await signer.sign(message.encoded, prompt: Prompt(reason: "Sign in"))
        #expect(device.promptCount == 2)

        let ciphertext = try signer.encrypt(secret)
        #expect(try await signer.decrypt(ciphertext, prompt: Prompt(reason: "Decrypt")) == secret)

        device.enrollBiometry()
        // Found or not (UNCONFIRMED on a device: `invalidatedKeyLookup`), the key no longer signs after a match.
        #expect(signer.hasKey == (device.configuration.invalidatedKeyLookup == .succeeds))
        #expect(
            await bioAuthError { _ = try await signer.sign(message.encoded, prompt: Prompt(reason: "Sign in")) }?.code == .keyUnavailable)
    }

    /// Every error description and every captured log line is free of secrets.
    @Test func noSecretInErrorsOrLogs() async throws {
        var scanner = SecretScanner()
        let vault = try await configuredLock()
        scanner.add(vault, label: "vault key")
        scanner.add(Self.appPasscode, label: "app passcode")
        scanner.add(secret, label: "item")
        let items = ProtectedItemStore(platform: device.platform, service: "app")
        try items.set(secret, for: "token")
        let signer = BiometricSigner(platform: device.platform, tag: "login")
        try signer.createKey()
        let nonce = Data(repeating: 0xA5, count: 32)
        scanner.add(nonce, label: "nonce")
        let signature = try await signer.sign(nonce, prompt: Prompt(reason: "Sign"))
        scanner.add(signature.derRepresentation, label: "signature")
        if let state = device.currentDomainState { scanner.add(state, label: "domain state") }

        var rendered: [String] = []
        _ = await bioAuthError { _ = try await self.lock.unlockWithPasscode("999999") }
        device.enrollBiometry()
        for attempt in [Self.appPasscode, "111111"] {
            await lock.lock()
            if let error = await bioAuthError({ _ = try await self.lock.unlockWithBiometry(Prompt(reason: "Unlock")) }) {
                rendered.append("\(error)")
            }
            if let error = await bioAuthError({ _ = try await self.lock.unlockWithPasscode(attempt) }) {
                rendered.append(String(reflecting: error))
            }
        }
        for code in BioAuthError.Code.all {
            let error = BioAuthError(code, laError: .userCancel, status: .errSecAuthFailed, retryAfter: 30, attemptsBeforeWipe: 2)
            rendered += [error.description, error.debugDescription, String(reflecting: error), "\(error)"]
        }
        var dumped = ""
        dump(vault, to: &dumped)
        rendered += ["\(vault)", String(reflecting: vault), dumped, "\(Mirror(reflecting: vault).children.map(\.value))"]
        device.script(.passcode(Self.appPasscode))
        rendered.append("\(device.pendingActions)")
        for entry in logs.entries {
            rendered.append("\(entry.message) \(entry.metadata)")
        }
        #expect(logs.entries.count >= 5)
        #expect(rendered.count > 100)
        for text in rendered { #expect(scanner.leaks(in: text).isEmpty, "leak in: \(text.prefix(80))") }
    }
}
