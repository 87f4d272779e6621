import BioAuthClient
import BioAuthCore
import BioAuthTesting
import Foundation
import Testing
// CLIENT-GUIDE-TEST-BEGIN
import BioAuth
import BioAuthClient
import BioAuthEmulator
import BioAuthTestServer

@Test func loginNewFaceRecoveryLockedPhoneAndServerDown() async throws {
    let server = try await InProcessServer.start()
    let phone = EmulatedDevice(biometry: .faceID)  // the person at the prompt matches unless scripted
    func app() -> BioAuthClient {  // a fresh client each time: what a relaunch sees
        BioAuthClient(server: URL(string: server.url)!, relyingPartyID: "localhost", platform: phone.platform)
    }
    try await app().signUp(username: "alice", password: "alice's long password")
    let primary = try await app().signIn(username: "alice", password: "alice's long password")
    try await app().enrol(primary, deviceName: "Alice's iPhone")
    try await app().logIn()
    #expect(phone.promptCount == 2)

    // Someone who knows the device passcode adds a face: the key is dead, the app says so without a prompt.
    phone.enrollBiometry()
    let dead = await #expect(throws: ClientError.self) { try await app().logIn() }
    #expect(dead?.code == .reenrolmentRequired && phone.promptCount == 2)
    let again = try await app().signIn(username: "alice", password: "alice's long password")
    let refused = await #expect(throws: ClientError.self) { try await app().reenrol(again) }
    #expect(refused?.code == .approvalRequired)  // this is her only phone: a recovery code proves her
    let request = try await app().requestEnrolment(again)
    try await app().sendRecoveryCode(for: request, again)
    // iOS kills the app while alice reads her mail; the relaunched app finds the enrolment in progress.
    let resumed = try #require(try await app().enrolmentInProgress())
    let code = try #require(server.recoveryCode(for: request.id))  // what the e-mail says
    try await app().recover(try #require(resumed.request), code: code, try #require(resumed.primary))
    try await app().completeEnrolment(request, again)  // one prompt: the new key proves possession
    try await app().logIn()

    // A locked phone: nothing is sent, nothing is forgotten.
    phone.lockScreen()
    let locked = await #expect(throws: ClientError.self) { try await app().logIn() }
    #expect(locked?.code == .credentialsUnavailable)
    phone.unlockScreen()
    #expect(await app().credentialState() == .signedIn)

    // The server goes away.
    await server.stop()
    let offline = await #expect(throws: ClientError.self) { try await app().logIn() }
    #expect(offline?.code == .serverUnreachable)
}
// CLIENT-GUIDE-TEST-END

/// `docs/Client.md` prints the test above byte for byte.
struct ClientGuideExampleTests {
    @Test func theClientGuideShowsThisTestExactly() throws {
        #expect(
            try PackagePaths.document(
                "docs/Client.md", printsBlock: "CLIENT-GUIDE-TEST", of: "Tests/BioAuthClientTests/ClientGuideExampleTests.swift"),
            "docs/Client.md's app-side test differs from the one this file runs")
    }

    @Test func theErrorTableNamesEveryCode() throws {
        let guide = try PackagePaths.text("docs/Client.md")
        let table = try #require(
            guide.components(separatedBy: "### What each error asks of the app").last?.components(separatedBy: "###").first)
        for code in ClientError.Code.all { #expect(table.contains("`\(code)`"), "docs/Client.md's error table omits \(code)") }
    }
}
