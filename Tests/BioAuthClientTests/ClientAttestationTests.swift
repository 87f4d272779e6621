import BioAuth
import BioAuthAttestation
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import Foundation
import Synchronization
import Testing

/// Issue 22 item 5: an app's own tests exercise the attested enrolment on Linux — the emulated
/// `DCAppAttestService` on the phone, a server that requires App Attest and trusts the emulator's root.
struct ClientAttestationTests {
    static let app = try! AppAttest.AppID("TEAM123456.dev.bioauth.app")

    static func requiringAppAttest(_ configuration: inout ServerConfiguration) {
        configuration.attestation.apple = .required(
            AppAttestVerifier(appIDs: [app], environments: [.development], roots: [EmulatedAppAttest.testRoot]))
    }

    @Test func aPhoneWithAppAttestEnrolsAttested() async throws {
        try await Phone.with(
            device: { $0.appAttest = EmulatedAppAttest(appID: Self.app, clock: $0.clock) }, server: Self.requiringAppAttest
        ) { phone in
            try await phone.enrolAlice()
            _ = try await phone.client.logIn()
            let device = try #require(try await phone.client.devices().first)
            #expect(device.attestation?.format == "apple-appattest" && device.attestation?.appId == Self.app.description)
            #expect(device.attestation?.securityLevel == "secureEnclave" && device.attestation?.environment == "development")
            #expect(device.enrolledBy == "primaryLogin")
        }
    }

    @Test func aPhoneWithoutAppAttestIsRefusedAndKeepsNothing() async throws {
        // The Simulator: no App Attest. A server that requires it refuses; the key made for the
        // enrolment is deleted, and the phone can enrol once the server prefers attestation.
        try await Phone.with(
            device: { $0.appAttest = EmulatedAppAttest(appID: Self.app, isSupported: false) }, server: Self.requiringAppAttest
        ) { phone in
            try await phone.client.signUp(username: "alice", password: "alice's long password")
            let primary = try await phone.client.signIn(username: "alice", password: "alice's long password")
            let refused = await #expect(throws: ClientError.self) { try await phone.client.enrol(primary, deviceName: "Simulator") }
            #expect(refused?.code == .attestationRejected && refused?.field == "attestation")
            #expect(try await phone.client.registration() == nil)
            #expect(throws: (any Error).self) { try phone.client.signer.publicKey() }
        }
    }
}

extension ClientAttestationTests {
    @Test func aPhoneAssertsEachLoginAndApprovalWhereTheServerRequiresIt() async throws {
        let server: @Sendable (inout ServerConfiguration) -> Void = {
            Self.requiringAppAttest(&$0)
            $0.attestation.assertions = .required
        }
        try await Phone.with(device: { $0.appAttest = EmulatedAppAttest(appID: Self.app, clock: $0.clock) }, server: server) { phone in
            // The server refuses each of these without a valid assertion (AssertionLoginTests):
            // the client sends one, over this signature, every time.
            try await phone.enrolAlice()
            _ = try await phone.client.logIn()
            _ = try await phone.client.approve(operation: "Pay 10 EUR to Bob")
            _ = try await phone.client.logIn()
        }
    }
}

/// Issue 45 item 4: a reinstall takes the App Attest key and leaves the keychain. Under required
/// assertions the client attests a new key in the next login (or step-up) — no revocation, no
/// new enrolment — and asserts with it from then on.
extension ClientAttestationTests {
    static func requiringAssertions(_ configuration: inout ServerConfiguration) {
        Self.requiringAppAttest(&configuration)
        configuration.attestation.assertions = .required
    }

    /// The request bodies the phone sent to `path`, as JSON objects.
    final class Sent: Sendable {
        let bodies = Mutex<[String: [[String: any Sendable]]]>([:])
        func record(_ request: TransportRequest) {
            guard let body = request.body, let json = try? JSONSerialization.jsonObject(with: body) as? [String: any Sendable] else {
                return
            }
            bodies.withLock { $0[request.path, default: []].append(json) }
        }
        func fields(_ path: String) -> [Set<String>] { bodies.withLock { ($0[path] ?? []).map { Set($0.keys) } } }
    }

