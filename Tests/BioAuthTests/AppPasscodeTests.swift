import BioAuth
import BioAuthCore
import BioAuthEmulator
import Crypto
import Foundation
import Synchronization
import Testing

struct AppPasscodeTests {
    let clock = ManualClock()
    /// The device's uptime: moves when time passes, not when someone changes the date.
    let uptime = ManualClock(start: Date(timeIntervalSinceReferenceDate: 1_000))
    let device = EmulatedDevice.faceID()

    func passcode(_ policy: AppPasscodePolicy, onWipe: @escaping @Sendable () -> Void = {}) -> AppPasscode {
        AppPasscode(platform: device.platform, service: "app", policy: policy, clock: clock, uptime: uptime, onWipe: onWipe)
    }

    /// Time passes: both clocks move.
    func wait(_ seconds: TimeInterval) {
        clock.advance(by: seconds)
        uptime.advance(by: seconds)
    }

    func failure(_ passcode: AppPasscode, _ code: String) async -> BioAuthError? {
        await bioAuthError { _ = try await passcode.verify(code) }
    }

    /// Wrong attempts bring escalating delays on the injected clock.
    @Test func wrongAttemptsBringEscalatingDelays() async throws {
        let subject = passcode(AppPasscodePolicy(delays: [0, 0, 30, 120], rounds: 1_000))
        try await subject.set("135790")
        #expect(await failure(subject, "000000")?.retryAfter == nil)
        #expect(await failure(subject, "000001")?.code == .passcodeIncorrect)
        let third = await failure(subject, "000002")
        #expect(third?.code == .passcodeIncorrect && third?.retryAfter == 30)
        // Even the right passcode is refused while the delay runs.
        let locked = await failure(subject, "135790")
        #expect(locked?.code == .passcodeTemporarilyLocked && locked?.retryAfter == 30)
        wait(29)
        #expect(await failure(subject, "135790")?.retryAfter == 1)
        wait(1)
        #expect(await failure(subject, "000003")?.retryAfter == 120)
        wait(120)
        #expect(await failure(subject, "000004")?.retryAfter == 120)  // the last delay repeats
        #expect(try await subject.attempts().failures == 5)
        wait(120)
        _ = try await subject.verify("135790")
        #expect(try await subject.attempts().failures == 0)
    }

    /// An optional wipe after N consecutive failures.
    @Test func wipeAfterNFailures() async throws {
        let wiped = WipeFlag()
        let subject = passcode(AppPasscodePolicy(delays: [0], wipeAfter: 3, rounds: 1_000)) { wiped.set() }
        try await subject.set("135790")
        #expect(await failure(subject, "1")?.attemptsBeforeWipe == 2)
        #expect(await failure(subject, "2")?.attemptsBeforeWipe == 1)
        #expect(await failure(subject, "3")?.code == .wiped)
        #expect(wiped.value)
        #expect(await !subject.isSet)
        #expect(await failure(subject, "135790")?.code == .appPasscodeNotSet)
    }

    @Test func appLockIsWipedAndSaysSo() async throws {
        let lock = AppLock(
            platform: device.platform, passcodePolicy: AppPasscodePolicy(delays: [0], wipeAfter: 2, rounds: 1_000), clock: clock)
        try await lock.configure(passcode: "135790")
        try await lock.enableBiometricUnlock(passcode: "135790")
        await lock.lock()
        _ = await bioAuthError { _ = try await lock.unlockWithPasscode("000000") }
        #expect(await bioAuthError { _ = try await lock.unlockWithPasscode("000001") }?.code == .wiped)
        #expect(await lock.state == .wiped)
        #expect(device.dumpKeychain().isEmpty)
        #expect(!ProtectedItemStore(platform: device.platform, service: "bioauth.app-lock").contains("bioauth.vault.biometric"))
    }

    /// Stored as a salted slow hash: the keychain holds no passcode, the hash uses the default
    /// 210 000 PBKDF2 rounds, and two devices with the same passcode store different verifiers.
    @Test func storedAsASaltedSlowHash() async throws {
        let other = EmulatedDevice.faceID()
        for target in [device, other] {
            let subject = AppPasscode(platform: target.platform, service: "app")
            #expect(subject.policy.rounds == 210_000)
            try await subject.set("135790")
            _ = try await subject.verify("135790")
        }
        let mine = try #require(device.dumpKeychain().first { $0.account == "bioauth.app-passcode" })
        let theirs = try #require(other.dumpKeychain().first { $0.account == "bioauth.app-passcode" })
        #expect(mine.data != theirs.data)
        let text = String(decoding: mine.data.data, as: UTF8.self)
        #expect(!text.contains("135790"))
        #expect(text.contains("210000"))
        let record = try JSONSerialization.jsonObject(with: mine.data.data) as! [String: Any]
        #expect(Data(base64Encoded: record["salt"] as! String)?.count == 16)
    }

