import BioAuth
import BioAuthCore
import BioAuthEmulator
import Crypto
import Foundation
import Logging

/// `bioauth demo`: the whole story — enrolment, biometric login, step-up — and each attack of the
/// reference notes, failing for the attacker. Every step checks what happened; the demo passes
/// only if all of them behaved as expected.
public struct Demo: Sendable {
    public struct Step: Codable, Sendable {
        public var step: Int
        public var part: String
        public var title: String
        public var ok: Bool
        public var detail: String
    }

    let json: Bool
    public init(json: Bool) { self.json = json }

    static let user = "alice"
    static let password = "correct horse battery staple"
    static let appPasscode = "246810"
    static let devicePasscode = "123456"
    static let operation = "transfer 100.00 EUR to bob"

    /// Runs the demo; returns whether every step behaved as expected.
    public func run() async throws -> Bool {
        let server = try await InProcessServer.start()
        defer { Task { await server.stop() } }
        let device = EmulatedDevice(configuration: .init(biometry: .faceID), passcode: Self.devicePasscode)
        let agent = DeviceAgent(device: device, server: ServerClient(baseURL: server.url))
        var quiet = Logger(label: "BioAuth.demo")
        quiet.logLevel = .critical
        let lock = AppLock(platform: device.platform, logger: quiet)
        var steps: [Step] = []

        func record(_ part: String, _ title: String, _ body: () async throws -> (Bool, String)) async {
            let number = steps.count + 1
            let result: (Bool, String)
            do { result = try await body() } catch { result = (false, "unexpected: \(error)") }
            let step = Step(step: number, part: part, title: title, ok: result.0, detail: result.1)
            emit(step, after: steps.last)
            steps.append(step)
        }

        header(server.url)
        var deviceID = ""
        var primary = ""
        var replay: (ServerClient.Reply, Data)?

        // MARK: The story
        await record("story", "Primary login") {
            primary = try await agent.primaryLogin(user: Self.user, password: Self.password)
            return (!primary.isEmpty, "alice signs in with her password; this primary session is the only kind that may enrol a device")
        }
        await record("story", "Device-key enrolment") {
            let before = device.promptCount
            deviceID = try await agent.enrol(primaryToken: primary, name: "Alice's iPhone")
            let key = try agent.signer.publicKey()
            let prompts = device.promptCount - before
            return (prompts == 1 && !deviceID.isEmpty,
                    "a P-256 key is created in the (emulated) Secure Enclave with .privateKeyUsage + .biometryCurrentSet; it signs the registration challenge (proof of possession, \(prompts) Face ID prompt); the server keeps only the public key \(key.fingerprint)")
        }
        await record("story", "App lock") {
            try await lock.configure(passcode: Self.appPasscode)
            try await lock.enableBiometricUnlock(passcode: Self.appPasscode)
            await lock.lock()
            let before = device.promptCount
            _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock BioAuth"))
            let prompts = device.promptCount - before
            let state = await lock.state
            return (prompts == 1 && state == .unlocked,
                    "an app passcode (salted PBKDF2, attempt limits) guards a vault key; Face ID unlocks it with \(prompts) prompt: the evaluated context is handed to the keychain read")
        }
        await record("story", "Biometric login") {
            let before = device.promptCount
            let challenge = try await agent.loginChallenge(user: Self.user, deviceID: deviceID)
            let signature = try await agent.sign(challenge, reason: "Sign in")
            let session = try await agent.finish("/v1/login/finish", challenge: challenge, signature: signature)
            replay = (challenge, signature)
            let devices = try await agent.server.get("/v1/devices", token: session["token"])
            let prompts = device.promptCount - before
            return (session.status == 200 && devices.status == 200 && prompts == 1,
                    "the server's 32-byte nonce, bound to alice, this device and 'localhost', is signed after \(prompts) Face ID prompt; the server rebuilds the message, verifies, consumes the challenge and opens a session")
        }
        await record("story", "Step-up approval") {
            let session = try await agent.login(user: Self.user, deviceID: deviceID)
            let approval = try await agent.stepUp(session: session, deviceID: deviceID, operation: Self.operation)
            let first = try await agent.redeem(approval: approval, operation: Self.operation)
            let second = try await agent.redeem(approval: approval, operation: Self.operation)
            return (first.status == 200 && second.status == 401,
                    "\"\(Self.operation)\" is hashed into the challenge; one signature yields a one-time approval: redeemed once (HTTP \(first.status)), refused the second time (HTTP \(second.status))")
        }

        // MARK: The attacks
        await record("attack", "Hooked evaluatePolicy (jailbreak, objection biometrics_bypass)") {
            device.jailbreakHookEnabled = true
            device.unscriptedAction = .noMatch  // the attacker's face
            await lock.lock()
            let unlock = await outcome { _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock BioAuth")) }
            let sign = await outcome { _ = try await agent.login(user: Self.user, deviceID: deviceID) }
            let challenge = try await agent.loginChallenge(user: Self.user, deviceID: deviceID)
            let forged = try await agent.finish("/v1/login/finish", challenge: challenge, signature: try P256.Signing.PrivateKey().signature(for: Data("x".utf8)).derRepresentation)
            device.jailbreakHookEnabled = false
            device.unscriptedAction = .match
            device.unlockDeviceWithPasscode(Self.devicePasscode)  // the owner clears the lockout the attacker caused
            let state = await lock.state
            return (unlock != nil && sign != nil && forged.status == 401 && state != .unlocked,
                    "evaluatePolicy now says yes to a stranger's face, but BioAuth never trusts that Bool: the keychain refused the vault key (\(unlock ?? "-")), the enclave refused to sign (\(sign ?? "-"): the stranger's failed matches locked Face ID out), and a forged signature got HTTP \(forged.status)")
        }
        await record("attack", "Someone who knows the device passcode enrols their face") {
            device.enrollBiometry()
            let keyGone = !agent.signer.hasKey
            let login = await outcome { _ = try await agent.login(user: Self.user, deviceID: deviceID) }
            let state = await lock.state
            let refused = await outcome { _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock BioAuth")) }
            _ = try await lock.unlockWithPasscode(Self.appPasscode)
            let reenrolPrimary = try await agent.primaryLogin(user: Self.user, password: Self.password, createIfMissing: false)
            let sameID = try await agent.enrol(primaryToken: reenrolPrimary, name: "Alice's iPhone", replacing: deviceID)
            let again = try await agent.login(user: Self.user, deviceID: deviceID)
            return (keyGone && login != nil && state == .lockedPasscodeRequired(.biometricSecretInvalidated) && refused != nil && sameID == deviceID && !again.isEmpty,
                    "the new face invalidated the .biometryCurrentSet key (\(login ?? "-")), so no server login is possible; the app lock demands the app passcode (\(state)); after it, alice re-enrols through her password login and the replaced key signs in again")
        }
        await record("attack", "Replayed signature") {
            guard let (challenge, signature) = replay else { return (false, "no earlier login to replay") }
            let reply = try await agent.finish("/v1/login/finish", challenge: challenge, signature: signature)
            return (reply.status == 401, "the login request of step 4, sent again byte for byte: HTTP \(reply.status) — its challenge was consumed by the first use")
        }
        await record("attack", "Stolen public key") {
            let publicKey = try agent.signer.publicKey()
            let mallory = ServerClient(baseURL: server.url)
            let malloryAgent = DeviceAgent(device: EmulatedDevice(configuration: .init(biometry: .faceID)), server: mallory)
            let token = try await malloryAgent.primaryLogin(user: "mallory", password: "mallory's own password")
            let challenge = try await mallory.post("/v1/devices/registration/challenge", ["name": "Stolen", "publicKey": Base64URL.encode(publicKey.spkiRepresentation)], token: token)
            let attempt = try await malloryAgent.finish("/v1/devices/registration/finish", challenge: challenge, signature: try P256.Signing.PrivateKey().signature(for: Data()).derRepresentation, token: token)
            let loginChallenge = try await agent.loginChallenge(user: Self.user, deviceID: deviceID)
            let login = try await agent.finish("/v1/login/finish", challenge: loginChallenge, signature: try P256.Signing.PrivateKey().signature(for: Data()).derRepresentation)
            return (attempt.status == 401 && login.status == 401,
                    "a public key is public: registering alice's key under mallory's account needs a signature by it (HTTP \(attempt.status)); logging in as alice's device needs one too (HTTP \(login.status))")
        }
        await record("attack", "Expired challenge") {
            let challenge = try await agent.loginChallenge(user: Self.user, deviceID: deviceID)
            let signature = try await agent.sign(challenge, reason: "Sign in")
            server.clock.advance(by: 61)
            let reply = try await agent.finish("/v1/login/finish", challenge: challenge, signature: signature)
            return (reply.status == 401, "a valid signature sent 61 s after the challenge was issued (TTL 60 s, checked in code): HTTP \(reply.status)")
        }
        await record("attack", "Brute-force burst") {
            var statuses: [Int] = []
            var retryAfter = ""
            for _ in 0..<32 {
                let challenge = try await agent.server.post("/v1/login/challenge", ["userId": Self.user, "deviceId": deviceID])
                if challenge.status != 200 {
                    statuses.append(challenge.status)
                    retryAfter = challenge.retryAfter ?? retryAfter
                    continue
                }
                let reply = try await agent.finish("/v1/login/finish", challenge: challenge, signature: try P256.Signing.PrivateKey().signature(for: Data()).derRepresentation)
                statuses.append(reply.status)
                if reply.status == 429 { retryAfter = reply.retryAfter ?? retryAfter }
            }
            let forged = statuses.filter { $0 == 401 }.count, refused = statuses.filter { $0 == 429 }.count
            return (forged > 0 && refused > 0 && !retryAfter.isEmpty,
                    "32 forged attempts from one address: \(forged) × 401, then \(refused) × 429 — the sending address is locked out for the rest of the window (Retry-After: \(retryAfter) s; counters in the database, shared by every instance). Forged signatures never count against the device or its owner, who can still sign in from anywhere else")
        }

        let passed = steps.allSatisfy(\.ok)
        footer(steps, passed)
        return passed
    }

    /// The error code an operation failed with, nil if it succeeded.
    func outcome(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as BioAuthError { return "\(error.code)" } catch let error as CLIError { return error.message } catch { return "\(type(of: error))" }
    }

    func header(_ url: String) {
        guard !json else { return }
        Console.line("BioAuth demo: an emulated iPhone with Face ID against bioauth-server at \(url)")
        Console.line("(in-process, temporary SQLite database). Each step checks what happened.")
    }

    func emit(_ step: Step, after previous: Step?) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            Console.line(String(decoding: (try? encoder.encode(step)) ?? Data(), as: UTF8.self))
            return
        }
        if step.part != previous?.part {
            Console.line(step.part == "story" ? "\nThe story" : "\nThe attacks — each must fail for the attacker")
        }
        Console.line("  \(step.ok ? "✔" : "✘") \(step.step). \(step.title)")
        Console.line("     \(step.detail)")
    }

    func footer(_ steps: [Step], _ passed: Bool) {
        let good = steps.filter(\.ok).count
        if json {
            Console.line(#"{"passed":\#(passed),"steps":\#(steps.count),"ok":\#(good)}"#)
        } else {
            Console.line(passed ? "\nAll \(steps.count) steps behaved as expected." : "\n\(steps.count - good) of \(steps.count) steps did NOT behave as expected.")
        }
    }
}
