import BioAuthCore
import BioAuthServer
import BioAuthTesting
import Foundation
import HTTPTypes
import Testing
import BioAuthServerTesting

/// Issue 43 item 4: the way back has no waiting room a stranger controls. Strangers' wrong
/// passwords slow password logins from every address the owner never used (the run's back-off);
/// the owner at a new address — a lost phone, a hotel — gets past it with a sign-in code sent to
/// their mailbox for that address, and the strangers' addresses keep waiting.
@Suite
struct SignInCodeTests {
    /// The owner's new network: an IPv6 /64 in a /48 nobody used before.
    static let hotel = "2001:db8:77:1::5"
    /// A stranger in another /64 of a different /48, with the phished password.
    static let stranger = "2001:db8:66:2::9"

    /// Alice, signed in from 203.0.113.1, then ten wrong passwords from ten strangers' addresses:
    /// the run's back-off is on.
    static func ownerAfterStrangersFailures(_ api: API) async throws {
        _ = try await api.primarySession("alice")
        for n in 0..<10 {
            #expect(
                try await api.post("/v1/login/password", ["username": "alice", "password": "wrong password"], client: "192.0.2.\(n)").status
                    == 401)
        }
    }

    /// The message the channel got last, waiting for the delivery (it happens after the answer).
    static func delivered(_ channel: CapturingRecoveryChannel, count: Int) async throws -> RecoveryMessage {
        for _ in 0..<500 where await channel.messages.count < count { try await Task.sleep(for: .milliseconds(10)) }
        let messages = await channel.messages
        try #require(messages.count == count, "\(messages.count) codes delivered, expected \(count)")
        return try #require(messages.last)
    }

    @Test func aSignInCodeLetsTheOwnerInAtANewAddressAndStrangersStillWait() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            try await Self.ownerAfterStrangersFailures(api)
            let password = ["username": "alice", "password": API.password]
            let waited = try await api.post("/v1/login/password", password, client: Self.hotel)
            #expect(waited.status == 429, "a new address waits after strangers' failures: \(waited.text)")

            #expect(try await api.post("/v1/login/password/code", ["username": "alice"], client: Self.hotel).status == 202)
            let message = try await Self.delivered(channel, count: 1)
            #expect(message.purpose == .signIn && message.userID == "alice" && message.clientAddress == "2001:db8:77::/48")
            #expect(message.text.contains(message.code.text) && message.text.contains("2001:db8:77::/48"))

            // The strangers' addresses, without a code, still wait (even with the phished password).
            #expect(try await api.post("/v1/login/password", password, client: "192.0.2.3").status == 429)
            let admitted = try await api.post(
                "/v1/login/password", ["username": "alice", "password": API.password, "signInCode": message.code.text], client: Self.hotel)
            #expect(admitted.status == 200, "the code lets the owner past the back-off: \(admitted.text)")
            // The hotel's network is known now: another /64 of it needs no code.
            #expect(try await api.post("/v1/login/password", password, client: "2001:db8:77:2::1").status == 200)
            let kinds = try await harness.service.store.auditEvents(userID: "alice", limit: 100).map(\.kind)
            #expect(kinds.contains(.signInCodeSent), "the owner's security events show the code was asked for")
        }
    }

    /// A code works only from the network it was sent for, with the right password, once; a code
    /// that does not match skips nothing — during the back-off it is refused untried, so codes
    /// cannot be guessed at all then, and made-up ones never lengthen the owner's wait.
    @Test func aCodeWorksOnlyForItsNetworkAndWrongCodesAreCounted() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            try await Self.ownerAfterStrangersFailures(api)
            _ = try await api.post("/v1/login/password/code", ["username": "alice"], client: Self.hotel)
            let code = try await Self.delivered(channel, count: 1).code.text
            // The stranger has the password and (from the mailbox, say) the owner's code: not for this network.
            let elsewhere = try await api.post(
                "/v1/login/password", ["username": "alice", "password": API.password, "signInCode": code], client: Self.stranger)
            #expect(elsewhere.status == 429, "not its network: the back-off holds \(elsewhere.text)")
            // The right code with a wrong password fails as a wrong password does.
            let wrongPassword = try await api.post(
                "/v1/login/password", ["username": "alice", "password": "wrong password", "signInCode": code], client: Self.hotel)
            #expect(wrongPassword.isUniformFailure)
            // Guessing codes at the hotel, during the back-off: each refused untried, nothing counted.
            var statuses: [Int] = []
            for n in 0..<40 {
                let guess = try await api.post(
                    "/v1/login/password", ["username": "alice", "password": API.password, "signInCode": "AAAA-AAAA-AA\(n % 10)A"],
                    client: "2001:db8:77:9::\(n)")
                statuses.append(guess.status)
            }
            #expect(statuses == Array(repeating: 429, count: 40), "\(statuses)")
            #expect(try await !harness.auditedReasons().contains("recoveryCodeRejected"), "no guess was tried")
            harness.clock.advance(by: 300)  // the next window
            let admitted = try await api.post(
                "/v1/login/password", ["username": "alice", "password": API.password, "signInCode": code], client: Self.hotel)
            #expect(admitted.status == 200, "\(admitted.text)")
            let again = try await api.post(
                "/v1/login/password", ["username": "alice", "password": API.password, "signInCode": code], client: Self.hotel)
            #expect(again.isUniformFailure, "a code works once: \(again.text)")
        }
    }

    /// The answer and the budget are the same for a username nobody has: the endpoint tells
    /// nobody which accounts exist, and a requester's codes run out after ten a day.
    @Test func signInCodesSayNothingAboutWhoExistsAndRunOut() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            _ = try await api.primarySession("alice")
            var answers: [String: [Int]] = [:]
            for username in ["alice", "nobody"] {
                for _ in 0..<11 {
                    answers[username, default: []].append(
                        try await api.post("/v1/login/password/code", ["username": username], client: Self.stranger).status)
                }
            }
            #expect(answers["alice"] == answers["nobody"], "\(answers)")
            #expect(answers["alice"] == Array(repeating: 202, count: 10) + [429])
            _ = try await Self.delivered(channel, count: 10)
            #expect(await channel.messages.allSatisfy { $0.userID == "alice" }, "nothing is sent for a username nobody has")
            // The owner's own network has a budget of its own.
            #expect(try await api.post("/v1/login/password/code", ["username": "alice"], client: Self.hotel).status == 202)
            // No code in the audit log.
            let codes = await channel.messages.map(\.code.text)
            let audit = try await harness.service.store.auditEvents(userID: nil, limit: 1_000).map { "\($0)" }.joined()
            #expect(!codes.contains { audit.contains($0) || audit.contains(CrockfordCode.normalised($0)) })
        }
    }

    @Test func withoutARecoveryChannelThereIsNoCode() async throws {
        try await ServerHarness().test { api in
            let reply = try await api.post("/v1/login/password/code", ["username": "alice"])
            #expect(reply.status == 403 && reply["reason"] == "noRecoveryChannel", "\(reply.text)")
            let malformed = try await api.post(
                "/v1/login/password", ["username": "alice", "password": API.password, "signInCode": "no/slashes"])
            #expect(malformed.status == 400 && malformed["field"] == "signInCode", "\(malformed.text)")
        }
    }

    /// Five addresses, ten codes each: the owner's mailbox gets the user's day of codes (20) and
    /// no more, whichever kind asks — sign-in codes here, removal and enrolment codes alike.
    @Test func theOwnersMailboxGetsAtMostADaysCodesFromEveryAddress() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            _ = try await api.primarySession()
            var statuses: [Int] = []
            for address in 0..<5 {
                for _ in 0..<10 {
                    statuses.append(
                        try await api.post("/v1/login/password/code", ["username": "alice"], client: "198.51.100.\(address)").status)
                }
            }
            #expect(statuses.filter { $0 == 202 }.count == 20 && statuses.filter { $0 == 429 }.count == 30, "\(statuses)")
            _ = try await Self.delivered(channel, count: 20)  // deliveries follow the answers
            #expect(await channel.messages.count == 20, "the owner's mailbox got a day's codes, not fifty")
            harness.clock.advance(by: 86_400)
            #expect(
                try await api.post("/v1/login/password/code", ["username": "alice"], client: "198.51.100.9").status == 202, "the next day")
        }
    }
}