    /// Moving the date forward does not skip a delay: it must also pass on the uptime clock.
    @Test func movingTheDateDoesNotSkipTheDelay() async throws {
        let subject = passcode(AppPasscodePolicy(delays: [30], rounds: 1_000))
        try await subject.set("135790")
        #expect(await failure(subject, "000000")?.retryAfter == 30)
        clock.advance(by: 86_400)  // Settings › General › Date & Time, a day ahead
        let locked = await failure(subject, "135790")
        #expect(locked?.code == .passcodeTemporarilyLocked && locked?.retryAfter == 30)
        uptime.advance(by: 30)
        _ = try await subject.verify("135790")
    }

    /// A restart resets the uptime clock; the delay then starts again rather than vanishing.
    @Test func aRestartStartsTheDelayAgain() async throws {
        let subject = passcode(AppPasscodePolicy(delays: [60], rounds: 1_000))
        try await subject.set("135790")
        _ = await failure(subject, "000000")
        wait(20)
        uptime.set(Date(timeIntervalSinceReferenceDate: 5))  // restarted: uptime is small again
        clock.advance(by: 3_600)
        #expect(await failure(subject, "135790")?.retryAfter == 60)
        uptime.advance(by: 60)
        _ = try await subject.verify("135790")
    }

    /// A dump of the keychain (a jailbroken phone, a forensic image) holds the salt, rounds,
    /// verifier and the sealed device secret — and still cannot test a guess: even the right
    /// passcode does not reproduce the verifier without the Secure Enclave of that phone.
    @Test func aKeychainDumpAloneCannotTestAGuess() async throws {
        let subject = AppPasscode(platform: device.platform, service: "app", policy: AppPasscodePolicy(rounds: 1_000))
        try await subject.set("135790")
        let (salt, verifier, sealed) = try dumpedVerifier()
        #expect(sealed.count == 65 + 32 + 16, "ECIES: ephemeral key, secret, tag")
        // The offline attacker's best try, with the right passcode: PBKDF2 alone, or with a guessed secret.
        let stretched = try SlowHash.derive("135790", salt: salt, rounds: 1_000, outputByteCount: 32)
        for guessedSecret in [Data(), Data(count: 32), SecretBytes.random(count: 32).data] {
            let material = SymmetricKey(data: stretched + guessedSecret)
            let candidate = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: material, salt: salt, info: Data("BioAuth app passcode v2 verifier".utf8), outputByteCount: 32)
            #expect(candidate.withUnsafeBytes { Data($0) } != verifier)
        }
        #expect(!stretched.starts(with: verifier.prefix(8)), "the verifier is not a slice of the PBKDF2 output")
        // On the phone the same passcode works: the enclave opens the secret.
        _ = try await subject.verify("135790")
    }

    /// The limit of the design, played: code running inside the app (a jailbreak tweak, Frida, a
    /// malicious SDK) asks the enclave to open the device secret — one call, no user presence —
    /// and then tests guesses offline, never touching the attempt counter. The counter binds the
    /// app's own UI, not code in its process (`docs/ThreatModel.md`, "Runs code inside the app").
    @Test func codeInsideTheAppOpensTheDeviceSecretOnceAndThenGuessesOffline() async throws {
        let subject = AppPasscode(platform: device.platform, service: "app", policy: AppPasscodePolicy(rounds: 1_000))
        try await subject.set("000042")
        let (salt, verifier, sealed) = try dumpedVerifier()
        let prompts = device.promptCount
        let secret = try device.platform.enclave.decrypt(tag: "app.app-passcode.device-key", ciphertext: sealed, context: nil)
        #expect(device.promptCount == prompts, "the device key needs no user presence")
        var found: String?
        for guess in (0..<100).map({ String(format: "%06d", $0) }) {
            let stretched = try SlowHash.derive(guess, salt: salt, rounds: 1_000, outputByteCount: 32)
            let candidate = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: stretched + secret.data), salt: salt,
                info: Data("BioAuth app passcode v2 verifier".utf8), outputByteCount: 32)
            if candidate.withUnsafeBytes({ Data($0) }) == verifier {
                found = guess
                break
            }
        }
        #expect(found == "000042")
        #expect(try await subject.attempts().failures == 0, "43 guesses, none counted")
    }

    /// Without a Secure Enclave the passcode is refused unless the weaker, explicit choice is made.
    @Test func aDeviceWithoutASecureEnclaveNeedsAnExplicitChoice() async throws {
        let plain = EmulatedDevice(configuration: .init(hasSecureEnclave: false))
        let strict = AppPasscode(platform: plain.platform, service: "app", policy: AppPasscodePolicy(rounds: 1_000))
        #expect(await bioAuthError { try await strict.set("135790") }?.code == .secureEnclaveUnavailable)
        let weaker = AppPasscode(
            platform: plain.platform, service: "app", policy: AppPasscodePolicy(rounds: 1_000, requiresSecureEnclave: false))
        try await weaker.set("135790")
        _ = try await weaker.verify("135790")
    }

    @Test func tooShortPasscodeIsRefused() async {
        let subject = passcode(AppPasscodePolicy(rounds: 1_000))
        #expect(await bioAuthError { try await subject.set("123") }?.code == .passcodeTooShort)
    }

    /// Constant time, not just equality: a mismatch in the first byte reads as many bytes as one in
    /// the last (an early-exit `==` reads one and stops, which leaks the matching prefix's length).
    @Test func constantTimeComparison() {
        let counter = ReadCounter()
        let secret = CountingBytes(bytes: Array(repeating: 7, count: 64), counter: counter)
        var firstWrong = Array(repeating: UInt8(7), count: 64)
        firstWrong[0] = 8
        var lastWrong = Array(repeating: UInt8(7), count: 64)
        lastWrong[63] = 8
        #expect(!constantTimeEquals(secret, CountingBytes(bytes: firstWrong, counter: counter)))
        let readsForFirst = counter.reset()
        #expect(!constantTimeEquals(secret, CountingBytes(bytes: lastWrong, counter: counter)))
        let readsForLast = counter.reset()
        #expect(readsForFirst == readsForLast && readsForFirst == 128)
        #expect(constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 3])))
        #expect(!constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 4])))
        #expect(!constantTimeEquals(Data([1, 2, 3]), Data([1, 2])))
        #expect(SecretBytes([1, 2]) == SecretBytes([1, 2]))
        #expect(SecretBytes([1, 2]).description == "SecretBytes(2 bytes, redacted)")
    }

    @Test func configuringTwiceIsRefusedSoTheVaultIsNeverOrphaned() async throws {
        let lock = AppLock(platform: device.platform, passcodePolicy: AppPasscodePolicy(rounds: 1_000), clock: clock)
        let vault = try await lock.configure(passcode: "135790")
        #expect(await bioAuthError { try await lock.configure(passcode: "864200") }?.code == .alreadyConfigured)
        await lock.lock()
        #expect(try await lock.unlockWithPasscode("135790") == vault)
    }

    @Test func changingThePasscodeKeepsTheVault() async throws {
        let lock = AppLock(platform: device.platform, passcodePolicy: AppPasscodePolicy(rounds: 1_000), clock: clock)
        let vault = try await lock.configure(passcode: "135790")
        try await lock.changePasscode(from: "135790", to: "864200")
        await lock.lock()
        #expect(await bioAuthError { _ = try await lock.unlockWithPasscode("135790") }?.code == .passcodeIncorrect)
        #expect(try await lock.unlockWithPasscode("864200") == vault)
    }
}

