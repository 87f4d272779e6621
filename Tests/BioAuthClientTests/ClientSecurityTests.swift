import BioAuth
import BioAuthTestServer
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthTesting
import Crypto
import Foundation
import Synchronization
import Testing

/// What the client refuses to sign, how it keeps tokens, and how often it prompts.
@Suite(.timeLimit(.minutes(2)))
struct ClientSecurityTests {
    /// One way a hostile server (or anything between) can change a challenge.
    struct Tampering: Sendable, CustomTestStringConvertible {
        let field: String
        let path: String
        let change: @Sendable (inout ChallengeEnvelope) -> Void
        var testDescription: String { "\(field) on \(path)" }
    }

    static let tamperings: [Tampering] = [
        Tampering(field: "purpose", path: "/v1/login/challenge") { $0.purpose = "registration" },
        Tampering(field: "relyingPartyId", path: "/v1/login/challenge") { $0.relyingPartyId = "evil.example" },
        Tampering(field: "userId", path: "/v1/login/challenge") { $0.userId = "mallory" },
        Tampering(field: "deviceId", path: "/v1/login/challenge") { $0.deviceId = "another-device" },
        Tampering(field: "expiresAt", path: "/v1/login/challenge") { $0.expiresAt += 86_400 * 365 },
        Tampering(field: "expiresAt", path: "/v1/login/challenge") { $0.expiresAt -= 3_600 },
        Tampering(field: "nonce", path: "/v1/login/challenge") { $0.nonce = "AAAA" },
        Tampering(field: "operationHash", path: "/v1/step-up/challenge") {
            $0.operationHash = Base64URL.encode(Data(SHA256.hash(data: Data("transfer 9,999.00 EUR to mallory".utf8))))
        },
        Tampering(field: "purpose", path: "/v1/step-up/challenge") {
            $0.purpose = "login"; $0.operationHash = nil
        },
        Tampering(field: "userId", path: "/v1/devices/registration/challenge") { $0.userId = "mallory" },
        Tampering(field: "relyingPartyId", path: "/v1/devices/registration/challenge") { $0.relyingPartyId = "evil.example" },
    ]

    @Test(arguments: tamperings)
    func aTamperedChallengeIsRefusedBeforeAnyPrompt(_ tampering: Tampering) async throws {
        let armed = Armed()
        try await Phone.with(tamper: { request, response in
            guard armed.isOn, request.path == tampering.path,
                var envelope = try? JSONDecoder().decode(ChallengeEnvelope.self, from: response.body)
            else {
                return response
            }
            tampering.change(&envelope)
            var tampered = response
            tampered.body = try! JSONEncoder().encode(envelope)
            return tampered
        }) { phone in
            if tampering.path == "/v1/devices/registration/challenge" {
                armed.isOn = true
                let before = phone.device.promptCount
                let error = await failure { try await phone.enrolAlice() }
                #expect(error?.code == .challengeMismatch && error?.field == tampering.field, "\(String(describing: error))")
                #expect(phone.device.promptCount == before)
                #expect(!phone.client.signer.hasKey, "the key made for a refused enrolment is not left behind")
                return
            }
            try await phone.enrolAlice()
            try await phone.client.logIn()
            armed.isOn = true
            let before = phone.device.promptCount
            let error = await failure {
                if tampering.path == "/v1/step-up/challenge" {
                    _ = try await phone.client.approve(operation: "transfer 1.00 EUR to bob")
                } else {
                    try await phone.client.logIn()
                }
            }
            #expect(error?.code == .challengeMismatch && error?.field == tampering.field, "\(String(describing: error))")
            #expect(phone.device.promptCount == before, "no prompt for a challenge the client refused")
        }
    }

    @Test func theClientRefusesAServerOfAnotherRelyingParty() async throws {
        try await Phone.with(relyingParty: "bank.example") { phone in
            let error = await failure { try await phone.enrolAlice() }
            #expect(error?.code == .challengeMismatch && error?.field == "relyingPartyId")
        }
    }

    @Test func theSessionIsAKeychainItemOnlyThisUnlockedDeviceReads() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            let session = try await phone.client.logIn()
            let records = try phone.device.platform.keychain.copyAttributes(
                KeychainQuery(service: phone.client.configuration.keychainService.rawValue))
            #expect(records.first { $0.account == "session" }?.accessibility == .whenUnlockedThisDeviceOnly)
            #expect(records.first { $0.account == "registration" }?.accessibility == .afterFirstUnlockThisDeviceOnly)

            // Locked: the session is "not available yet", never "logged out".
            phone.device.lockScreen()
            #expect(await failure { _ = try await phone.client.session() }?.code == .credentialsUnavailable)
            #expect(await failure { _ = try await phone.client.devices() }?.code == .credentialsUnavailable)
            #expect(try await phone.client.registration() != nil, "AfterFirstUnlock: readable on a locked device")
            phone.device.unlockScreen()
            #expect(try await phone.client.session()?.sessionID == session.sessionID)

