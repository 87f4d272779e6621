import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthTestServer
import BioAuthTesting
import Foundation
import Testing

/// "Approve on my phone" with the code an app ships: the emulated phone's `BioAuthClient` lets a
/// screen in that asked through `ServerAPI` over the same HTTP.
@Suite(.timeLimit(.minutes(2)))
struct ClientCrossDeviceTests {
    @Test func thePhoneLetsAScreenInWithTheNumberItShows() async throws {
        try await Phone.with(server: { $0.crossDevice = CrossDevicePolicy() }) { phone in
            try await phone.enrolAlice()
            try await phone.client.logIn()
            let screen = ServerAPI(transport: URLSessionTransport(baseURL: URL(string: phone.server.url)!))
            let started = try await screen.startCrossDeviceSignIn(Wire.CrossDeviceStart(username: "alice"))
            let poll = Wire.CrossDevicePoll(pollToken: started.pollToken)
            #expect(try await screen.pollCrossDeviceSignIn(id: started.id, poll).status == "pending")

            let waiting = try await phone.client.signInRequests()
            let shown = try #require(waiting.first)
            #expect(waiting.count == 1 && shown.id == started.id && shown.text.hasPrefix("Sign in as alice on another screen"))
            // One tap is not enough: a number the screen does not show ends the request.
            let wrong = String(format: "%04d", (Int(started.number)! + 5_000) % 10_000)
            #expect(await failure { try await phone.client.approveSignIn(shown, number: wrong) }?.code == .authenticationFailed)
            let ended = try await screen.pollCrossDeviceSignIn(id: started.id, poll)
            #expect(ended.status == "ended" && ended.endedBy == "wrongNumber")

            let again = try await screen.startCrossDeviceSignIn(Wire.CrossDeviceStart(username: "alice"))
            let next = try #require(try await phone.client.signInRequests().first)
            let before = phone.device.promptCount
            try await phone.client.approveSignIn(next, number: again.number)
            #expect(phone.device.promptCount == before + 1)
            let approved = try await screen.pollCrossDeviceSignIn(id: again.id, Wire.CrossDevicePoll(pollToken: again.pollToken))
            let session = try #require(approved.session)
            #expect(approved.status == "approved" && session.userId == "alice")
            #expect(try await screen.devices(token: BearerToken(session.token)).count == 1)

            // A request the user did not start is refused from the phone.
            let stranger = try await screen.startCrossDeviceSignIn(Wire.CrossDeviceStart(username: "alice"))
            try await phone.client.denySignIn(try #require(try await phone.client.signInRequests().first))
            let denied = try await screen.pollCrossDeviceSignIn(id: stranger.id, Wire.CrossDevicePoll(pollToken: stranger.pollToken))
            #expect(denied.status == "ended" && denied.endedBy == "denied")
        }
    }
}