    @Test func aReinstalledAppAttestsANewKeyInItsNextLoginAndAssertsWithIt() async throws {
        let sent = Sent()
        try await Phone.with(
            device: { $0.appAttest = EmulatedAppAttest(appID: Self.app, clock: $0.clock) },
            tamper: { request, response in
                sent.record(request)
                return response
            }, server: Self.requiringAssertions
        ) { phone in
            try await phone.enrolAlice()
            _ = try await phone.client.logIn()
            phone.device.reinstallApp()
            let prompts = phone.device.promptCount
            _ = try await phone.client.logIn()
            #expect(phone.device.promptCount == prompts + 1, "one prompt: the login's own")
            _ = try await phone.client.approve(operation: "Pay 10 EUR to Bob")
            _ = try await phone.client.logIn()
            let logins = sent.fields("/v1/login/finish")
            #expect(logins.count == 3)
            #expect(
                logins[1].isSuperset(of: ["appAttestKeyId", "appAttestation"]) && !logins[1].contains("appAttestAssertion"),
                "the re-attesting login")
            #expect(logins[2].contains("appAttestAssertion") && !logins[2].contains("appAttestation"), "the new key asserts")
            #expect(sent.fields("/v1/step-up/finish").first?.contains("appAttestAssertion") == true)
            let events = try await phone.client.securityEvents()
            #expect(events.contains { $0.kind == "device.reattested" }, "the owner sees the app's key changed")
        }
    }

    /// Where a reinstall also takes the Secure Enclave key (unknown on iOS: configurable), no
    /// re-attestation can help: the client asks for re-enrolment, without a prompt or a request.
    @Test func aReinstallThatLosesTheDeviceKeyAsksForReenrolment() async throws {
        try await Phone.with(
            device: { $0.appAttest = EmulatedAppAttest(appID: Self.app, clock: $0.clock) }, server: Self.requiringAssertions
        ) { phone in
            try await phone.enrolAlice()
            phone.device.reinstallApp(keychain: .secureEnclaveKeysLost)
            let prompts = phone.device.promptCount
            let refused = await #expect(throws: ClientError.self) { try await phone.client.logIn() }
            #expect(refused?.code == .reenrolmentRequired && phone.device.promptCount == prompts, "\(String(describing: refused))")
            phone.device.reinstallApp(keychain: .erased)
            #expect(try await phone.client.registration() == nil)
        }
    }

    /// A server that answers that it cannot check the assertion (`missing` or `signature`: it does
    /// not hold this key) gets a re-attestation in a new login.
    @Test func aRefusedAssertionOfAnUnknownKeyIsAnsweredWithAReattestation() async throws {
        let sent = Sent()
        let refuseFirst = Mutex(true)
        try await Phone.with(
            device: { $0.appAttest = EmulatedAppAttest(appID: Self.app, clock: $0.clock) },
            tamper: { request, response in
                sent.record(request)
                guard request.path == "/v1/login/finish", sent.fields(request.path).count == 2, refuseFirst.withLock({ $0 }) else {
                    return response
                }
                refuseFirst.withLock { $0 = false }
                return TransportResponse(
                    status: 403, body: Data(#"{"error":"attestation_rejected","field":"appAttestAssertion","reason":"signature"}"#.utf8))
            }, server: Self.requiringAssertions
        ) { phone in
            try await phone.enrolAlice()
            _ = try await phone.client.logIn()
            _ = try await phone.client.logIn()
            let logins = sent.fields("/v1/login/finish")
            #expect(logins.count == 3 && logins[1].contains("appAttestAssertion") && logins[2].contains("appAttestation"), "\(logins)")
            _ = try await phone.client.logIn()
        }
    }
}
