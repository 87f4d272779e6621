import BioAuth
import BioAuthTestServer
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import Foundation
import Synchronization
import Testing

/// The lifecycle around an enrollment change as a real phone lives it: a dead key that is still
/// found, a relaunch in the middle of recovery, a locked screen, concurrent token requests.
@Suite(.timeLimit(.minutes(2)))
struct ClientLifecycleTests {
    static let password = "alice's long password"

    /// Every combination of what the platform may do (each UNCONFIRMED): the dead key found or not
    /// on lookup; the domain state readable on a fresh context (iOS 18 `domainState`), only after
    /// `canEvaluatePolicy` (`evaluatedPolicyDomainState`) or only after an evaluation; the dead
    /// key's signing refused as an OSStatus, an LAError or a CryptoTokenKit error.
    static let devices: [(EmulatedDevice.InvalidatedKeyLookup, EmulatedDevice.DomainStateAPI, EmulatedDevice.DeadKeyErrors)] =
        [EmulatedDevice.InvalidatedKeyLookup.succeeds, .fails].flatMap { lookup in
            [EmulatedDevice.DomainStateAPI.domainState, .evaluatedPolicyDomainState, .onlyAfterEvaluation].flatMap { api in
                EmulatedDevice.DeadKeyErrors.allCases.map { (lookup, api, $0) }
            }
        }

    @Test(arguments: devices)
    func aNewFaceMakesTheKeyDeadEvenWhenItIsStillFoundAndReenrolmentReplacesIt(
        lookup: EmulatedDevice.InvalidatedKeyLookup, domainState: EmulatedDevice.DomainStateAPI, deadKey: EmulatedDevice.DeadKeyErrors
    ) async throws {
        try await Phone.with(device: {
            $0.invalidatedKeyLookup = lookup; $0.domainStateAPI = domainState; $0.deadKeyErrors = deadKey
        }) { phone in
            let registration = try await phone.enrolAlice()
            try await phone.client.logIn()
            phone.device.enrollBiometry()  // someone who knows the passcode adds a face

            let before = phone.device.promptCount
            #expect(await failure { try await phone.client.logIn() }?.code == .reenrolmentRequired)
            // Told without a prompt where the domain state or the lookup tells; else after one match.
            let firstTry = lookup == .succeeds && domainState == .onlyAfterEvaluation ? 1 : 0
            #expect(phone.device.promptCount == before + firstTry)
            #expect(await failure { try await phone.client.logIn() }?.code == .reenrolmentRequired)
            #expect(phone.device.promptCount == before + firstTry, "once known dead, no more prompts")
            #expect(await phone.relaunched().credentialState() == .reenrolmentRequired, "the verdict is kept across a relaunch")

            let primary = try await phone.client.signIn(username: "alice", password: Self.password)
            #expect(
                await failure { try await phone.client.reenrol(primary) }?.code == .approvalRequired,
                "past alreadyEnrolled: the dead key is replaced")
            let request = try await phone.client.requestEnrolment(primary)
            #expect(request.replacing && request.deviceID == registration.deviceID)
            try await phone.client.sendRecoveryCode(for: request, primary)
            try await phone.client.recover(request, code: try #require(phone.server.recoveryCode(for: request.id)), primary)
            try await phone.client.completeEnrolment(request, primary)
            try await phone.relaunched().logIn()
            #expect(await phone.client.credentialState() == .signedIn)
        }
    }

