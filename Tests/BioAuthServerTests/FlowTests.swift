import BioAuthAttestation
import BioAuthCore
import BioAuthServer
import BioAuthSQLite
import Foundation
import HTTPTypes
import BioAuthHTTP
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import NIOCore
import Prometheus
import Testing
import BioAuthServerTesting

/// The positive flows through HTTP, on the SQLite store.
struct FlowTests {
    /// The outbox rule is applied in one place: the server's code writes a plan only through
    /// `PlanWriter`, never through the store it reads from (which would skip
    /// `WritePlan.publishing`).
    @Test func theServerWritesOnlyThroughThePlanWriter() throws {
        let sources = ServerAPIPageTests.repository.appendingPathComponent("Sources/BioAuthServer")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)).compactMap {
            ($0 as? URL).flatMap { $0.pathExtension == "swift" ? $0 : nil }
        }
        #expect(files.count > 30)
        for file in files where !["PlanWriter.swift", "Decisions.swift"].contains(file.lastPathComponent) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for write in ["apply", "decide", "consumeChallenge", "run"].map({ "store.\($0)(" }) {
                #expect(!text.contains(write), "\(file.lastPathComponent) writes around the plan writer: \(write)")
            }
        }
    }

    /// A request's log lines from the service go through the request's own logger (the HTTP
    /// framework's, with its request metadata) and carry BioAuth's request id.
    @Test func theServiceLogsARequestThroughTheRequestsLogger() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let reply = try await api.call(.get, "/v1/devices", nil, token: Base64URL.encode(Data(repeating: 9, count: 32)))
            let requestID = try #require(reply.headers[HTTPField.Name("X-Request-Id")!])
            let lines = harness.logs.entries.filter { $0.metadata["request_id"].map { "\($0)" } == requestID }
            #expect(lines.contains { $0.message == "audit" }, "the refusal is logged with the request's id: \(reply.status)")
            #expect(lines.allSatisfy { $0.metadata["hb.request.id"] != nil }, "\(lines.map(\.metadata))")
        }
    }

    /// A refused bearer token is audited by the service itself, not by an HTTP layer: an app that
    /// embeds `BioAuthService` gets the same `session.rejected` rows, with the reason and the
    /// address and nothing of the token.
    @Test func aRefusedSessionIsAuditedByTheServiceWithItsReasonOnly() async throws {
        let harness = ServerHarness()
        let request = RequestInfo(clientAddress: "198.51.100.7")
        let token = Base64URL.encode(Data(repeating: 7, count: 32))
        await #expect(throws: ServerError.authenticationFailed(.unknownSession)) {
            try await harness.service.authenticate(token: token, request: request)
        }
        await #expect(throws: ServerError.authenticationFailed(.missingSession)) {
            try await harness.service.authenticate(token: nil, request: request)
        }
        let rejected = try await harness.service.store.auditEvents(userID: nil, limit: 10).filter { $0.kind == .sessionRejected }
        #expect(Set(rejected.map(\.reason?.description)) == ["unknownSession", "missingSession"])
        #expect(rejected.allSatisfy { $0.clientAddress == "198.51.100.7" })
        #expect(!"\(rejected)".contains(token))
        try await harness.service.store.close()
    }

    @Test func enrolLoginStepUpAndManageDevicesAndSessions() async throws {
        let harness = ServerHarness(store: try await SQLiteStore.open(path: temporaryDatabasePath()))
        try await harness.test { api in
            #expect(try await api.call(.get, "/health").text == #"{"status":"ok"}"#)
            let token = try await api.primarySession("alice")
            #expect(try await api.post("/v1/users", ["username": "alice", "password": API.password]).status == 409)
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: token, name: "Alice's iPhone")
            let login = try await api.login("alice", deviceID, phone)
            #expect(login.status == 200 && login["userId"] == "alice" && login["deviceId"] == deviceID)
            let session = login["token"]

            // Step-up: approve one operation, redeem it once, for that operation only.
            let operation = Base64URL.encode(Data(#"{"transfer":{"to":"bob","amount":"100.00 EUR"}}"#.utf8))
            let challenge = try await api.post("/v1/step-up/challenge", ["deviceId": deviceID, "operation": operation], token: session)
            #expect(challenge["purpose"] == "step-up" && challenge["operationHash"].count == 43)
            let approved = try await api.finish(challenge, signature: try phone.sign(challenge), path: "/v1/step-up/finish", token: session)
            #expect(approved.status == 200)
            let other = Base64URL.encode(Data("something else".utf8))
            #expect(try await api.redeem(approved["approval"], operation: other).isUniformFailure)
            #expect(try await api.redeem(approved["approval"], operation: operation, user: "bob").isUniformFailure)
            let redeemed = try await api.redeem(approved["approval"], operation: operation)
            #expect(redeemed.status == 200 && redeemed["deviceId"] == deviceID && redeemed["userId"] == "alice")
            #expect(try await api.redeem(approved["approval"], operation: operation).isUniformFailure)

            // Devices: list, rename, revoke.
            let devices = try await api.call(.get, "/v1/devices", token: session)
            #expect(devices.text.contains("Alice's iPhone") && devices.text.contains(phone.spki))
            #expect(try await api.call(.patch, "/v1/devices/\(deviceID)", ["name": "Work phone"], token: session).status == 204)
            #expect(try await api.call(.get, "/v1/devices", token: session).text.contains("Work phone"))
            #expect(
                try await api.call(.patch, "/v1/devices/\(UUID().uuidString.lowercased())", ["name": "x"], token: session).status == 404)

            // Sessions: list, revoke one (a second primary session), and it is gone while the others stay.
            let sessions = try await api.call(.get, "/v1/sessions", token: session)
            #expect(
                sessions.text.contains(#""current":true"#) && sessions.text.contains(#""kind":"primary""#)
                    && sessions.text.contains(#""kind":"device""#))
            let spare = try await api.post("/v1/login/password", ["username": "alice", "password": API.password])
            let spareID = spare["sessionId"]
            #expect(try await api.call(.get, "/v1/sessions", token: session).text.contains(spareID))
            #expect(try await api.call(.delete, "/v1/sessions/\(spareID)", token: session).status == 204)
            #expect(try await api.call(.get, "/v1/devices", token: spare["token"]).isUniformFailure, "the revoked session is refused")
            #expect(!(try await api.call(.get, "/v1/sessions", token: session).text.contains(spareID)))
            #expect(try await api.call(.delete, "/v1/sessions/\(spareID)", token: session).status == 404, "already revoked")
            #expect(try await api.call(.get, "/v1/devices", token: session).status == 200, "the caller's own session stays")
            let audit = try await api.call(.get, "/v1/audit", token: session)
            #expect(
                audit.text.contains("stepup.approved") && audit.text.contains("device.enrolled") && audit.text.contains("login.succeeded"))

            // Metrics count what happened.
            let metrics = try await api.call(.get, "/metrics").text
            #expect(metrics.contains("bioauth_logins_total 1"))
            #expect(metrics.contains("bioauth_enrolments_total 1"))
            #expect(try await api.call(.get, "/openapi.yaml").text.contains("/v1/login/finish"))

            let revoked = try await api.call(.delete, "/v1/devices/\(deviceID)", token: token)
            #expect(revoked.status == 403 && revoked["reason"] == "deviceRequired", "a password never removes a device: \(revoked.text)")
            #expect(try await api.call(.delete, "/v1/devices/\(deviceID)", token: session).status == 204)
            #expect(try await api.call(.get, "/v1/devices", token: session).isUniformFailure)  // its sessions went with it
        }
    }

    /// A new key for a device (after an enrollment change) answers with the device as stored: its
    /// id, name and creation time kept, the new key, used now — the same row the device list shows.
    @Test func aReEnrolmentAnswersWithTheDeviceItReplacedTheKeyOf() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let primary = try await api.primarySession("alice")
            let phone = SoftwareDevice(), pad = SoftwareDevice(), newKey = SoftwareDevice()
            let phoneID = try await api.enrol(phone, token: primary, name: "Alice's iPhone")
            let padID = try await api.enrolApproved(pad, token: primary, name: "Pad", approverID: phoneID, approver: phone)
            harness.clock.advance(by: 86_401)  // the pad is past its cool-down and may approve
            let fresh = try await api.primarySession("alice")
            let request = try await api.requestEnrolment(newKey, token: fresh, name: "Another name", replaces: phoneID)
            let (approval, session) = try await api.stepUpApproval("alice", padID, pad, text: request.signedApprovalText)
            #expect(
                try await api.post("/v1/enrolment-requests/\(request["id"])/approve", ["approval": approval], token: session).status == 204)
            let challenge = try await api.post(
                "/v1/devices/registration/challenge",
                ["name": "Another name", "publicKey": newKey.spki, "replacesDeviceId": phoneID, "enrolmentRequestId": request["id"]],
                token: fresh)
            let finished = try await api.post(
                "/v1/devices/registration/finish", ["challengeId": challenge["challengeId"], "signature": try newKey.sign(challenge)],
                token: fresh)
            #expect(finished.status == 201, "\(finished.text)")
            let answered = try JSONDecoder().decode(Wire.Device.self, from: Data(finished.text.utf8))
            #expect(answered.id == phoneID && answered.name == "Alice's iPhone" && answered.publicKey == newKey.spki)
            #expect(answered.lastUsedAt == Int64(harness.clock.now().timeIntervalSince1970))
            let listed = try await api.call(.get, "/v1/devices", token: fresh)
            let devices = try JSONDecoder().decode([Wire.Device].self, from: Data(listed.text.utf8))
            #expect(devices.first { $0.id == phoneID } == answered, "the answer is the stored row")
            // Each device says what allowed it: the phone was the first (its primary login), the pad
            // came with the phone's approval; the phone's new key with the pad's.
            #expect(answered.enrolledBy == "primaryLogin" && answered.keyReplacedBy == "approval")
            #expect(devices.first { $0.id == padID }?.enrolledBy == "approval")
            let padLogin = try await api.login("alice", padID, pad)
            #expect(try #require(CompactJWS(padLogin["accessToken"])).claims["enr"] as? String == "approval")
        }
    }

    @Test func expiredChallengesAreSwept() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let token = try await api.primarySession("alice")
            let deviceID = try await api.enrol(SoftwareDevice(), token: token)
            for _ in 0..<3 { #expect(try await api.loginChallenge("alice", deviceID).status == 200) }
            harness.clock.advance(by: 61)
            #expect(try await harness.service.sweepExpiredChallenges() == 3)
        }
    }

    /// Issue 20: anyone who knows a user and device id (both are in every access token) may ask for
    /// challenges naming them, from addresses of their own, as often as the request limit allows;
    /// the owner's logins and step-ups never notice, and existing, unknown and revoked devices are
    /// answered alike. (Before, five requests a minute kept the owner at 0 logins: a per-device quota.)
    @Test func challengeRequestsFromOtherAddressesNeverStopTheOwner() async throws {
        try await ServerHarness().test { api in
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: try await api.primarySession("alice"))
            for attacker in 0..<10 {
                for _ in 0..<10 {
                    #expect(try await api.loginChallenge("alice", deviceID, client: "198.51.100.\(attacker)").status == 200)
                }
            }
            for _ in 0..<5 { #expect(try await api.login("alice", deviceID, phone).status == 200, "the owner logs in") }
            let session = try await api.login("alice", deviceID, phone)["token"]
            for _ in 0..<3 {
                let stepUp = try await api.post("/v1/step-up/challenge", ["deviceId": deviceID, "operation": "b3A"], token: session)
                #expect(stepUp.status == 200, "the owner steps up")
                #expect(
                    try await api.finish(stepUp, signature: try phone.sign(stepUp), path: "/v1/step-up/finish", token: session).status
                        == 200)
            }
            // Unknown and revoked devices get the same answer as a live one: nothing tells them apart.
            let bobPhone = SoftwareDevice()
            let revokedID = try await api.enrol(bobPhone, token: try await api.primarySession("bob"))
            let bobSession = try await api.login("bob", revokedID, bobPhone)["token"]
            #expect(try await api.call(.delete, "/v1/devices/\(revokedID)", token: bobSession).status == 204)
            var shapes: Set<[String]> = []
            for (user, id) in [("alice", deviceID), ("bob", revokedID), ("alice", UUID().uuidString.lowercased())] {
                let reply = try await api.loginChallenge(user, id, client: "198.51.100.77")
                #expect(reply.status == 200)
                shapes.insert(reply.json.keys.sorted())
            }
            #expect(shapes.count == 1, "live, revoked and unknown devices are answered alike")
        }
    }

    @Test func malformedInputNamesTheField() async throws {
        try await ServerHarness().test { api in
            let cases: [(String, String, String)] = [
                ("/v1/login/finish", "not json", "body"),
                ("/v1/login/finish", "[1,2]", "body"),
                ("/v1/login/finish", #"{"challengeId":"AAAAAAAAAAAAAAAAAAAAAA","signature":"MEUCIQ","extra":1}"#, "extra"),
                ("/v1/login/finish", #"{"signature":"MEUCIQ"}"#, "challengeId"),
                ("/v1/login/finish", #"{"challengeId":5,"signature":"MEUCIQ"}"#, "challengeId"),
                ("/v1/login/finish", #"{"challengeId":"AAAA","signature":"MEUCIQ"}"#, "challengeId"),
                ("/v1/login/finish", #"{"challengeId":"AAAAAAAAAAAAAAAAAAAAAA","signature":"MEU+IQ=="}"#, "signature"),
                ("/v1/login/challenge", #"{"userId":"al ice","deviceId":"x"}"#, "userId"),
                ("/v1/login/challenge", #"{"userId":"alice","deviceId":"not-a-uuid"}"#, "deviceId"),
                ("/v1/users", #"{"username":"alice","password":"short"}"#, "password"),
                ("/v1/users", #"{"username":"","password":"long enough"}"#, "username"),
            ]
            for (path, body, field) in cases {
                let reply = try await api.post(path, raw: body)
                #expect(reply.status == 400, "\(path) \(body)")
                #expect(reply["error"] == "invalid_request" && reply["field"] == field, "\(body) → \(reply.text)")
                #expect(reply.headers[HTTPField.Name("X-Request-Id")!] != nil)
            }
            #expect(try await api.call(.get, "/nope").status == 404)
        }
    }
}

/// A log handler that keeps no metadata (swift-log's no-op handler) must not break request ids.
struct RequestIDTests {
    @Test func requestsWorkWithALoggerThatDropsMetadata() async throws {
        let quiet = Logger(label: "quiet") { _ in SwiftLogNoOpLogHandler() }
        let service = BioAuthService(store: try SQLiteStore.inMemory(), logger: quiet)
        let routes = BioAuthRoutes(service: service, registry: PrometheusCollectorRegistry(), logger: quiet)
        let app = Application(router: routes.makeRouter(), logger: quiet)
        try await app.test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/login/challenge", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: "{}"))
            #expect(response.status == .badRequest)
            #expect(response.headers[HTTPField.Name("X-Request-Id")!]?.isEmpty == false)
        }
    }
}

/// The OpenAPI document and the router agree: every documented operation is served.
struct OpenAPIDocumentTests {
    /// The probes: live while the process serves, ready while the store answers.
    @Test func healthProbesSayWhetherTheStoreAnswers() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            #expect(try await api.call(.get, "/health/live").json["status"] as? String == "ok")
            #expect(try await api.call(.get, "/health/ready").json["status"] as? String == "ready")
            try await #require(harness.service.store as? SQLiteStore).close()
            let down = try await api.call(.get, "/health/ready")
            #expect(down.status == 503 && down.json["status"] as? String == "unavailable")
            #expect(try await api.call(.get, "/health/live").status == 200)
        }
    }

    @Test func everyDocumentedOperationIsRouted() async throws {
        let operations = OpenAPIDocument.operations.map { operation in
            (
                HTTPRequest.Method(operation.method.uppercased())!,
                operation.path.replacingOccurrences(of: "{id}", with: UUID().uuidString.lowercased()).replacingOccurrences(
                    of: "{userId}", with: "carol")
            )
        }
        #expect(operations.count == 62)
        let documented = operations
        // With an issuer URL, so the discovery documents exist (404 otherwise), and passkeys on.
        let harness = ServerHarness {
            $0.tokens.issuer = "https://auth.example.com"
            $0.passkeys = PasskeyPolicy(
                relyingParty: WebAuthnRelyingParty(id: "localhost", origins: ["http://localhost"]), relyingPartyName: "t")
        }
        try await harness.test { api in
            for (method, path) in documented {
                let reply = try await api.call(method, path, raw: "{}")
                #expect(reply.status != 404 && reply.status != 405, "\(method) \(path) → \(reply.status)")
            }
        }
    }

    /// A backend that owns the login issues a one-time enrolment grant; the app enrols with it as
    /// with a primary session. The grant may enrol one device and do nothing else, and expires.
    /// Issue 20: the first-device rule is decided when the enrolment finishes. A registration
    /// challenge obtained while the user had no device no longer enrols without an approval once a
    /// device exists, and of eight first enrolments finished in parallel exactly one lands.
    @Test func aRegistrationChallengeFromBeforeTheFirstDeviceNeedsAnApprovalAtFinish() async throws {
        try await ServerHarness().test { api in
            let token = try await api.primarySession("alice")
            let early = SoftwareDevice()
            let stale = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Attacker", "publicKey": early.spki], token: token)
            #expect(stale.status == 200)
            _ = try await api.enrol(SoftwareDevice(), token: token)
            let late = try await api.post(
                "/v1/devices/registration/finish", ["challengeId": stale["challengeId"], "signature": try early.sign(stale)], token: token)
            #expect(late.status == 403 && late["error"] == "approval_required", "\(late.text)")

            let carol = try await api.primarySession("carol")
            var begun: [(SoftwareDevice, Reply)] = []
            for n in 0..<8 {
                let device = SoftwareDevice()
                begun.append(
                    (
                        device,
                        try await api.post(
                            "/v1/devices/registration/challenge", ["name": "Phone \(n)", "publicKey": device.spki], token: carol)
                    ))
            }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for (device, challenge) in begun {
                    let signature = try device.sign(challenge)
                    group.addTask {
                        try await api.post(
                            "/v1/devices/registration/finish", ["challengeId": challenge["challengeId"], "signature": signature],
                            token: carol
                        ).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.sorted() == [201, 403, 403, 403, 403, 403, 403, 403], "\(statuses)")
        }
    }

    @Test func anEnrolmentGrantFromTheBackendEnrolsOneDeviceAndNothingElse() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let grant = try await harness.service.issueEnrolmentGrant(userID: "carol", request: RequestInfo()).token
            #expect(try await api.call(.get, "/v1/devices", token: grant).status == 403, "a grant is not an account session")
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: grant)
            #expect(try await api.login("carol", deviceID, phone).status == 200, "no password account is needed")
            let again = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Pad", "publicKey": SoftwareDevice().spki], token: grant)
            #expect(again.isUniformFailure, "one device per grant")

            let late = try await harness.service.issueEnrolmentGrant(userID: "carol", request: RequestInfo()).token
            harness.clock.advance(by: 601)
            let expired = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Pad", "publicKey": SoftwareDevice().spki], token: late)
            #expect(expired.isUniformFailure, "grants expire after ten minutes")
        }
        await #expect(throws: ServerError.self) {
            _ = try await harness.service.issueEnrolmentGrant(userID: "not a valid id!", request: RequestInfo())
        }
    }
}
