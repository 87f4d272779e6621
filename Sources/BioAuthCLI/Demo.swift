import BioAuth
import BioAuthAttestation
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthTestServer
import Crypto
import Foundation
import Logging
import Synchronization

/// `bioauth demo`: the whole story — enrolment, biometric login, step-up — and each attack of the
/// reference notes, failing for the attacker. The phone's side is `BioAuthClient`, the code an app
/// ships; the attacks use its `ServerAPI` to send what no honest client would. Every step checks what happened; the demo passes
/// only if all of them behaved as expected.
public struct Demo: Sendable {
    let json: Bool
    public init(json: Bool) { self.json = json }

    /// Runs the demo; returns whether every step behaved as expected.
    public func run() async throws -> Bool {
        try await InProcessServer.with(server: Self.configureServer) { server in try await run(on: server) }
    }

    func run(on server: InProcessServer) async throws -> Bool {
        let device = EmulatedDevice(
            configuration: .init(biometry: .faceID, appAttest: EmulatedAppAttest(appID: Self.app, clock: server.clock)),
            passcode: Self.devicePasscode)
        let wire = Wiretap(URLSessionTransport(baseURL: URL(string: server.url)!))
        let client = BioAuthClient(
            configuration: .init(relyingPartyID: "localhost", clock: server.clock), platform: device.platform, transport: wire)
        // A browser on the web: anonymous calls, no device of its own.
        let browser = ServerAPI(transport: URLSessionTransport(baseURL: URL(string: server.url)!))
        let api = client.api
        let backend = BackendAPI(transport: wire, apiKey: server.apiKey)
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
        func forged() throws -> String { Base64URL.encode(try P256.Signing.PrivateKey().signature(for: Data("x".utf8)).derRepresentation) }

        header(server.url)
        var deviceID = ""
        var primary: PrimarySession?
        var replay: TransportRequest?
        var password = Self.password  // alice's, until her phone changes it

        // MARK: The story
        await record("story", "Primary login") {
            try await client.signUp(username: Self.user, password: Self.password)
            primary = try await client.signIn(username: Self.user, password: Self.password)
            return (primary != nil, "alice signs in with her password; this primary session is the only kind that may enrol a device")
        }
        await record("story", "Device-key enrolment") {
            guard let primary else { return (false, "no primary session") }
            let before = device.promptCount
            deviceID = try await client.enrol(primary, deviceName: "Alice's iPhone").deviceID
            let key = try client.signer.publicKey()
            let prompts = device.promptCount - before
            return (
                prompts == 1 && !deviceID.isEmpty,
                "a P-256 key is created in the (emulated) Secure Enclave with .privateKeyUsage + .biometryCurrentSet; it signs the registration challenge (proof of possession, \(prompts) Face ID prompt), and App Attest vouches that the genuine app made it; the server keeps only the public key \(key.fingerprint) and what the attestation proved"
            )
        }
        await record("story", "App lock") {
            try await lock.configure(passcode: Self.appPasscode)
            try await lock.enableBiometricUnlock(passcode: Self.appPasscode)
            await lock.lock()
            let before = device.promptCount
            _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock BioAuth"))
            let prompts = device.promptCount - before
            let state = await lock.state
            return (
                prompts == 1 && state == .unlocked,
                "an app passcode (PBKDF2 mixed with a secret only this phone's Secure Enclave opens, attempt limits) guards a vault key; Face ID unlocks it with \(prompts) prompt: the evaluated context is handed to the keychain read"
            )
        }
        await record("story", "Biometric login") {
            let before = device.promptCount
            try await client.logIn()
            replay = wire.last("/v1/login/finish")
            let devices = try await client.devices()
            let prompts = device.promptCount - before
            return (
                devices.contains { $0.isThisDevice } && prompts == 1,
                "the server's 32-byte nonce, bound to alice, this device and 'localhost', is checked by the client, then signed after \(prompts) Face ID prompt; the server rebuilds the message, verifies, consumes the challenge and opens a session"
            )
        }
        await record("story", "Step-up approval") {
            let approval = try await client.approve(operation: Self.operation)
            // The app hands the approval to its backend, which redeems it with its API key for the
            // user its own session names.
            let redemption = approval.redemption(userID: "alice")
            let first = await outcome { _ = try await backend.redeem(redemption) }
            let second = await outcome { _ = try await backend.redeem(redemption) }
            return (
                first == nil && second == "authenticationFailed",
                "\"\(Self.operation)\" is hashed into the challenge and the client checks the hash before the prompt; one signature yields a one-time approval: the backend redeems it once with its API key, for alice, and is refused the second time (\(second ?? "-"))"
            )
        }

        await record("story", "Approve on my phone (a browser signs in)") {
            let started = try await browser.startCrossDeviceSignIn(Wire.CrossDeviceStart(username: Self.user))
            guard let request = try await client.signInRequests().first(where: { $0.id == started.id }) else {
                return (false, "the phone does not list the browser's request")
            }
            let before = device.promptCount
            try await client.approveSignIn(request, number: started.number)  // the number the user reads off the browser
            let prompts = device.promptCount - before
            let polled = try await browser.pollCrossDeviceSignIn(id: started.id, Wire.CrossDevicePoll(pollToken: started.pollToken))
            return (
                polled.state == .approved && polled.session != nil && prompts == 1 && !request.text.contains(started.number),
                "a browser without a passkey asks; the phone lists \"\(request.text)\" — the server's words, never the number — the user types the browser's \(started.number.count)-digit number, \(prompts) Face ID prompt signs text and number, and the browser's poll collects a session that ranks like a password"
            )
        }
        await record("story", "A passkey on the laptop, approved by the phone") {
            // The laptop's browser: alice's password, then a passkey (a software authenticator
            // plays the platform's) that waits for her phone, because the account has a device.
            let laptop = SoftwarePasskey(origin: Self.webOrigin)
            let signedIn = try await browser.passwordLogin(Wire.PasswordLogin(username: Self.user, password: password))
            let token = BearerToken(signedIn.token)
            let options = try await browser.passkeyRegistrationChallenge(.init(name: "Alice's laptop"), token: token)
            let finish = Wire.PasskeyRegistrationFinish(challengeId: options.challengeId, credential: try laptop.register(options))
            guard case .awaitingApproval(let held) = try await browser.finishPasskeyRegistration(finish, token: token),
                let bindingCode = held.bindingCode,
                let request = try await client.enrolmentRequests().first(where: { $0.id == held.id })
            else { return (false, "the passkey did not wait for the phone") }
            let before = device.promptCount
            try await client.approveEnrolment(request, bindingCode: bindingCode)  // the code the laptop shows
            let prompts = device.promptCount - before
            let passkey = try await browser.completePasskeyRegistration(.init(enrolmentRequestId: held.id), token: token)
            let login = try await browser.passkeyLoginChallenge(.init(username: Self.user))
            let session = try await browser.finishPasskeyLogin(
                Wire.PasskeyLoginFinish(challengeId: login.challengeId, credential: try laptop.authenticate(login)))
            return (
                session.deviceId == passkey.id && prompts == 1,
                "the laptop registers a passkey under alice's password session; the account has a phone, so it waits until the phone approves \"\(request.approvalText)\" with the laptop's binding code (\(prompts) Face ID prompt); then the passkey signs in on its own, a WebAuthn assertion with user verification, into a device session"
            )
        }
        await record("story", "DPoP: tokens bound to the phone") {
            guard let session = try await client.session() else { return (false, "no session") }
            let devices = try await client.devices()
            return (
                session.token.isDPoPBound && !devices.isEmpty,
                "the login carried a proof by a second Secure Enclave key (no prompt: it proves the device, not the user): the session, refresh and access tokens are bound to it (RFC 9449), and every call sends a fresh proof"
            )
        }

        // MARK: The attacks
        await record("attack", "Stolen DPoP-bound token (a log, a proxy, a backup)") {
            guard let session = try await client.session() else { return (false, "no session") }
            let stolen = await outcome { _ = try await api.devices(token: BearerToken(session.token.value)) }
            let owner = await outcome { _ = try await client.devices() }
            return (
                stolen == "authenticationFailed" && owner == nil,
                "the same token sent from elsewhere without the phone's key: \(stolen ?? "accepted"); the phone, with its proofs, carries on"
            )
        }
        await record("attack", "Wrong number (someone talks the owner into typing another)") {
            let started = try await browser.startCrossDeviceSignIn(Wire.CrossDeviceStart(username: Self.user))
            guard let request = try await client.signInRequests().first(where: { $0.id == started.id }) else {
                return (false, "the phone does not list the request")
            }
            let wrong = String(format: "%04d", (Int(started.number)! + 1) % 10_000)
            let approval = await outcome { try await client.approveSignIn(request, number: wrong) }
            let polled = try await browser.pollCrossDeviceSignIn(id: started.id, Wire.CrossDevicePoll(pollToken: started.pollToken))
            return (
                approval == "authenticationFailed" && polled.state == .ended && polled.ending == .wrongNumber && polled.session == nil,
                "the phone signed text and a number the asking screen never showed: refused (\(approval ?? "accepted")), and the request ended (\(polled.endedBy ?? "-")) — the screen must start again"
            )
        }
        await record("attack", "Hooked evaluatePolicy (jailbreak, objection biometrics_bypass)") {
            device.jailbreakHookEnabled = true
            device.unscriptedAction = .noMatch  // the attacker's face
            await lock.lock()
            let unlock = await outcome { _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock BioAuth")) }
            let sign = await outcome { try await client.logIn() }
            let challenge = try await api.loginChallenge(Wire.LoginChallengeRequest(userId: Self.user, deviceId: deviceID))
            let forgery = await outcome {
                _ = try await api.finishLogin(Wire.SignedChallenge(challengeId: challenge.challengeId, signature: try forged()))
            }
            device.jailbreakHookEnabled = false
            device.unscriptedAction = .match
            device.unlockDeviceWithPasscode(Self.devicePasscode)  // the owner clears the lockout the attacker caused
            let state = await lock.state
            return (
                unlock != nil && sign != nil && forgery == "authenticationFailed" && state != .unlocked,
                "evaluatePolicy now says yes to a stranger's face, but BioAuth never trusts that Bool: the keychain refused the vault key (\(unlock ?? "-")), the enclave refused to sign (\(sign ?? "-"): the stranger's failed matches locked Face ID out), and a forged signature was refused (\(forgery ?? "-"))"
            )
        }
        await record("attack", "Tampered challenge (a hostile server or proxy asks to sign for another account)") {
            let before = device.promptCount
            wire.tamper = { request, response in
                guard request.path == "/v1/login/challenge",
                    var envelope = try? JSONDecoder().decode(ChallengeEnvelope.self, from: response.body)
                else { return response }
                envelope.userId = "mallory"
                var tampered = response
                tampered.body = (try? JSONEncoder().encode(envelope)) ?? response.body
                return tampered
            }
            let login = await outcome { try await client.logIn() }
            wire.tamper = nil
            let prompts = device.promptCount - before
            return (
                login == "challengeMismatch" && prompts == 0,
                "the challenge came back bound to another user: the client compares purpose, relying party, user, device, operation hash and expiry with what it asked for, refuses (\(login ?? "-")), and shows \(prompts) prompts — nothing is signed"
            )
        }
        await record("attack", "Phished password tries to take the phone away") {
            let phone = EmulatedDevice(configuration: .init(biometry: .faceID))
            let attacker = BioAuthClient(configuration: .init(relyingPartyID: "localhost"), platform: phone.platform, transport: wire)
            let phished = try await attacker.signIn(username: Self.user, password: password)
            var revokeReason: String?
            do throws(ClientError) { try await api.revokeDevice(id: deviceID, token: phished.token) } catch { revokeReason = error.reason }
            let endAll = await outcome { _ = try await api.revokeAllSessions(token: phished.token) }
            let request = try await attacker.requestEnrolment(phished, deviceName: "Spare phone")
            // Alice's phone shows what happened, with where it came from, and she answers it.
            try await client.logIn()
            let seen = try await client.securityEvents().first
            for pending in try await client.enrolmentRequests() { try await client.cancelEnrolment(pending) }
            let complete = await outcome { try await attacker.completeEnrolment(request, phished) }
            let ending = try await attacker.refresh(request, phished).ending
            // With the mailbox too, the attacker tries the lost-phone path: it only schedules the
            // removal a day ahead, and alice's phone sees it and cancels it.
            let removal = try await attacker.requestDeviceRemoval(deviceID: deviceID, phished)
            guard let removalCode = server.recoveryCode(for: removal.id) else { return (false, "no removal code was delivered") }
            let scheduled = try await attacker.confirmDeviceRemoval(removal, code: removalCode, phished)
            let pendingRemovals = try await client.deviceRemovals()
            for pending in pendingRemovals { try await client.cancelDeviceRemoval(pending) }
            try await client.changePassword(to: Self.newPassword)
            password = Self.newPassword
            let leftOver = await outcome { _ = try await api.devices(token: phished.token) }
            let stillThere = try await client.devices().contains { $0.id == deviceID && $0.revokedAt == nil }
            return (
                revokeReason == "deviceRequired" && endAll == "forbidden" && seen?.kind == "enrolment.requested"
                    && complete == "requestEnded" && ending == .cancelled
                    && scheduled.status == "scheduled" && pendingRemovals.map(\.id) == [removal.id] && leftOver == "authenticationFailed"
                    && stillThere,
                "the password may look but not remove: revoking alice's phone is refused (\(revokeReason ?? "accepted")), and so is ending her sessions (\(endAll ?? "accepted")); the attacker asks for a device instead — alice's phone lists it as \(seen?.kind ?? "-") from \(seen?.client ?? "-"), cancels it (the attacker's request ended: \(ending.map { "\($0)" } ?? "not ended"); enrolling with it: \(complete ?? "accepted")); with her mailbox too, the lost-phone path only schedules the phone's removal a day ahead (\(scheduled.status)), her phone lists it and cancels it; and she changes the password with one Face ID approval, which ends the attacker's password session (\(leftOver ?? "still open"))"
            )
        }
        await record("attack", "Someone who knows the device passcode enrols their face") {
            device.enrollBiometry()
            let login = await outcome { try await client.logIn() }
            let state = await lock.state
            let refused = await outcome { _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock BioAuth")) }
            _ = try await lock.unlockWithPasscode(Self.appPasscode)
            let again = try await client.signIn(username: Self.user, password: password)
            // The password alone does not re-key the device: this is alice's only device, so she
            // proves herself with a recovery code sent to her e-mail (here, a file).
            let passwordOnly = await outcome { try await client.reenrol(again) }
            let request = try await client.requestEnrolment(again)
            try await client.sendRecoveryCode(for: request, again)
            // While alice reads her mail, iOS kills the app; the relaunched app resumes from the keychain.
            let relaunched = BioAuthClient(configuration: client.configuration, platform: device.platform, transport: wire)
            guard let resumed = try await relaunched.enrolmentInProgress(), let pending = resumed.request, let primary = resumed.primary
            else {
                return (false, "the relaunched app found no enrolment in progress")
            }
            guard let code = server.recoveryCode(for: pending.id) else { return (false, "no recovery code was delivered") }
            try await relaunched.recover(pending, code: code, primary)
            let sameID = try await relaunched.completeEnrolment(pending, primary).deviceID
            let session = await outcome { try await client.logIn() }
            return (
                login == "reenrolmentRequired" && state == .lockedPasscodeRequired(.biometricSecretInvalidated) && refused != nil
                    && passwordOnly == "approvalRequired" && pending.id == request.id && sameID == deviceID && session == nil,
                "the new face invalidated the .biometryCurrentSet key — still found in the enclave, but the client knows it dead (\(login ?? "-")), so no server login is possible; the app lock demands the app passcode (\(state)); the password alone cannot re-key the device (\(passwordOnly ?? "accepted")): alice asks for a recovery code, the app is killed while she reads her e-mail, the relaunched app resumes from the keychain, and the replaced key signs in again"
            )
        }
        await record("attack", "Phished password (the attacker enrols their own phone)") {
            let phone = EmulatedDevice(
                configuration: .init(biometry: .faceID, appAttest: EmulatedAppAttest(appID: Self.app, clock: server.clock)))
            let attacker = BioAuthClient(configuration: .init(relyingPartyID: "localhost"), platform: phone.platform, transport: wire)
            let devicesBefore = try await client.devices().count
            let phished = try await attacker.signIn(username: Self.user, password: password)
            let enrol = await outcome { try await attacker.enrol(phished, deviceName: "Alice's iPhone") }
            let request = try await attacker.requestEnrolment(phished, deviceName: "Alice's iPhone")
            let complete = await outcome { try await attacker.completeEnrolment(request, phished) }
            try await client.logIn()
            let shown = try await client.enrolmentRequests()
            let devices = try await client.devices()
            return (
                enrol == "approvalRequired" && complete == "approvalRequired" && shown.map(\.id) == [request.id]
                    && devices.count == devicesBefore,
                "alice's password gets the attacker a primary session but no device: enrolment needs an approval from alice's phone or a recovery code from her e-mail (\(enrol ?? "accepted")); alice's phone would show \"\(shown.first?.approvalText ?? "-")\" — a key she does not recognise, so she never approves it"
            )
        }
        await record("attack", "Replayed signature") {
            guard let replay else { return (false, "no earlier login to replay") }
            let reply = try await wire.send(replay)
            return (
                reply.status == 401,
                "the login request of step 4, sent again byte for byte: HTTP \(reply.status) — its challenge was consumed by the first use"
            )
        }
        await record("attack", "Stolen public key") {
            let publicKey = try client.signer.publicKey()
            let mallory = BioAuthClient(
                configuration: .init(relyingPartyID: "localhost"),
                platform: EmulatedDevice(configuration: .init(biometry: .faceID)).platform, transport: wire)
            try await mallory.signUp(username: "mallory", password: "mallory's own password")
            let token = try await mallory.signIn(username: "mallory", password: "mallory's own password").token
            let challenge = try await api.registrationChallenge(
                Wire.RegistrationChallengeRequest(name: "Stolen", publicKey: Base64URL.encode(publicKey.spkiRepresentation)), token: token)
            // Mallory runs the genuine app on a real phone: the attestation passes, the signature cannot.
            let genuine = EmulatedAppAttest(appID: Self.app, clock: server.clock)
            let keyID = try genuine.generateKey()
            let attestation = try genuine.attestKey(
                keyID, clientDataHash: AttestationBinding.registrationHash(try challenge.message(), publicKey: publicKey.spkiRepresentation)
            )
            let finish = Wire.RegistrationFinish(
                challengeId: challenge.challengeId, signature: try forged(), appAttestKeyId: Base64URL.encode(keyID),
                appAttestation: Base64URL.encode(attestation))
            let attempt = await outcome { _ = try await api.finishRegistration(finish, token: token) }
            let loginChallenge = try await api.loginChallenge(Wire.LoginChallengeRequest(userId: Self.user, deviceId: deviceID))
            let login = await outcome {
                _ = try await api.finishLogin(Wire.SignedChallenge(challengeId: loginChallenge.challengeId, signature: try forged()))
            }
            return (
                attempt == "authenticationFailed" && login == "authenticationFailed",
                "a public key is public: registering alice's key under mallory's account needs a signature by it (\(attempt ?? "-")); logging in as alice's device needs one too (\(login ?? "-"))"
            )
        }
        await record("attack", "Re-signed app (a software key, or a copy of the app signed by another team)") {
            let mallory = BioAuthClient(
                configuration: .init(relyingPartyID: "localhost"),
                platform: EmulatedDevice(configuration: .init(biometry: .faceID)).platform, transport: wire)
            try await mallory.signUp(username: "mallory2", password: "mallory's other password")
            let session = try await mallory.signIn(username: "mallory2", password: "mallory's other password")
            let script = await outcome { try await mallory.enrol(session, deviceName: "Script") }
            let resignedApp = try AppAttest.AppID("EVILTEAM01.dev.bioauth.demo")
            let resigned = BioAuthClient(
                configuration: .init(relyingPartyID: "localhost", keyTag: "dev.bioauth.resigned"),
                platform: EmulatedDevice(
                    configuration: .init(biometry: .faceID, appAttest: EmulatedAppAttest(appID: resignedApp, clock: server.clock))
                ).platform,
                transport: wire)
            let copy = await outcome { try await resigned.enrol(session, deviceName: "Copy") }
            let enrolled = try await mallory.api.devices(token: session.token)
            return (
                script == "attestationRejected" && copy == "attestationRejected" && enrolled.isEmpty,
                "the server requires App Attest for \(Self.app): a key without an attestation (\(script ?? "accepted")) and a key attested by a copy of the app re-signed as \(resignedApp.teamID) (\(copy ?? "accepted")) are both refused at enrolment, audited, and nothing is stored — so no token ever claims a hardware key it cannot prove"
            )
        }
        await record("attack", "Expired challenge") {
            let challenge = try await api.loginChallenge(Wire.LoginChallengeRequest(userId: Self.user, deviceId: deviceID))
            let signature = try await client.signer.sign(challenge, prompt: Prompt(reason: "Sign in"))
            server.clock.advance(by: 61)
            let reply = await outcome {
                _ = try await api.finishLogin(
                    Wire.SignedChallenge(challengeId: challenge.challengeId, signature: Base64URL.encode(signature.derRepresentation)))
            }
            return (
                reply == "authenticationFailed",
                "a valid signature sent 61 s after the challenge was issued (TTL 60 s, checked in code): \(reply ?? "accepted")"
            )
        }
        await record("attack", "Brute-force burst") {
            var outcomes: [String] = []
            let forgery = try forged()
            for _ in 0..<32 {
                do throws(ClientError) {
                    let challenge = try await api.loginChallenge(Wire.LoginChallengeRequest(userId: Self.user, deviceId: deviceID))
                    _ = try await api.finishLogin(Wire.SignedChallenge(challengeId: challenge.challengeId, signature: forgery))
                    outcomes.append("accepted")
                } catch {
                    outcomes.append("\(error.code)")
                }
            }
            let refused = outcomes.filter { $0 == "authenticationFailed" }.count
            let owner = await outcome { try await client.logIn() }
            return (
                refused == 32 && owner == nil,
                "32 forged signatures from the attacker's address, sent as fast as it can: \(refused) × authentication failed, nothing accepted. A forgery cannot succeed by repetition, so it locks out nobody — not the device, not alice, not the address she may share with the attacker: she signs in with Face ID right after, from the same address (\(owner ?? "accepted")). The sender is throttled by the request limit (300 per 5 minutes per IPv4 address or IPv6 /64); wrong passwords, which can be guessed, lock out the address that sends them"
            )
        }

        let passed = steps.allSatisfy(\.ok)
        footer(steps, passed)
        return passed
    }
}