            // Prewarmed at boot, before the first unlock: even the registration waits.
            phone.device.restart()
            #expect(await failure { _ = try await phone.client.registration() }?.code == .credentialsUnavailable)
            #expect(await failure { try await phone.client.logIn() }?.code == .credentialsUnavailable)
            phone.device.unlockScreen()
            #expect(try await phone.client.session()?.sessionID == session.sessionID)
            try await phone.client.logIn()
        }
    }

    @Test func anExpiredStoredSessionIsNoSession() async throws {
        try await Phone.with { phone in
            try await phone.enrolAlice()
            try await phone.client.logIn()
            phone.clock.advance(by: 13 * 3600)
            #expect(try await phone.client.session() == nil)
            #expect(await failure { _ = try await phone.client.approve(operation: "x") }?.code == .sessionExpired)
        }
    }

    @Test func secretsNeverReachDescriptionsOrDumps() async throws {
        try await Phone.with { phone in
            try await phone.client.signUp(username: "alice", password: "alice's long password")
            let primary = try await phone.client.signIn(username: "alice", password: "alice's long password")
            try await phone.client.enrol(primary, deviceName: "Alice's iPhone")
            let session = try await phone.client.logIn()
            let approval = try await phone.client.approve(operation: "transfer 100.00 EUR to bob")
            // An enrolment in progress (a second phone) keeps its primary session in the keychain.
            let tablet = phone.anotherPhone().client
            let tabletPrimary = try await tablet.signIn(username: "alice", password: "alice's long password")
            _ = try await tablet.requestEnrolment(tabletPrimary, deviceName: "Alice's iPad")
            let inProgress = try #require(try await tablet.enrolmentInProgress())
            var scanner = SecretScanner()
            scanner.add(tabletPrimary.token.value, label: "tablet's primary token")
            scanner.add(primary.token.value, label: "primary token")
            scanner.add(session.token.value, label: "session token")
            scanner.add(approval.token.value, label: "approval")
            scanner.add("alice's long password", label: "password")
            let signed = Wire.SignedChallenge(challengeId: "c", signature: "MEUCIQDsecretsignaturebytes")
            scanner.add("MEUCIQDsecretsignaturebytes", label: "signature")
            let wireSession = Wire.Session(token: session.token.value, sessionId: "s", userId: "alice", deviceId: "d", expiresAt: 1)
            let values: [Any] =
                [
                    primary, session, approval, primary.token, signed, inProgress, wireSession,
                    Wire.Approval(approval: approval.token.value, expiresAt: 1),
                    Wire.Credentials(username: "alice", password: "alice's long password"),
                    Wire.Redemption(approval: approval.token.value, operation: "b3A", userId: "alice"),
                    TransportRequest(
                        method: .post, path: "/v1/login/finish", body: try JSONEncoder().encode(signed), bearerToken: session.token),
                ] + ClientError.Code.all.map { ClientError($0, field: "userId", retryAfter: 3, device: BioAuthError(.keychainFailure)) }
            for value in values {
                var dumped = ""
                dump(value, to: &dumped)
                for text in ["\(value)", String(reflecting: value), dumped] {
                    #expect(scanner.leaks(in: text).isEmpty, "\(type(of: value)) leaks \(scanner.leaks(in: text))")
                }
            }
        }
    }

    @Test func alwaysPromptsForEverySignature() async throws {
        try await Phone.with(policy: .always) { phone in
            try await phone.enrolAlice()
            let before = phone.device.promptCount
            try await phone.client.logIn()
            _ = try await phone.client.approve(operation: "one")
            _ = try await phone.client.approve(operation: "two")
            #expect(phone.device.promptCount == before + 3)
        }
    }

    @Test func aSessionPolicyReusesOneMatchWithinItsWindowOnly() async throws {
        try await Phone.with(policy: .session(timeout: 60)) { phone in
            try await phone.enrolAlice()
            let before = phone.device.promptCount
            try await phone.client.logIn()
            _ = try await phone.client.approve(operation: "one")
            _ = try await phone.client.approve(operation: "two")
            #expect(phone.device.promptCount == before + 1)
            phone.passTime(61)
            _ = try await phone.client.approve(operation: "three")
            #expect(phone.device.promptCount == before + 2)
            // An enrollment change kills the key: the kept context signs nothing.
            phone.device.enrollBiometry()
            #expect(await failure { _ = try await phone.client.approve(operation: "four") }?.code == .reenrolmentRequired)
        }
    }

    @Test func anAppLifecyclePolicyLastsUntilTheAppEndsIt() async throws {
        try await Phone.with(policy: .appLifecycle) { phone in
            try await phone.enrolAlice()
            let before = phone.device.promptCount
            try await phone.client.logIn()
            phone.passTime(3600)
            _ = try await phone.client.approve(operation: "one")
            #expect(phone.device.promptCount == before + 1)
            await phone.client.endBiometricSession()
            _ = try await phone.client.approve(operation: "two")
            #expect(phone.device.promptCount == before + 2)
        }
    }
}

/// A switch a transport closure reads.
final class Armed: Sendable {
    private let state = Mutex(false)
    var isOn: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