final class WipeFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var value: Bool { flag.withLock { $0 } }
}

/// Counts byte reads, to see whether a comparison stops early.
final class ReadCounter: @unchecked Sendable {
    private var reads = 0
    func read() { reads += 1 }
    func reset() -> Int { defer { reads = 0 }; return reads }
}

/// Bytes that count every read through the collection interface.
struct CountingBytes: DataProtocol, ContiguousBytes {
    let bytes: [UInt8]
    let counter: ReadCounter
    var regions: CollectionOfOne<Data> { CollectionOfOne(Data(bytes)) }
    var startIndex: Int { 0 }
    var endIndex: Int { bytes.count }
    subscript(position: Int) -> UInt8 {
        counter.read()
        return bytes[position]
    }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try bytes.withUnsafeBytes(body) }
}

extension AppPasscodeTests {
    /// What a keychain dump of the phone recovers of the app passcode's record: salt, verifier and sealed device secret.
    func dumpedVerifier() throws -> (salt: Data, verifier: Data, sealed: Data) {
        let dumped = try #require(device.dumpKeychain().first { $0.account == "bioauth.app-passcode" })
        let record = try #require(try JSONSerialization.jsonObject(with: dumped.data.data) as? [String: Any])
        return (
            try #require(Data(base64Encoded: record["salt"] as? String ?? "")),
            try #require(Data(base64Encoded: record["verifier"] as? String ?? "")),
            try #require(Data(base64Encoded: record["sealedDeviceSecret"] as? String ?? ""))
        )
    }
}
