import BioAuthCore
import BioAuthServer
import BioAuthTesting
import Foundation
import HTTPTypes
import Testing
import BioAuthServerTesting

/// Issue 42: the security delay. Without another device the owner removes a lost phone with the
/// password and a recovery code, after a delay; a phished password — with the owner's mailbox
/// too — only schedules what the owner's phone cancels. The attacker acts from an address of
/// their own.
@Suite
struct SecurityDelayTests {
    static let attacker = "198.51.100.66"

    /// A password session of alice from `client`.
    static func password(_ api: API, client: String) async throws -> String {
        try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: client)["token"]
    }

    /// The phished password alone: the code goes to the owner's mailbox, guessing it ends the
    /// removal after five tries, and nothing was scheduled.
    @Test func aPhishedPasswordAloneSchedulesNothing() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (phoneID, phone, _) = try await AccountRankTests.owner(api)
            let phished = try await Self.password(api, client: Self.attacker)
            let removal = try await api.post("/v1/device-removals", ["deviceId": phoneID], token: phished, client: Self.attacker)
            #expect(removal.status == 201 && removal["status"] == "awaitingCode", "\(removal.text)")
            let message = try #require(await channel.messages.last)
            #expect(
                message.purpose == .deviceRemoval && message.text.contains(message.keyFingerprint)
                    && !removal.text.contains(message.code.text))
            for attempt in 1...5 {
                let guess = try await api.post(
                    "/v1/device-removals/\(removal["id"])/confirm", ["code": "0000-0000-000\(attempt)"], token: phished,
                    client: Self.attacker)
                #expect(guess.isUniformFailure, "\(guess.text)")
            }
            let late = try await api.post(
                "/v1/device-removals/\(removal["id"])/confirm", ["code": message.code.text], token: phished, client: Self.attacker)
            #expect(late.status == 410, "five wrong codes end it: \(late.text)")
            harness.clock.advance(by: 3 * 86_400)
            _ = try await harness.service.sweep()
            #expect(try await api.login("alice", phoneID, phone).status == 200, "the phone stays")
        }
    }

    /// Password and mailbox: the removal is scheduled, the owner's phone sees it — in the list and
    /// as a security event — and cancels it; after the delay the phone is still there.
    @Test func thePhoneSeesTheScheduledRemovalAndCancelsIt() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (phoneID, phone, owner) = try await AccountRankTests.owner(api)
            let phished = try await Self.password(api, client: Self.attacker)
            let removal = try await api.post("/v1/device-removals", ["deviceId": phoneID], token: phished, client: Self.attacker)
            let code = try #require(await channel.codes[removal["id"]])
            let other = try await Self.password(api, client: Self.attacker)
            #expect(
                try await api.post("/v1/device-removals/\(removal["id"])/confirm", ["code": code.text], token: other, client: Self.attacker)
                    .status == 404,
                "only the session that asked confirms")
            let scheduled = try await api.post(
                "/v1/device-removals/\(removal["id"])/confirm", ["code": code.text], token: phished, client: Self.attacker)
            #expect(scheduled.status == 200 && scheduled["status"] == "scheduled", "\(scheduled.text)")
            let executesAt = try #require(scheduled.json["executesAt"] as? Int)
            #expect(executesAt == Int(harness.clock.now().timeIntervalSince1970) + 86_400)
            let again = try await api.post("/v1/device-removals", ["deviceId": phoneID], token: phished, client: Self.attacker)
            #expect(again.status == 409, "one scheduled removal per device: \(again.text)")

            // The owner's phone: the removal in the list, the events, and the password cannot cancel.
            let listed = try await api.call(.get, "/v1/device-removals", token: owner["token"])
            #expect(
                listed.objects.map { $0["id"] as? String } == [removal["id"]] && listed.objects.first?["status"] as? String == "scheduled")
            let events = try await api.call(.get, "/v1/security-events", token: owner["token"])
            let kinds = events.objects.compactMap { $0["kind"] as? String }
            #expect(kinds.contains("device.removal.requested") && kinds.contains("device.removal.scheduled"), "\(kinds)")
            let byPassword = try await api.call(.delete, "/v1/device-removals/\(removal["id"])", token: phished, client: Self.attacker)
            #expect(byPassword.status == 403 && byPassword["reason"] == "deviceRequired", "\(byPassword.text)")
            #expect(try await api.call(.delete, "/v1/device-removals/\(removal["id"])", token: owner["token"]).status == 204)
            #expect(try await api.call(.delete, "/v1/device-removals/\(removal["id"])", token: owner["token"]).status == 410)
            #expect(try await api.call(.get, "/v1/device-removals", token: owner["token"]).objects.isEmpty)

            harness.clock.advance(by: 86_401)
            #expect(try await harness.service.sweep().removedDevices == 0)
            let fresh = try await api.login("alice", phoneID, phone)
            #expect(fresh.status == 200, "a cancelled removal removes nothing")
            let after = try await api.call(.get, "/v1/security-events", token: fresh["token"]).objects.compactMap { $0["kind"] as? String }
            #expect(after.contains("device.removal.cancelled") && !after.contains("device.revoked"), "\(after)")
        }
    }

    /// The adversary the delay names — password and mailbox, and a phone recovered through them —
    /// cannot cancel the owner's removal of that phone, in its cool-down or after, nor strike back
    /// at the owner's phone while the removal is scheduled; after the delay it is gone.
    @Test func theRecoveredPhoneCannotCancelItsOwnRemoval() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel) { $0.enrolment.lostDeviceDelay = 3 * 86_400 }
        try await harness.test { api in
            let (phoneID, phone, _) = try await AccountRankTests.owner(api)
            let stolen = SoftwareDevice()
            let (phished, request) = try await api.requestApprovedByRecovery(stolen, channel: channel, client: Self.attacker)
            let stolenID = try await api.enrol(stolen, token: phished, name: "Pad", request: request["id"])

            // The owner, phone not at hand: password and mailbox schedule the removal of the attacker's phone.
            let owner = try await Self.password(api, client: "192.0.2.44")
            let removal = try await api.post("/v1/device-removals", ["deviceId": stolenID], token: owner, client: "192.0.2.44")
            let code = try #require(await channel.codes[removal["id"]])
            let scheduled = try await api.post(
                "/v1/device-removals/\(removal["id"])/confirm", ["code": code.text], token: owner, client: "192.0.2.44")
            #expect(scheduled["status"] == "scheduled", "\(scheduled.text)")

            for phase in ["in its cool-down", "settled"] {
                let attacker = try await api.login("alice", stolenID, stolen, client: Self.attacker)["token"]
                let cancel = try await api.call(.delete, "/v1/device-removals/\(removal["id"])", token: attacker, client: Self.attacker)
                #expect(cancel.status == 403 && cancel["reason"] == "olderDeviceRequired", "\(phase): \(cancel.text)")
                let revoke = try await api.call(.delete, "/v1/devices/\(phoneID)", token: attacker, client: Self.attacker)
                #expect(revoke.status == 403, "\(phase): \(revoke.text)")
                let all = try await api.call(.delete, "/v1/sessions", token: attacker, client: Self.attacker)
                #expect(all.status == 403, "\(phase): \(all.text)")
                if phase == "settled" {
                    #expect(revoke["reason"] == "removalScheduled" && all["reason"] == "removalScheduled", "\(revoke.text) \(all.text)")
                }
                harness.clock.advance(by: 86_401)  // out of the cool-down
            }
            harness.clock.advance(by: 86_400)
            #expect(try await harness.service.sweep().removedDevices == 1)
            #expect(try await api.login("alice", stolenID, stolen, client: Self.attacker).isUniformFailure, "the attacker's phone is gone")
            #expect(try await api.login("alice", phoneID, phone).status == 200, "the owner's phone stays")
        }
    }

    /// The owner's old phone still cancels a removal of itself that the attacker asked for, though
    /// a newer device exists; the newer device cannot cancel a removal of an older one.
    @Test func theOwnersOldPhoneCancelsTheAttackersRemovalOfIt() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (phoneID, phone, owner) = try await AccountRankTests.owner(api)
            let pad = SoftwareDevice()
            let (phished, request) = try await api.requestApprovedByRecovery(pad, channel: channel, client: Self.attacker)
            let padID = try await api.enrol(pad, token: phished, name: "Pad", request: request["id"])
            let removal = try await api.post("/v1/device-removals", ["deviceId": phoneID], token: phished, client: Self.attacker)
            let code = try #require(await channel.codes[removal["id"]])
            _ = try await api.post(
                "/v1/device-removals/\(removal["id"])/confirm", ["code": code.text], token: phished, client: Self.attacker)
            harness.clock.advance(by: 86_401)  // the pad settles
            let newer = try await api.login("alice", padID, pad, client: Self.attacker)["token"]
            let byNewer = try await api.call(.delete, "/v1/device-removals/\(removal["id"])", token: newer, client: Self.attacker)
            #expect(byNewer.status == 403 && byNewer["reason"] == "olderDeviceRequired", "\(byNewer.text)")
            let ownerSession = try await api.login("alice", phoneID, phone)["token"]
            let revokeWhileScheduled = try await api.call(.delete, "/v1/devices/\(padID)", token: ownerSession)
            #expect(revokeWhileScheduled.status == 403 && revokeWhileScheduled["reason"] == "removalScheduled")
            #expect(try await api.call(.delete, "/v1/device-removals/\(removal["id"])", token: ownerSession).status == 204)
            #expect(try await api.call(.delete, "/v1/devices/\(padID)", token: ownerSession).status == 204, "then it revokes the pad")
            _ = owner
        }
    }

    /// The rule itself: an older key cancels; the target only while it is the oldest active device.
    @Test func whoMayCancelARemoval() {
        let t0 = Date(timeIntervalSince1970: 1_767_225_600)
        let old = DeviceRecord(id: "old", userID: "alice", name: "Phone", publicKey: Data([1]), createdAt: t0)
        let new = DeviceRecord(id: "new", userID: "alice", name: "Pad", publicKey: Data([2]), createdAt: t0.addingTimeInterval(60))
        var rekeyed = old
        rekeyed.keyReplacedAt = t0.addingTimeInterval(120)
        let both = [old, new]
        #expect(DeviceRemovalRecord.mayCancel(removalOf: new, by: old, among: both))
        #expect(!DeviceRemovalRecord.mayCancel(removalOf: old, by: new, among: both))
        #expect(DeviceRemovalRecord.mayCancel(removalOf: old, by: old, among: both), "the oldest cancels its own")
        #expect(!DeviceRemovalRecord.mayCancel(removalOf: new, by: new, among: both), "a newer one does not")
        #expect(!DeviceRemovalRecord.mayCancel(removalOf: rekeyed, by: rekeyed, among: [rekeyed, new]), "a re-keyed phone is new")
        var revoked = old
        revoked.revokedAt = t0.addingTimeInterval(10)
        #expect(DeviceRemovalRecord.mayCancel(removalOf: new, by: new, among: [revoked, new]), "alone among the active ones")
    }

    /// The lost phone: nothing changes until the delay has passed — the phone still logs in —
    /// then the sweep revokes it with its sessions, audited with reason `securityDelay`.
    @Test func aLostPhoneIsRemovedWhenTheDelayHasPassed() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel) { $0.enrolment.lostDeviceDelay = 3600 }
        try await harness.test { api in
            let (phoneID, phone, thief) = try await AccountRankTests.owner(api)  // the session on the lost phone
            let owner = try await Self.password(api, client: "192.0.2.44")
            let removal = try await api.post("/v1/device-removals", ["deviceId": phoneID], token: owner, client: "192.0.2.44")
            let code = try #require(await channel.codes[removal["id"]])
            let scheduled = try await api.post(
                "/v1/device-removals/\(removal["id"])/confirm", ["code": code.text], token: owner, client: "192.0.2.44")
            #expect(scheduled.status == 200)
            harness.clock.advance(by: 3599)
            #expect(try await harness.service.sweep().removedDevices == 0, "not before its time")
            #expect(try await api.login("alice", phoneID, phone).status == 200, "nothing changes meanwhile")
            harness.clock.advance(by: 1)
            #expect(try await harness.service.sweep().removedDevices == 1)
            #expect(try await api.login("alice", phoneID, phone).isUniformFailure, "the lost phone is revoked")
            #expect(try await api.call(.get, "/v1/devices", token: thief["token"]).isUniformFailure, "with its sessions")
            let later = try await Self.password(api, client: "192.0.2.44")  // the first password session has expired
            let devices = try await api.call(.get, "/v1/devices", token: later, client: "192.0.2.44")
            #expect(devices.objects.first?["revokedAt"] != nil, "\(devices.text)")
            let audit = try await harness.service.store.auditEvents(userID: "alice", limit: 50)
            #expect(audit.contains { $0.kind == .deviceRevoked && $0.reason?.description == "securityDelay" })
            #expect(try await harness.service.sweep().removedDevices == 0, "once")
            #expect(try await api.call(.get, "/v1/device-removals", token: later, client: "192.0.2.44").objects.isEmpty)
        }
    }

    /// Codes for removals come out of the requester's daily recovery-code budget, never the
    /// owner's: the attacker's tenth is their last, and the owner still gets one.
    @Test func removalCodesCountAgainstTheRequestersBudget() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (phoneID, _, _) = try await AccountRankTests.owner(api)
            let phished = try await Self.password(api, client: Self.attacker)
            for _ in 1...10 {
                #expect(
                    try await api.post("/v1/device-removals", ["deviceId": phoneID], token: phished, client: Self.attacker).status == 201)
            }
            let refused = try await api.post("/v1/device-removals", ["deviceId": phoneID], token: phished, client: Self.attacker)
            #expect(refused.status == 429 && refused.headers[.retryAfter] != nil, "\(refused.text)")
            let owner = try await Self.password(api, client: "192.0.2.44")
            #expect(try await api.post("/v1/device-removals", ["deviceId": phoneID], token: owner, client: "192.0.2.44").status == 201)
        }
    }

    /// No secret reaches the audit log or an answer: the code is only in the message.
    @Test func theCodeIsNeitherAuditedNorAnswered() async throws {
        let channel = CapturingRecoveryChannel()
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let (phoneID, _, _) = try await AccountRankTests.owner(api)
            let owner = try await Self.password(api, client: "192.0.2.44")
            let removal = try await api.post("/v1/device-removals", ["deviceId": phoneID], token: owner, client: "192.0.2.44")
            let code = try #require(await channel.codes[removal["id"]])
            let scheduled = try await api.post(
                "/v1/device-removals/\(removal["id"])/confirm", ["code": code.text], token: owner, client: "192.0.2.44")
            let audit = try await harness.service.store.auditEvents(userID: "alice", limit: 50)
            for text in [
                removal.text, scheduled.text, String(describing: audit), String(reflecting: try #require(await channel.messages.last)),
            ] {
                #expect(!text.contains(code.text) && !text.contains(code.text.replacingOccurrences(of: "-", with: "")))
            }
        }
    }
}