    @Test func aKeyThatStillSignsIsNeverReplaced() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            let key = try phone.client.signer.publicKey()
            let primary = try await phone.client.signIn(username: "alice", password: Self.password)
            #expect(await failure { try await phone.client.reenrol(primary) }?.code == .alreadyEnrolled)
            #expect(await failure { _ = try await phone.client.requestEnrolment(primary) }?.code == .alreadyEnrolled)
            #expect(try phone.client.signer.publicKey() == key)
            try await phone.client.logIn()
        }
    }

    /// The same domain-state change without an enrollment change (a major OS update): the key
    /// still signs where the domain state is read only after a match.
    @Test func anOSUpdateThatChangesTheDomainStateAloneKeepsTheKeyWhereALoginTells() async throws {
        try await Phone.with(device: { $0.domainStateAPI = .onlyAfterEvaluation }) { phone in
            try await phone.enrolAlice()
            phone.device.changeDomainStateAsAfterOSUpdate()
            try await phone.client.logIn()
        }
    }

    /// iOS kills the app while the user reads the recovery code in Mail: a new client on the same
    /// phone picks up every step.
    @Test func everyRecoveryStepSurvivesARelaunch() async throws {
        try await Phone.with { phone in
            let registration = try await phone.enrolAlice()
            phone.device.enrollBiometry()
            #expect(await failure { try await phone.relaunched().logIn() }?.code == .reenrolmentRequired)

            let primary = try await phone.relaunched().signIn(username: "alice", password: Self.password)
            #expect(await failure { try await phone.relaunched().reenrol(primary) }?.code == .approvalRequired)
            #expect(await phone.relaunched().credentialState() == .enrolmentPending)

            let request = try await phone.relaunched().requestEnrolment(primary)
            let found = try #require(try await phone.relaunched().enrolmentInProgress())
            #expect(found.request == request && found.primary == primary && found.replacing)

            try await phone.relaunched().sendRecoveryCode(for: request, primary)
            let code = try #require(phone.server.recoveryCode(for: request.id))
            let resumed = try #require(try await phone.relaunched().enrolmentInProgress())
            let stored = try #require(resumed.request)
            let storedPrimary = try #require(resumed.primary)
            try await phone.relaunched().recover(stored, code: code, storedPrimary)
            #expect(try await phone.relaunched().refresh(stored, storedPrimary).isApproved)
            let done = try await phone.relaunched().completeEnrolment(stored, storedPrimary)
            #expect(done.deviceID == registration.deviceID)
            #expect(try await phone.relaunched().enrolmentInProgress() == nil)
            try await phone.relaunched().logIn()
        }
    }

    /// The documented re-key path, stopped after each step: the relaunched app calls `reenrol`
    /// and `requestEnrolment` again (as an app written from the steps does), and each resumes what
    /// is in progress — the same key, the same request, the code already sent still good, no new
    /// code spent — then the path goes on from there; `completeEnrolment` twice enrols once.
    @Test(arguments: 1...4)
    func reenrolmentResumesAfterARelaunchAtEveryStep(stoppedAfter step: Int) async throws {
        try await Phone.with { phone in
            let registration = try await phone.enrolAlice()
            phone.device.enrollBiometry()
            let primary = try await phone.relaunched().signIn(username: "alice", password: Self.password)
            #expect(await failure { try await phone.relaunched().reenrol(primary) }?.code == .approvalRequired)  // step 1
            let key = try phone.client.signer.publicKey()
            var request = step >= 2 ? try await phone.relaunched().requestEnrolment(primary) : nil
            if step >= 3, let request { try await phone.relaunched().sendRecoveryCode(for: request, primary) }
            let code = step >= 3 ? try request.map { try #require(phone.server.recoveryCode(for: $0.id)) } : nil
            if step >= 4, let request, let code { try await phone.relaunched().recover(request, code: code, primary) }

            // Relaunched after `step`; the app starts the documented path again, with a new sign-in.
            let again = try await phone.relaunched().signIn(username: "alice", password: Self.password)
            let prompts = phone.device.promptCount
            if step == 4 {
                let done = try await phone.relaunched().reenrol(again)  // approved meanwhile: completes it
                #expect(done.deviceID == registration.deviceID && phone.device.promptCount == prompts + 1)
            } else {
                #expect(await failure { try await phone.relaunched().reenrol(again) }?.code == .approvalRequired)
                let resumed = try await phone.relaunched().requestEnrolment(again)
                #expect(try phone.client.signer.publicKey() == key, "no new key")
                if let request { #expect(resumed.id == request.id && resumed.bindingCode == request.bindingCode, "no new request") }
                #expect(await failure { try await phone.relaunched().reenrol(again) }?.code == .approvalRequired)
                #expect(try await phone.relaunched().requestEnrolment(again).id == resumed.id)
                request = resumed
                let pending = try #require(request)
                if step < 3 { try await phone.relaunched().sendRecoveryCode(for: pending, again) }
                let typed = try #require(code ?? phone.server.recoveryCode(for: pending.id))
                #expect(phone.server.recoveryCode(for: pending.id) == typed, "no new code sent")
                try await phone.relaunched().recover(pending, code: typed, again)
                let done = try await phone.relaunched().completeEnrolment(pending, again)
                #expect(done.deviceID == registration.deviceID)
            }
            #expect(try phone.client.signer.publicKey() == key)
            let completed = try await phone.relaunched().completeEnrolment(try #require(request), again)
            #expect(completed.deviceID == registration.deviceID, "completing twice enrols once")
            try await phone.relaunched().logIn()
        }
    }

    /// The server enrolled the key but its answer never arrived (the app was killed, the network
    /// dropped): the relaunched app's `completeEnrolment` finds the device on the server and keeps it.
    @Test func aCompletionWhoseAnswerWasLostIsFoundOnTheServer() async throws {
        let dropFinish = Atomic<Bool>(false)
        try await Phone.with(tamper: { request, response in
            guard dropFinish.load(ordering: .relaxed), request.path.hasSuffix("/registration/finish") else { return response }
            return TransportResponse(status: 599, body: Data())
        }) { phone in
            let registration = try await phone.enrolAlice()
            phone.device.enrollBiometry()
            let primary = try await phone.client.signIn(username: "alice", password: Self.password)
            let request = try await phone.client.requestEnrolment(primary)
            try await phone.client.sendRecoveryCode(for: request, primary)
            try await phone.client.recover(request, code: try #require(phone.server.recoveryCode(for: request.id)), primary)
            dropFinish.store(true, ordering: .relaxed)
            #expect(await failure { try await phone.client.completeEnrolment(request, primary) } != nil)
            #expect(try await phone.relaunched().registration()?.deviceID == registration.deviceID)
            #expect(await phone.relaunched().credentialState() == .enrolmentPending)

            let prompts = phone.device.promptCount
            let done = try await phone.relaunched().completeEnrolment(request, primary)
            #expect(
                done.deviceID == registration.deviceID && phone.device.promptCount == prompts, "no prompt: the key is already the device's")
            try await phone.relaunched().logIn()
        }
    }

    /// A user of the backend's own login whose only phone saw a new face: the backend proves the
    /// person its own way and vouches for the request (`BackendAPI.vouch`); no code is sent.
    @Test func theBackendVouchesAfterItsOwnRecovery() async throws {
        try await Phone.with { phone in
            let backend = BackendAPI(transport: URLSessionTransport(baseURL: URL(string: phone.server.url)!), apiKey: phone.server.apiKey)
            func grant() async throws -> PrimarySession {
                let grant = try await backend.enrolmentGrant(userID: "user-42")
                return PrimarySession(
                    userID: grant.userId, token: BearerToken(grant.token),
                    expiresAt: Date(timeIntervalSince1970: TimeInterval(grant.expiresAt)))
            }
            let registration = try await phone.client.enrol(try await grant(), deviceName: "Bob's iPhone")
            phone.device.enrollBiometry()
            let primary = try await grant()
            #expect(await failure { try await phone.relaunched().reenrol(primary) }?.code == .approvalRequired)
            let request = try await phone.relaunched().requestEnrolment(primary)
            #expect(await failure { try await backend.vouch(forEnrolmentRequest: request.id, of: "someone-else") }?.code == .notFound)
            try await backend.vouch(forEnrolmentRequest: request.id, of: "user-42")
            #expect(await failure { try await backend.vouch(forEnrolmentRequest: request.id, of: "user-42") }?.code == .conflict)
            #expect(try await phone.relaunched().refresh(request, primary).isApproved)
            #expect(phone.server.recoveryCode(for: request.id) == nil, "no code was sent")
            #expect(try await phone.relaunched().completeEnrolment(request, primary).deviceID == registration.deviceID)
            try await phone.relaunched().logIn()
        }
    }

    /// The security delay from both ends: a password (with the mailbox) schedules the phone's
    /// removal; the phone lists it and cancels it, and still signs in.
    @Test func thePhoneCancelsARemovalAPasswordScheduled() async throws {
        try await Phone.with { phone in
            let registration = try await phone.enrolAlice()
            let browser = phone.anotherPhone().client
            let primary = try await browser.signIn(username: "alice", password: Self.password)
            let removal = try await browser.requestDeviceRemoval(deviceID: registration.deviceID, primary)
            #expect(removal.status == "awaitingCode" && removal.deviceId == registration.deviceID)
            let code = try #require(phone.server.recoveryCode(for: removal.id))
            let scheduled = try await browser.confirmDeviceRemoval(removal, code: code, primary)
            #expect(scheduled.status == "scheduled" && scheduled.executesAt != nil)
            try await phone.client.logIn()
            let listed = try await phone.client.deviceRemovals()
            #expect(listed.map(\.id) == [removal.id])
            let refused = await failure { try await browser.cancelDeviceRemoval(scheduled) }
            #expect(
                refused?.code == .notEnrolled || refused?.code == .sessionExpired,
                "a browser with a password cannot cancel: \(String(describing: refused))")
            try await phone.client.cancelDeviceRemoval(try #require(listed.first))
            #expect(try await phone.client.deviceRemovals().isEmpty)
            phone.passTime(86_401)
            try await phone.server.runMaintenance()
            try await phone.relaunched().logIn()
        }
    }

    @Test func aRelaunchBeforeTheServerAnsweredResumesWithTheSameKey() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            phone.device.enrollBiometry()
            let primary = try await phone.client.signIn(username: "alice", password: Self.password)
            _ = await failure { try await phone.client.reenrol(primary) }  // the replacement key is made, then approvalRequired
            let key = try phone.client.signer.publicKey()
            let resumed = try #require(try await phone.relaunched().enrolmentInProgress())
            #expect(resumed.request == nil, "the server was never asked")
            let request = try await phone.relaunched().requestEnrolment(primary)
            #expect(try phone.client.signer.publicKey() == key)
            #expect(request.approvalText.hasSuffix(key.fingerprint))
        }
    }

    @Test func anExpiredPrimarySessionIsNotOfferedForResuming() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            let second = phone.anotherPhone(biometry: .faceID).client
            let primary = try await second.signIn(username: "alice", password: Self.password)
            _ = try await second.requestEnrolment(primary, deviceName: "Alice's iPad")
            phone.passTime(16 * 60)
            let found = try #require(try await second.enrolmentInProgress())
            #expect(found.primary == nil && found.request != nil)
        }
    }

    @Test func abandoningAnEnrolmentLeavesNothingBehind() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            let second = phone.anotherPhone(biometry: .faceID).client
            let primary = try await second.signIn(username: "alice", password: Self.password)
            _ = try await second.requestEnrolment(primary, deviceName: "Alice's iPad")
            #expect(second.signer.hasKey)
            try await second.abandonEnrolment()
            #expect(try await second.enrolmentInProgress() == nil)
            #expect(!second.signer.hasKey, "the key registered nowhere is deleted")
            #expect(await second.credentialState() == .notEnrolled)
        }
    }

    /// A login tried on a locked phone sends nothing and forgets nothing ("never logged out").
    @Test func aLoginOnALockedPhoneChangesNothing() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            let session = try await phone.client.logIn()
            phone.device.lockScreen()
            #expect(await failure { try await phone.client.logIn() }?.code == .credentialsUnavailable)
            #expect(await failure { _ = try await phone.client.accessToken() }?.code == .credentialsUnavailable)
            #expect(await phone.client.credentialState() == .locked)
            phone.device.unlockScreen()
            #expect(try await phone.client.session()?.sessionID == session.sessionID)
            #expect(await phone.client.credentialState() == .signedIn)
        }
    }

    /// The key is usable only while unlocked (`WhenPasscodeSetThisDeviceOnly`): a phone that
    /// locks between the session read and the signature keeps its session too.
    @Test func aPhoneThatLocksDuringTheLoginKeepsItsSession() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            let session = try await phone.client.logIn()
            // The screen locks while the challenge is on its way.
            let locking = Phone.LockOnChallenge(device: phone.device)
            let client = BioAuthClient(
                configuration: .init(relyingPartyID: "localhost", clock: phone.clock), platform: phone.device.platform,
                transport: ClosureTransport { request in try await locking.send(request, to: phone.server.url) })
            #expect(await failure { try await client.logIn() }?.code == .credentialsUnavailable)
            phone.device.unlockScreen()
            #expect(try await client.session()?.sessionID == session.sessionID)
        }
    }

    @Test func twentyConcurrentCallersGetTwentyTokensFromOneRefresh() async throws {
        let refreshes = Mutex(0)
        try await Phone.with(tamper: { request, response in
            if request.path == "/v1/token/refresh" { refreshes.withLock { $0 += 1 } }
            return response
        }) { phone in
            try await phone.enrolAlice()
            try await phone.client.logIn()
            phone.passTime(290)  // the access token nears expiry
            let tokens = try await withThrowingTaskGroup(of: AccessToken.self) { group in
                for _ in 0..<20 { group.addTask { try await phone.client.accessToken() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(tokens.count == 20 && Set(tokens).count == 1)
            #expect(refreshes.withLock { $0 } == 1)
            let canRefresh = await phone.client.canRefresh
            let hasValidSession = await phone.client.hasValidSession
            #expect(canRefresh && hasValidSession)
        }
    }

    @Test func credentialStatesFollowTheLifecycle() async throws {
        try await Phone.with { phone in
            let states = await phone.client.credentialStates()
            var iterator = states.makeAsyncIterator()
            #expect(await iterator.next() == .notEnrolled)
            try await phone.enrolAlice()
            #expect(await iterator.next() == .signedOut)
            try await phone.client.logIn()
            #expect(await iterator.next() == .signedIn)
            let signedIn = await phone.client.hasValidSession
            #expect(signedIn)
            try await phone.client.logOut()
            #expect(await iterator.next() == .signedOut)
            let afterLogout = (await phone.client.hasValidSession, await phone.client.canRefresh)
            #expect(afterLogout == (false, false))
            phone.device.enrollBiometry()
            await phone.client.refreshCredentialState()  // the app came to the foreground
            #expect(await iterator.next() == .reenrolmentRequired)
        }
    }
}

extension Phone {
    /// A transport that locks the phone's screen once the login challenge is answered.
    struct LockOnChallenge: Sendable {
        let device: EmulatedDevice

        func send(_ request: TransportRequest, to url: String) async throws -> TransportResponse {
            let response = try await URLSessionTransport(baseURL: URL(string: url)!).send(request)
            if request.path == "/v1/login/challenge" { device.lockScreen() }
            return response
        }
    }
}
