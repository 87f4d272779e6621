import BioAuthCore
import BioAuthServer
import Foundation
import HTTPTypes
import InMemoryLogging
import Testing
import BioAuthServerTesting

/// The backend API for the users a backend owns (`/v1/backend/users/{userId}/…`): listing and
/// revoking their devices and sessions, cancelling and vouching for their enrolment requests —
/// each with its scope, each change and refusal audited with the API key's id.
struct UserAdministrationTests {
    /// A single-device user whose face changed: the phone's key is dead, there is no other device
    /// to approve and no recovery directory. After its own account recovery the backend vouches
    /// for the re-key request (scope `recovery`); the phone replaces its key and logs in, the old
    /// key does not, and the audit row names the API key and says the backend approved.
    @Test func theBackendVouchesForARekeyAfterItsOwnRecovery() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let request = RequestInfo(clientAddress: "operator")
            let recovery = try await harness.service.createApiKey(name: "recovery desk", scopes: [.recovery], request: request)
            let usersOnly = try await harness.service.createApiKey(name: "support", scopes: [.users], request: request)
            let oldKey = SoftwareDevice()
            let grant = try await api.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: api.apiKey)["token"]
            let deviceID = try await api.enrol(oldKey, token: grant)

            let newKey = SoftwareDevice()
            let regrant = try await api.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: api.apiKey)["token"]
            let pending = try await api.requestEnrolment(newKey, token: regrant, replaces: deviceID)
            #expect(pending.status == 201, "\(pending.text)")
            let listed = try await api.call(.get, "/v1/backend/users/carol/enrolment-requests", token: usersOnly.secret.value)
            #expect(listed.status == 200 && listed.objects.map { $0["id"] as? String } == [pending["id"]], "\(listed.text)")
            #expect(
                listed.objects.first?["approvalText"] as? String == pending["approvalText"],
                "the backend shows the user the new key's fingerprint")

            let approve = "/v1/backend/users/carol/enrolment-requests/\(pending["id"])/approve"
            #expect(try await api.post(approve, token: usersOnly.secret.value).status == 403, "vouching needs the recovery scope")
            #expect(
                try await api.post("/v1/backend/users/mallory/enrolment-requests/\(pending["id"])/approve", token: recovery.secret.value)
                    .status == 404)
            #expect(try await api.post(approve, token: recovery.secret.value).status == 204)
            #expect(try await api.post(approve, token: recovery.secret.value).status == 409, "already approved")

            #expect(try await api.enrol(newKey, token: regrant, replaces: deviceID, request: pending["id"]) == deviceID)
            #expect(try await api.login("carol", deviceID, newKey).status == 200)
            #expect(try await api.login("carol", deviceID, oldKey).isUniformFailure, "the dead key is replaced")
            let devices = try await api.call(.get, "/v1/backend/users/carol/devices", token: usersOnly.secret.value).objects
            #expect(devices.count == 1 && devices.first?["keyReplacedBy"] as? String == "recovery")

            let audit = try await harness.service.store.auditEvents(userID: "carol", limit: 50)
            let vouched = try #require(audit.first { $0.kind == .enrolmentApproved })
            #expect(vouched.reason == .approvedByBackend && vouched.apiKeyID == recovery.record.id)
            let scopeRefusal = try await harness.service.store.auditEvents(userID: nil, limit: 100).first { $0.kind == .apiKeyRejected }
            #expect(
                scopeRefusal?.reason == AuditReason(FailureReason.apiKeyScope) && scopeRefusal?.apiKeyID == usersOnly.record.id,
                "a key without the scope is audited with its id")
        }
    }

    /// Issue 43: of sixteen concurrent vouches for one request exactly one approves it; every other
    /// one answers 409 (approved already), never 410 (the request has not ended).
    @Test func concurrentVouchesApproveOnceAndTheOthersAre409() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let grant = try await api.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: api.apiKey)["token"]
            _ = try await api.enrol(SoftwareDevice(), token: grant)
            let regrant = try await api.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: api.apiKey)["token"]
            let pending = try await api.requestEnrolment(SoftwareDevice(), token: regrant, name: "Pad")
            let path = "/v1/backend/users/carol/enrolment-requests/\(pending["id"])/approve"
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<16 { group.addTask { try await api.post(path, token: api.apiKey).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 204 }.count == 1 && statuses.filter { $0 == 409 }.count == 15, "\(statuses.sorted())")
        }
    }

    /// "I lost my phone": the backend revokes every device of the user at once — their sessions
    /// and unredeemed approvals go with them — or one device, or one or every session.
    @Test func theBackendRevokesDevicesAndSessions() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            // Users whose login the backend owns: it issues their enrolment grants (one device each).
            func grant(_ user: String) async throws -> String {
                try await api.post("/v1/backend/enrolment-grants", ["userId": user], token: api.apiKey)["token"]
            }
            let phone = SoftwareDevice()
            let pad = SoftwareDevice()
            let phoneID = try await api.enrol(phone, token: try await grant("alice"))
            harness.clock.advance(by: 1)  // the phone is first, not tied with the pad
            let padID = try await api.enrolApproved(pad, token: try await grant("alice"), name: "Pad", approverID: phoneID, approver: phone)
            let primary = try await grant("alice")  // a session of the backend's making, unused
            let bob = SoftwareDevice()
            let bobID = try await api.enrol(bob, token: try await grant("bob"))
            let padSession = try await api.login("alice", padID, pad)["token"]
            let (approval, _) = try await api.stepUpApproval("alice", phoneID, phone, text: "pay 5 EUR")

            let sessions = try await api.call(.get, "/v1/backend/users/alice/sessions", token: api.apiKey)
            #expect(
                sessions.status == 200 && sessions.objects.count >= 3 && sessions.objects.allSatisfy { $0["current"] as? Bool == false },
                "\(sessions.text)")
            let padSessionID = try #require(sessions.objects.first { $0["deviceId"] as? String == padID }?["id"] as? String)
            #expect(
                try await api.call(.delete, "/v1/backend/users/bob/sessions/\(padSessionID)", token: api.apiKey).status == 404, "not bob's")
            #expect(try await api.call(.delete, "/v1/backend/users/alice/sessions/\(padSessionID)", token: api.apiKey).status == 204)
            #expect(try await api.call(.get, "/v1/devices", token: padSession).isUniformFailure)
            #expect(
                try await api.call(.delete, "/v1/backend/users/alice/sessions/\(padSessionID)", token: api.apiKey).status == 404,
                "already revoked")

            #expect(
                try await api.call(.delete, "/v1/backend/users/alice/devices/\(bobID)", token: api.apiKey).status == 404,
                "bob's device is not alice's")
            #expect(try await api.login("bob", bobID, bob).status == 200)

            let all = try await api.call(.delete, "/v1/backend/users/alice/devices", token: api.apiKey)
            #expect(all.status == 200 && all.json["devices"] as? Int == 2 && (all.json["sessions"] as? Int ?? 0) >= 2, "\(all.text)")
            #expect(try await api.login("alice", phoneID, phone).isUniformFailure)
            #expect(try await api.login("alice", padID, pad).isUniformFailure)
            #expect(
                try await api.post("/v1/devices/registration/challenge", ["name": "X", "publicKey": SoftwareDevice().spki], token: primary)
                    .isUniformFailure,
                "every session ends, the backend's grant too")
            #expect(
                try await api.redeem(approval, operation: Base64URL.encode(Data("pay 5 EUR".utf8))).isUniformFailure, "and every approval")
            let devices = try await api.call(.get, "/v1/backend/users/alice/devices", token: api.apiKey).objects
            #expect(devices.count == 2 && devices.allSatisfy { $0["revokedAt"] != nil })
            let again = try await api.call(.delete, "/v1/backend/users/alice/devices", token: api.apiKey)
            #expect(again.json["devices"] as? Int == 0 && again.json["sessions"] as? Int == 0)
            #expect(try await api.call(.get, "/v1/backend/users/alice/sessions", token: api.apiKey).objects.isEmpty)
            #expect(try await api.login("bob", bobID, bob).status == 200, "another user keeps everything")

            let bobSessions = try await api.call(.delete, "/v1/backend/users/bob/sessions", token: api.apiKey)
            #expect(bobSessions.status == 200 && (bobSessions.json["revoked"] as? Int ?? 0) >= 2)
            #expect(try await api.login("bob", bobID, bob).status == 200, "revoking sessions keeps the device")
        }
    }

    /// The backend cancels a request it does not trust; an ended request cannot be vouched for.
    @Test func theBackendCancelsEnrolmentRequests() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let phone = SoftwareDevice()
            _ = try await api.enrol(
                phone, token: try await api.post("/v1/backend/enrolment-grants", ["userId": "alice"], token: api.apiKey)["token"])
            let primary = try await api.post("/v1/backend/enrolment-grants", ["userId": "alice"], token: api.apiKey)["token"]
            let pending = try await api.requestEnrolment(SoftwareDevice(), token: primary, name: "Pad")
            let path = "/v1/backend/users/alice/enrolment-requests/\(pending["id"])"
            #expect(
                try await api.call(.delete, "/v1/backend/users/bob/enrolment-requests/\(pending["id"])", token: api.apiKey).status == 404)
            #expect(try await api.call(.delete, path, token: api.apiKey).status == 204)
            #expect(try await api.call(.delete, path, token: api.apiKey).status == 410)
            #expect(try await api.post(path + "/approve", token: api.apiKey).status == 410)
            #expect(try await api.call(.get, "/v1/backend/users/alice/enrolment-requests", token: api.apiKey).objects.isEmpty)
            let ended = try await harness.service.store.auditEvents(userID: "alice", limit: 50).first { $0.kind == .enrolmentRequestEnded }
            #expect(ended?.reason?.description == "cancelled" && ended?.apiKeyID != nil)
        }
    }

    /// Bad input is a 400 naming the field, a wrong key is the uniform 401, a session token is
    /// not an API key; every refusal after the key is verified is audited with the key's id, and
    /// no key reaches the audit log or a log line.
    @Test func refusalsAreTypedAndAuditedWithTheKey() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let badUser = try await api.call(.get, "/v1/backend/users/no%20spaces/devices", token: api.apiKey)
            #expect(badUser.status == 400 && badUser["field"] == "userId", "\(badUser.text)")
            let badDevice = try await api.call(.delete, "/v1/backend/users/alice/devices/not-a-uuid", token: api.apiKey)
            #expect(badDevice.status == 400, "\(badDevice.text)")
            #expect(
                try await api.call(.get, "/v1/backend/users/alice/devices", token: "bioauth_sk_" + String(repeating: "A", count: 43))
                    .isUniformFailure)
            let session = try await api.primarySession("alice")
            #expect(try await api.call(.get, "/v1/backend/users/alice/devices", token: session).isUniformFailure)
            #expect(try await api.call(.get, "/v1/backend/users/nobody/devices", token: api.apiKey).text == "[]")
            // A user id with `@` arrives percent-encoded in the path.
            let grant = try await api.post("/v1/backend/enrolment-grants", ["userId": "dora@example.com"], token: api.apiKey)["token"]
            _ = try await api.enrol(SoftwareDevice(), token: grant)
            #expect(try await api.call(.get, "/v1/backend/users/dora%40example.com/devices", token: api.apiKey).objects.count == 1)

            let refusals = try await harness.service.store.auditEvents(userID: nil, limit: 100).filter { $0.kind == .backendRequestRefused }
            #expect(refusals.count == 2 && refusals.allSatisfy { $0.apiKeyID != nil }, "\(refusals)")
            #expect(refusals.contains { $0.reason?.description == "invalid_request:userId" && $0.userID == nil })
            let everything =
                try await harness.service.store.auditEvents(userID: nil, limit: 1000).map { "\($0)" }.joined()
                + harness.logs.entries.map { "\($0.message) \($0.metadata)" }.joined()
            #expect(!everything.contains(api.apiKey))
        }
    }
}
