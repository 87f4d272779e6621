import BioAuthCore
import BioAuthServer
import BioAuthTesting
import Crypto
import Foundation
import HTTPTypes
import InMemoryLogging
import Testing
import BioAuthServerTesting

/// Issue 42: the phone outranks the password. Each test plays the attacker from an address of
/// their own with what a phishing page gets (the password) and, where said, the owner's mailbox.
@Suite
struct AccountRankTests {
    static let attacker = "198.51.100.66"
    static let payment = Base64URL.encode(Data("Pay 5000.00 EUR to Mallory".utf8))

    /// The owner with one phone (the first device, exempt from the cool-down), signed in from 203.0.113.1.
    static func owner(_ api: API) async throws -> (phoneID: String, phone: SoftwareDevice, session: Reply) {
        let (session, phoneID, phone) = try await AccessTokenTests.login(api)
        return (phoneID, phone, session)
    }

    /// With the password alone the attacker can look, and leave, but not rename or revoke the
    /// phone, end its sessions or end everyone's: the owner's Face ID login still works after.
    @Test func aPhishedPasswordCannotTakeThePhoneAwayOrEndItsSessions() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (phoneID, phone, ownerSession) = try await Self.owner(api)
            let phished = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)[
                "token"]
            func call(_ method: HTTPRequest.Method, _ path: String, _ body: [String: any Sendable]? = nil) async throws -> Reply {
                try await api.call(method, path, body, token: phished, client: Self.attacker)
            }
            #expect(try await call(.get, "/v1/devices").status == 200, "a password may look")
            for (method, path, body) in [
                (HTTPRequest.Method.patch, "/v1/devices/\(phoneID)", ["name": "Old junk"] as [String: any Sendable]?),
                (.delete, "/v1/devices/\(phoneID)", nil),
                (.delete, "/v1/sessions/\(ownerSession["sessionId"])", nil),
            ] {
                let reply = try await call(method, path, body)
                #expect(reply.status == 403 && reply["reason"] == "deviceRequired", "\(method) \(path): \(reply.text)")
            }
            let all = try await call(.delete, "/v1/sessions")
            #expect(all.status == 403 && all["reason"] == "settledDeviceRequired", "\(all.text)")
            // Nothing changed: the phone, its name and its session are there, and Face ID still signs in.
            let devices = try await api.call(.get, "/v1/devices", token: ownerSession["token"])
            #expect(
                devices.status == 200 && devices.objects.first?["name"] as? String == "Phone" && devices.objects.first?["revokedAt"] == nil)
            #expect(try await api.login("alice", phoneID, phone).status == 200)
            // The password session may end itself.
            #expect(try await call(.post, "/v1/logout").status == 204)
            // The phone ends the attacker's other password sessions.
            let another = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)
            #expect(try await api.call(.delete, "/v1/sessions/\(another["sessionId"])", token: ownerSession["token"]).status == 204)
            #expect(try await api.call(.get, "/v1/devices", token: another["token"], client: Self.attacker).isUniformFailure)
        }
    }

    /// The re-key race of the outside review: a password session asks the owner's first (exempt)
    /// phone for a step-up over the attacker's payment, re-keys that phone through recovery (the
    /// mailbox is the attacker's too) within the challenge's minute, and finishes the old
    /// challenge with the new key. The challenge died with the old key: no approval, nothing to
    /// redeem, and the owner's old key cannot finish it either.
    @Test func aStepUpChallengeDiesWithTheKeyItWasIssuedTo() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (phoneID, phone, _) = try await Self.owner(api)
            let phished = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)[
                "token"]
            let challenge = try await api.post(
                "/v1/step-up/challenge", ["deviceId": phoneID, "operation": Self.payment], token: phished, client: Self.attacker)
            #expect(challenge.status == 200, "the first device is out of its cool-down: \(challenge.text)")
            // Re-key the phone: a request naming it, a recovery code from the mailbox, the enrolment.
            let newKey = SoftwareDevice()
            let request = try await api.post(
                "/v1/enrolment-requests", ["name": "Phone", "publicKey": newKey.spki, "replacesDeviceId": phoneID], token: phished,
                client: Self.attacker)
            #expect(request.status == 201, "\(request.text)")
            #expect(
                try await api.post("/v1/enrolment-requests/\(request["id"])/recovery-code", token: phished, client: Self.attacker).status
                    == 204)
            let code = try #require(await channel.codes[request["id"]])
            #expect(
                try await api.post(
                    "/v1/enrolment-requests/\(request["id"])/recover", ["code": code.text], token: phished, client: Self.attacker
                ).status == 204)
            let registration = try await api.post(
                "/v1/devices/registration/challenge",
                ["name": "Phone", "publicKey": newKey.spki, "replacesDeviceId": phoneID, "enrolmentRequestId": request["id"]],
                token: phished, client: Self.attacker)
            let rekeyed = try await api.post(
                "/v1/devices/registration/finish",
                ["challengeId": registration["challengeId"], "signature": try newKey.sign(registration)], token: phished,
                client: Self.attacker)
            #expect(rekeyed.status == 201 && rekeyed["id"] == phoneID, "\(rekeyed.text)")
            harness.clock.advance(by: 10)  // within the challenge's 60 s
            let finished = try await api.finish(
                challenge, signature: try newKey.sign(challenge), path: "/v1/step-up/finish", token: phished, client: Self.attacker)
            #expect(finished.isUniformFailure, "\(finished.status) \(finished.text)")
            let withOldKey = try await api.finish(
                challenge, signature: try phone.sign(challenge), path: "/v1/step-up/finish", token: phished, client: Self.attacker)
            #expect(withOldKey.isUniformFailure)
            // A new challenge for the re-keyed phone is refused: its new key is in its cool-down.
            let again = try await api.post(
                "/v1/step-up/challenge", ["deviceId": phoneID, "operation": Self.payment], token: phished, client: Self.attacker)
            #expect(again.status == 403 && again["reason"] == "coolingDown", "\(again.text)")
            #expect(
                try await harness.service.store.challenge(id: try ChallengeID(challenge["challengeId"])) == nil,
                "deleted with the old key")
        }
    }

    /// An approval made with a key is redeemed only while that key is the device's: a key that
    /// arrived after the approval refuses it at redemption, even where no re-key plan withdrew it.
    @Test func aRedemptionNeedsTheKeyThatSignedTheApproval() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (phoneID, phone, _) = try await Self.owner(api)
            harness.clock.advance(by: 5)
            let (approval, _) = try await api.stepUpApproval("alice", phoneID, phone, text: "Pay 5 EUR")
            // The key replaced behind the flows' back: only the redemption's own check stands.
            harness.clock.advance(by: 1)
            let replaced = SoftwareDevice()
            let store = harness.service.store
            var plan = WritePlan()
            plan.add(
                .replaceDeviceKey(
                    id: DeviceID(phoneID), publicKey: replaced.key.publicKey.derRepresentation, attestation: nil, at: harness.clock.now(),
                    how: .recovery))
            _ = try await store.apply(plan)
            #expect(try await api.redeem(approval, operation: Base64URL.encode(Data("Pay 5 EUR".utf8))).isUniformFailure)
        }
    }

    /// Nobody can hold the door shut: the attacker acts first from their own address, fills their
    /// budget of pending requests and spends their day's recovery codes; the owner, whose phone's
    /// key died with a new face, comes back from their own address with the password and a code.
    @Test func theOwnerComesBackAfterAStrangerSpentTheirBudgets() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (phoneID, _, _) = try await Self.owner(api)
            let phished = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)[
                "token"]
            var spent = 0
            for round in 0..<4 {
                let junk = try await api.post(
                    "/v1/enrolment-requests", ["name": "Pad \(round)", "publicKey": SoftwareDevice().spki], token: phished,
                    client: Self.attacker)
                #expect(junk.status == 201, "\(junk.text)")
                for _ in 0..<3 where spent < 10 {
                    #expect(
                        try await api.post("/v1/enrolment-requests/\(junk["id"])/recovery-code", token: phished, client: Self.attacker)
                            .status == 204)
                    spent += 1
                    harness.clock.advance(by: 60)
                }
            }
            let fifth = try await api.post(
                "/v1/enrolment-requests", ["name": "Pad", "publicKey": SoftwareDevice().spki], token: phished, client: Self.attacker)
            #expect(fifth.status == 201)
            let full = try await api.post(
                "/v1/enrolment-requests", ["name": "Pad", "publicKey": SoftwareDevice().spki], token: phished, client: Self.attacker)
            #expect(full.status == 429, "the attacker's own budget is full: \(full.text)")
            let noCode = try await api.post("/v1/enrolment-requests/\(fifth["id"])/recovery-code", token: phished, client: Self.attacker)
            #expect(noCode.status == 429, "the attacker's day of codes is spent: \(noCode.text)")

            // The owner, from 203.0.113.1: a new key for the phone, approved by a recovery code.
            let owner = try await api.primarySession("alice")
            let newKey = SoftwareDevice()
            let request = try await api.requestEnrolment(newKey, token: owner, replaces: phoneID)
            #expect(request.status == 201, "\(request.text)")
            #expect(try await api.post("/v1/enrolment-requests/\(request["id"])/recovery-code", token: owner).status == 204)
            let code = try #require(await channel.codes[request["id"]])
            #expect(try await api.post("/v1/enrolment-requests/\(request["id"])/recover", ["code": code.text], token: owner).status == 204)
            #expect(try await api.enrol(newKey, token: owner, replaces: phoneID, request: request["id"]) == phoneID)
            #expect(try await api.login("alice", phoneID, newKey).status == 200, "the owner is back")
        }
    }

    /// The password changes only with the phone's biometric approval: the attacker's password
    /// session cannot change it (no approval, or one for other text), the owner's phone can, and
    /// that ends the attacker's password session. The new password reaches no log.
    @Test func thePasswordChangesOnlyWithThePhonesApprovalAndEndsOtherPasswordSessions() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (phoneID, phone, ownerSession) = try await Self.owner(api)
            let phished = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)[
                "token"]
            let newPassword = "owner's new passphrase 7"
            let junk = try await api.post(
                "/v1/password", ["password": "mallory's passphrase", "approval": Base64URL.encode(Data(count: 32))], token: phished,
                client: Self.attacker)
            #expect(junk.isUniformFailure, "\(junk.text)")
            let (wrongText, _) = try await api.stepUpApproval("alice", phoneID, phone, text: "Pay 5 EUR")
            #expect(
                try await api.post("/v1/password", ["password": newPassword, "approval": wrongText], token: ownerSession["token"])
                    .isUniformFailure)

            let (approval, _) = try await api.stepUpApproval("alice", phoneID, phone, text: PasswordChangeText.make(userID: "alice"))
            #expect(
                try await api.post("/v1/password", ["password": newPassword, "approval": approval], token: ownerSession["token"]).status
                    == 204)
            #expect(
                try await api.call(.get, "/v1/devices", token: phished, client: Self.attacker).isUniformFailure,
                "the attacker's password session ended")
            #expect(try await api.call(.get, "/v1/devices", token: ownerSession["token"]).status == 200, "the phone's session stays")
            #expect(
                try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)
                    .isUniformFailure)
            #expect(try await api.post("/v1/login/password", ["username": "alice", "password": newPassword]).status == 200)
            #expect(
                try await api.post("/v1/password", ["password": "again and again", "approval": approval], token: ownerSession["token"])
                    .isUniformFailure, "used once")
            #expect(try await harness.service.store.auditEvents(userID: "alice", limit: 50).contains { $0.kind == .passwordChanged })
            var scanner = SecretScanner()
            scanner.add(newPassword, label: "new password")
            scanner.add(approval, label: "approval")
            let logged =
                harness.logs.entries.map { "\($0)" }.joined()
                + (try await harness.service.store.auditEvents(userID: nil, limit: 500)).map { "\($0)" }.joined()
            #expect(scanner.leaks(in: logged).isEmpty)
        }
    }

    /// Whatever the phished password started ends with the password: the screen a phone let in
    /// (a session ranked like a password) and the enrolment request the attacker made wait no
    /// longer; the device sessions stay.
    @Test func aPasswordChangeEndsEverySessionBelowADeviceAndEveryOpenRequest() async throws {
        let harness = ServerHarness { $0.crossDevice = CrossDevicePolicy() }
        try await harness.test { api in
            let (phoneID, phone, ownerSession) = try await Self.owner(api)
            let phished = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)[
                "token"]
            let request = try await api.post(
                "/v1/enrolment-requests", ["name": "Mallory's phone", "publicKey": SoftwareDevice().spki], token: phished,
                client: Self.attacker)
            #expect(request.status == 201, "\(request.text)")
            let started = try await CrossDeviceTests.start(api)
            #expect(
                try await CrossDeviceTests.approve(api, request: started["id"], number: started["number"], phoneID: phoneID, phone: phone)
                    .status == 204)
            let screen = try #require(
                (try await CrossDeviceTests.poll(api, started).json["session"] as? [String: any Sendable])?["token"] as? String)
            #expect(try await api.call(.get, "/v1/devices", token: screen).status == 200)

            let (approval, _) = try await api.stepUpApproval("alice", phoneID, phone, text: PasswordChangeText.make(userID: "alice"))
            #expect(
                try await api.post(
                    "/v1/password", ["password": "owner's new passphrase 8", "approval": approval], token: ownerSession["token"]
                )
                .status == 204)
            #expect(try await api.call(.get, "/v1/devices", token: screen).isUniformFailure, "the approved screen's session ended")
            let ended = try await api.call(.get, "/v1/enrolment-requests/\(request["id"])", token: ownerSession["token"])
            #expect(ended["status"] == "ended" && ended["endedBy"] == "cancelled", "\(ended.text)")
            #expect(try await api.call(.get, "/v1/devices", token: ownerSession["token"]).status == 200, "the phone's session stays")
        }
    }

    /// The owner's phone sees what the password did: a request to add a device and a recovery
    /// code asked for from the attacker's address, listed newest first with that address, and
    /// only the newer ones after `since`; then the phone cancels the request.
    @Test func thePhoneSeesWhatAPhishedPasswordAskedForAndCancelsIt() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (_, _, ownerSession) = try await Self.owner(api)
            let owner = ownerSession["token"]
            let before = try await api.call(.get, "/v1/security-events", token: owner)
            #expect(before.status == 200 && before.objects.map { $0["kind"] as? String } == ["device.enrolled"], "\(before.text)")
            let seen = try #require(before.objects.first?["at"] as? Int)
            harness.clock.advance(by: 5)
            let phished = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: Self.attacker)[
                "token"]
            let request = try await api.post(
                "/v1/enrolment-requests", ["name": "Pad", "publicKey": SoftwareDevice().spki], token: phished, client: Self.attacker)
            #expect(
                try await api.post("/v1/enrolment-requests/\(request["id"])/recovery-code", token: phished, client: Self.attacker).status
                    == 204)
            let events = try await api.call(.get, "/v1/security-events?since=\(seen)", token: owner)
            #expect(events.objects.map { $0["kind"] as? String } == ["enrolment.recovery.sent", "enrolment.requested"], "\(events.text)")
            #expect(
                events.objects.allSatisfy { $0["client"] as? String == Self.attacker && $0["deviceId"] as? String == request["deviceId"] })
            for since in ["-1", "9007199254740992", "1.5", "soon"] {
                #expect(try await api.call(.get, "/v1/security-events?since=\(since)", token: owner).status == 400, "since=\(since)")
            }
            #expect(try await api.call(.delete, "/v1/enrolment-requests/\(request["id"])", token: owner).status == 204)
            let answered = try await api.call(.get, "/v1/security-events?since=\(seen)", token: owner).objects.map { $0["kind"] as? String }
            #expect(answered.first == "enrolment.request.ended", "\(answered)")
            // The same events wait in the outbox for the deployment's mailer or push service.
            let outbox = try await harness.service.store.claimOutbox(
                now: harness.clock.now(), leaseUntil: harness.clock.now().addingTimeInterval(30), limit: 50)
            #expect(Set(outbox.map(\.event.kind)).isSuperset(of: [.enrolmentRequested, .recoveryCodeSent]), "\(outbox.map(\.event.kind))")
        }
    }
}
