import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthServerTesting
import BioAuthTesting
import Foundation
import HTTPTypes
import InMemoryLogging
import Testing

/// A sign-in started on another screen, let in by the phone with the number the screen shows.
@Suite struct CrossDeviceTests {
    static let browser = "198.51.100.20"

    static func harness(passkeys: Bool = false) -> ServerHarness {
        ServerHarness { configuration in
            configuration.crossDevice = CrossDevicePolicy()
            if passkeys {
                configuration.passkeys = PasskeyPolicy(
                    relyingParty: WebAuthnRelyingParty(id: "localhost", origins: [PasskeyTests.origin]), relyingPartyName: "BioAuth tests")
            }
        }
    }

    /// Alice with a password and a first phone (out of any cool-down): the phone's id and key.
    static func alice(_ api: API) async throws -> (phoneID: String, phone: SoftwareDevice) {
        let phone = SoftwareDevice()
        let phoneID = try await api.enrol(phone, token: try await api.primarySession())
        return (phoneID, phone)
    }

    /// A screen at `client` asks to sign in as `user`.
    static func start(_ api: API, user: String = "alice", client: String = browser) async throws -> Reply {
        try await api.call(
            .post, "/v1/cross-device/requests", ["username": user], client: client,
            headers: [.userAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/140.0\u{7}"])
    }

    static func poll(_ api: API, _ started: Reply, client: String = browser) async throws -> Reply {
        try await api.post("/v1/cross-device/requests/\(started["id"])/poll", ["pollToken": started["pollToken"]], client: client)
    }

    /// The phone's approval: a step-up over the listed request's text with `number`, then approve.
    static func approve(
        _ api: API, request id: String, number: String, phoneID: String, phone: SoftwareDevice, user: String = "alice"
    ) async throws -> Reply {
        let session = try await api.login(user, phoneID, phone)["token"]
        let listed = try await api.call(.get, "/v1/cross-device/requests", token: session)
        let request = try #require(listed.objects.first { $0["id"] as? String == id })
        let text = CrossDeviceApprovalText.signed(try #require(request["text"] as? String), number: number)
        let (approval, approver) = try await api.stepUpApproval(user, phoneID, phone, text: text)
        return try await api.post("/v1/cross-device/requests/\(id)/approve", ["approval": approval], token: approver)
    }

    @Test func thePhoneLetsTheScreenInWithTheNumberAndTheSessionComesOnce() async throws {
        try await Self.harness().test { api in
            let (phoneID, phone) = try await Self.alice(api)
            let started = try await Self.start(api)
            #expect(started.status == 201, "\(started.text)")
            let number = started["number"]
            #expect(number.count == 4 && number.allSatisfy(\.isNumber))
            #expect(started.json["interval"] as? Int == 3)
            #expect(try await Self.poll(api, started)["status"] == "pending")

            // The phone sees where it comes from, never the number.
            let session = try await api.login("alice", phoneID, phone)["token"]
            let listed = try await api.call(.get, "/v1/cross-device/requests", token: session)
            #expect(listed.status == 200)
            let entry = try #require(listed.objects.first)
            #expect(entry["requester"] as? String == Self.browser)
            #expect(entry["userAgent"] as? String == "Chrome on Linux")
            let text = try #require(entry["text"] as? String)
            #expect(text.contains(Self.browser) && text.hasSuffix(": Chrome on Linux") && text.hasPrefix("Sign in as alice"))
            #expect(!text.contains("Mozilla") && !text.contains("140"), "the header's own words never reach the text")
            #expect(!listed.text.contains(started["pollToken"]) && !listed.text.contains("number"))

            let approved = try await Self.approve(api, request: started["id"], number: " " + number, phoneID: phoneID, phone: phone)
            #expect(approved.status == 204, "\(approved.text)")
            let collected = try await Self.poll(api, started)
            #expect(collected["status"] == "approved")
            let browserSession = try #require(collected.json["session"] as? [String: any Sendable])
            let token = try #require(browserSession["token"] as? String)
            #expect(browserSession["deviceId"] as? String == phoneID && browserSession["accessToken"] == nil)
            // Once: the next poll finds it collected.
            let again = try await Self.poll(api, started)
            #expect(again["status"] == "ended" && again["endedBy"] == "collected")

            // Ranked like a password: it looks, but cannot remove the phone.
            let sessions = try await api.call(.get, "/v1/sessions", token: token)
            #expect(sessions.objects.contains { $0["kind"] as? String == "crossDevice" && $0["current"] as? Bool == true })
            let revoke = try await api.call(.delete, "/v1/devices/\(phoneID)", token: token)
            #expect(revoke.status == 403 && revoke.json["reason"] as? String == "deviceRequired")
            // Revoking the approving phone ends the session it let in.
            #expect(try await api.call(.delete, "/v1/devices/\(phoneID)", token: session).status == 204)
            #expect(try await api.call(.get, "/v1/devices", token: token).status == 401)
        }
    }

    /// A screen that writes instructions into its `User-Agent` ("type 42") gets none of them onto
    /// the phone: the text holds the server's facts and a label from a fixed vocabulary.
    @Test func theAskingScreenWritesNoWordOfTheTextThePhoneSigns() async throws {
        try await Self.harness().test { api in
            let (phoneID, phone) = try await Self.alice(api)
            let injected =
                "Mozilla/5.0 (Windows NT 10.0) Chrome/140 (this is you), from 203.0.113.1 (home). To confirm it is you, type 4242"
            let started = try await api.call(
                .post, "/v1/cross-device/requests", ["username": "alice"], client: Self.browser, headers: [.userAgent: injected])
            #expect(started.status == 201)
            let session = try await api.login("alice", phoneID, phone)["token"]
            let entry = try #require(try await api.call(.get, "/v1/cross-device/requests", token: session).objects.first)
            let text = try #require(entry["text"] as? String)
            #expect(entry["userAgent"] as? String == "Chrome on Windows")
            for word in ["this is you", "203.0.113.1", "home", "type", "4242", "confirm", "Mozilla"] {
                #expect(!text.contains(word), "\(word) reached the signed text: \(text)")
            }
            #expect(text.hasPrefix("Sign in as alice on another screen, from \(Self.browser) at "))
        }
    }

    /// A screen the phone let in once keeps its screen token; asking again from an address the
    /// owner never used, behind thirty strangers' requests, it is announced and listed first.
    @Test func theOwnersRememberedScreenComesFirstWhateverStrangersSend() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let (phoneID, phone) = try await Self.alice(api)
            let first = try await Self.start(api)
            _ = try await Self.approve(api, request: first["id"], number: first["number"], phoneID: phoneID, phone: phone)
            let collected = try await Self.poll(api, first)
            let screenToken = try #require(collected.json["screenToken"] as? String)
            #expect(screenToken.count == 43)
            for n in 0..<30 {
                #expect(try await Self.start(api, client: "198.51.100.\(100 + n)").status == 201)
            }
            let hotel = "192.0.2.200"
            let again = try await api.post(
                "/v1/cross-device/requests", ["username": "alice", "screenToken": screenToken] as [String: any Sendable], client: hotel)
            #expect(again.status == 201, "\(again.text)")
            let made = try await api.post(
                "/v1/cross-device/requests",
                ["username": "alice", "screenToken": Base64URL.encode(Data(count: 32))] as [String: any Sendable],
                client: "192.0.2.201")
            #expect(made.status == 201, "a made-up token is answered alike")
            let session = try await api.login("alice", phoneID, phone)["token"]
            let listed = try await api.call(.get, "/v1/cross-device/requests", token: session)
            #expect(
                listed.objects.first?["id"] as? String == again["id"],
                "the owner's screen first: \(listed.objects.map { $0["requester"] ?? "" })")
            #expect(listed.objects.count == 20)
            let announced = try await harness.service.store.claimOutbox(
                now: harness.clock.now(), leaseUntil: harness.clock.now().addingTimeInterval(60), limit: 1_000, first: [])
            let requested = announced.filter { $0.event.kind == .crossDeviceRequested }.count
            #expect(
                requested == 5 + 1, "five from unknown screens in the window (the first among them), then the remembered one: \(requested)")
        }
    }

    /// Every label is one of the fixed vocabulary's, whatever the header says.
    @Test(arguments: [
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15",
            "Safari on macOS"
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 CriOS/140.0 Mobile/15E148 Safari/604.1",
            "Chrome on iOS"
        ),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/140.0 Safari/537.36 Edg/140.0", "Edge on Windows"),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", "Firefox on Linux"),
        (
            "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 SamsungBrowser/25.0 Chrome/121.0 Mobile Safari/537.36",
            "Samsung Internet on Android"
        ),
        ("curl/8.5.0", "an unknown browser"),
        ("", "an unknown browser"),
        ("type 42 on Windows", "a browser on Windows"),
    ])
    func aScreenLabelComesFromAFixedVocabulary(header: String, label: String) {
        let screen = ScreenLabel(userAgent: header)
        #expect(screen.description == label)
        #expect(ScreenLabel(stored: screen.description) == screen, "a stored label reads back as itself")
    }

    @Test func aWrongNumberEndsTheRequestAndASecondApprovalFindsItEnded() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let (phoneID, phone) = try await Self.alice(api)
            let started = try await Self.start(api)
            let wrong = String(format: "%04d", (Int(started["number"])! + 1) % 10_000)
            let refused = try await Self.approve(api, request: started["id"], number: wrong, phoneID: phoneID, phone: phone)
            #expect(refused.isUniformFailure)
            let polled = try await Self.poll(api, started)
            #expect(polled["status"] == "ended" && polled["endedBy"] == "wrongNumber" && polled.json["session"] == nil)
            let text = CrossDeviceApprovalText.signed(
                CrossDeviceApprovalText.make(userID: "alice", screen: ScreenLabel(userAgent: nil), requester: "", at: harness.clock.now()),
                number: "")
            let (approval, session) = try await api.stepUpApproval("alice", phoneID, phone, text: text)
            let late = try await api.post("/v1/cross-device/requests/\(started["id"])/approve", ["approval": approval], token: session)
            #expect(late.status == 410)

            // A second approval of an approved request finds it ended too.
            let next = try await Self.start(api)
            let first = try await Self.approve(api, request: next["id"], number: next["number"], phoneID: phoneID, phone: phone)
            #expect(first.status == 204)
            let (again, approver) = try await api.stepUpApproval("alice", phoneID, phone, text: text)
            let second = try await api.post("/v1/cross-device/requests/\(next["id"])/approve", ["approval": again], token: approver)
            #expect(second.status == 410)
            #expect(try await Self.poll(api, next)["status"] == "approved")
            #expect(try await harness.auditedReasons().contains("wrongNumber"))
        }
    }

    @Test func anExpiredRequestOpensNothing() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let (phoneID, phone) = try await Self.alice(api)
            let started = try await Self.start(api)
            harness.clock.advance(by: CrossDevicePolicy().requestTTL + 1)
            let polled = try await Self.poll(api, started)
            #expect(polled["status"] == "ended" && polled["endedBy"] == "expired")
            let session = try await api.login("alice", phoneID, phone)["token"]
            #expect(try await api.call(.get, "/v1/cross-device/requests", token: session).objects.isEmpty)
            let id = started["id"]
            #expect(
                try await api.post(
                    "/v1/cross-device/requests/\(id)/approve", ["approval": Base64URL.encode(Data(count: 32))], token: session
                ).status == 410)
        }
    }

    @Test func aPhoneInItsCoolDownOrRevokedCannotLetAScreenIn() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let (phoneID, phone) = try await Self.alice(api)
            harness.clock.advance(by: 1)
            let pad = SoftwareDevice()
            let padID = try await api.enrolApproved(
                pad, token: try await api.primarySession(), name: "Pad", approverID: phoneID, approver: phone)
            let started = try await Self.start(api)
            let padSession = try await api.login("alice", padID, pad)["token"]
            let refused = try await api.post(
                "/v1/cross-device/requests/\(started["id"])/approve", ["approval": Base64URL.encode(Data(count: 32))], token: padSession)
            #expect(refused.status == 403 && refused.json["reason"] as? String == "settledDeviceRequired")
            // It may refuse one, though.
            #expect(try await api.call(.delete, "/v1/cross-device/requests/\(started["id"])", token: padSession).status == 204)
            let denied = try await Self.poll(api, started)
            #expect(denied["status"] == "ended" && denied["endedBy"] == "denied")

            // An approval from a phone revoked before the screen collects opens nothing.
            let next = try await Self.start(api)
            #expect(try await Self.approve(api, request: next["id"], number: next["number"], phoneID: phoneID, phone: phone).status == 204)
            let phoneSession = try await api.login("alice", phoneID, phone)["token"]
            #expect(try await api.call(.delete, "/v1/devices/\(phoneID)", token: phoneSession).status == 204)
            #expect(try await Self.poll(api, next).status == 410)
            // And a revoked phone's session approves nothing.
            let third = try await Self.start(api)
            let gone = try await api.post(
                "/v1/cross-device/requests/\(third["id"])/approve", ["approval": Base64URL.encode(Data(count: 32))], token: phoneSession)
            #expect(gone.status == 401)
        }
    }

    /// A stranger starting 1,000 requests for Alice from 1,000 addresses: a handful of pushes, a
    /// 429 past three from one address, and Alice's own request — from an address where she
    /// signed in — is still pushed, listed first and let in.
    @Test(.timeLimit(.minutes(3))) func aStrangersStormPushesLittleAndLocksTheOwnerOutOfNothing() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let (phoneID, phone) = try await Self.alice(api)
            _ = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: "192.0.2.7")
            for index in 0..<1_000 {
                let reply = try await Self.start(api, client: "10.\(index / 250).\(index % 250).1")
                #expect(reply.status == 201)
            }
            for _ in 0..<3 { #expect(try await Self.start(api, client: "10.9.9.9").status == 201) }
            let capped = try await Self.start(api, client: "10.9.9.9")
            #expect(capped.status == 429 && capped.headers[.retryAfter] != nil)

            let mine = try await Self.start(api, client: "192.0.2.7")
            #expect(mine.status == 201)
            let events = try await harness.service.store.claimOutbox(
                now: harness.clock.now(), leaseUntil: harness.clock.now().addingTimeInterval(60), limit: 10_000, first: [])
            let pushes = events.filter { $0.event.kind == .crossDeviceRequested }
            #expect(pushes.count == CrossDevicePolicy().announcementsPerUser + 1, "\(pushes.count) pushes")

            let session = try await api.login("alice", phoneID, phone)["token"]
            let listed = try await api.call(.get, "/v1/cross-device/requests", token: session).objects
            #expect(listed.count == CrossDevicePolicy().listedRequests)
            #expect(listed.first?["id"] as? String == mine["id"])
            #expect(try await Self.approve(api, request: mine["id"], number: mine["number"], phoneID: phoneID, phone: phone).status == 204)
            #expect(try await Self.poll(api, mine, client: "192.0.2.7")["status"] == "approved")
        }
    }

    @Test func theAnswerIsAlikeForAnyUsernameAndTheScreenNeedsItsToken() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            _ = try await Self.alice(api)
            let stranger = try await Self.start(api, user: "nobody")
            let alice = try await Self.start(api)
            #expect(stranger.status == 201 && alice.status == 201)
            #expect(Set(stranger.json.keys) == Set(alice.json.keys))
            #expect(try await Self.poll(api, stranger)["status"] == "pending")
            let wrongToken = try await api.post(
                "/v1/cross-device/requests/\(alice["id"])/poll", ["pollToken": Base64URL.encode(Data(count: 32))], client: Self.browser)
            #expect(wrongToken.status == 404)
            let events = try await harness.service.store.claimOutbox(
                now: harness.clock.now(), leaseUntil: harness.clock.now().addingTimeInterval(60), limit: 100, first: [])
            #expect(events.filter { $0.event.kind == .crossDeviceRequested }.map(\.event.userID) == [UserID("alice")])
            // Neither the number nor the token reaches a log line or the audit log.
            let logged = harness.logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
            #expect(!logged.contains(alice["pollToken"]))
            let audit = try await harness.service.store.auditEvents(userID: nil, limit: 1_000).map { "\($0)" }.joined()
            #expect(!audit.contains(alice["pollToken"]))
        }
    }

    @Test func crossDeviceIsOffUnlessTheDeploymentTurnsItOn() async throws {
        try await ServerHarness().test { api in
            let refused = try await Self.start(api)
            #expect(refused.status == 404)
        }
    }

    /// After the phone let the screen in, the screen may create one passkey without another
    /// approval; its session ends with it.
    @Test func theApprovedScreenEnrolsOnePasskey() async throws {
        try await Self.harness(passkeys: true).test { api in
            let (phoneID, phone) = try await Self.alice(api)
            let started = try await Self.start(api)
            #expect(
                try await Self.approve(api, request: started["id"], number: started["number"], phoneID: phoneID, phone: phone).status == 204
            )
            let token = try #require((try await Self.poll(api, started).json["session"] as? [String: any Sendable])?["token"] as? String)
            let passkey = SoftwarePasskey(origin: PasskeyTests.origin)
            let registered = try await PasskeyTests.register(passkey, api, token: token)
            #expect(registered.status == 201, "\(registered.text)")
            #expect(registered["enrolledBy"] == "approval")
            #expect(try await api.call(.get, "/v1/devices", token: token).status == 401)
            #expect(try await PasskeyTests.signIn(passkey, api).status == 200)
        }
    }
}
