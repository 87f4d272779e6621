import BioAuth
import BioAuthAttestation
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import Foundation
import Testing

/// Issue 22 item 5: an app's own tests exercise the attested enrolment on Linux — the emulated
/// `DCAppAttestService` on the phone, a server that requires App Attest and trusts the emulator's root.
struct ClientAttestationTests {
    static let app = try! AppAttest.AppID("TEAM123456.dev.bioauth.app")

    static func requiringAppAttest(_ configuration: inout ServerConfiguration) {
        configuration.attestation.apple = .required(AppAttestVerifier(appIDs: [app], environments: [.development], roots: [EmulatedAppAttest.testRoot]))
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
        try await Phone.with(device: { $0.appAttest = EmulatedAppAttest(appID: Self.app, isSupported: false) }, server: Self.requiringAppAttest) { phone in
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
