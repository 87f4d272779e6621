import BioAuthCore
import BioAuthServer
import Foundation
import Hummingbird
import InMemoryLogging
import HTTPTypes
import Testing
import BioAuthServerTesting

/// The backend API: API keys with scopes, enrolment grants, approval redemption.
struct BackendAPITests {
    /// A grant for a user id the backend vouches for enrols that user's first device — no password
    /// account needed — and nothing else; a second device still needs an approval.
    @Test func anEnrolmentGrantEnrolsTheFirstDeviceOfAUserWithoutAPassword() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let grant = try await api.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: api.apiKey)
            #expect(grant.status == 201 && grant["userId"] == "carol" && grant["token"].count == 43, "\(grant.text)")
            #expect(grant.json["deviceId"] == nil && (grant.json["expiresAt"] as? Int ?? 0) > 0)
            #expect(try await api.call(.get, "/v1/devices", token: grant["token"]).status == 403, "a grant may only enrol")
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: grant["token"])
            #expect(try await api.login("carol", deviceID, phone).status == 200)
            #expect(try await api.call(.get, "/v1/devices", token: grant["token"]).isUniformFailure, "one device per grant")

            let second = try await api.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: api.apiKey)
            let challenge = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Pad", "publicKey": SoftwareDevice().spki], token: second["token"])
            #expect(challenge.status == 403 && challenge["error"] == "approval_required", "\(challenge.text)")

            #expect(try await api.post("/v1/backend/enrolment-grants", ["userId": "no spaces allowed"], token: api.apiKey).status == 400)
            #expect(
                try await api.post("/v1/backend/enrolment-grants", raw: #"{"userId":"carol","admin":true}"#, token: api.apiKey).status
                    == 400)
        }
    }

    /// Namespaces (issue 20 item 8): an id the backend vouched for can never be signed up — not
    /// by a stranger with `--allow-sign-up`, from any address — so nobody gets a password session
    /// that lists, revokes or enrols the backend's user's phones; an id with devices and no
    /// password account is the backend's too; and a password account's id gets no grant.
    @Test func idsTheBackendOwnsCanNeverBeSignedUp() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let grant = try await api.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: api.apiKey)
            #expect(grant.status == 201)
            let stranger = "198.51.100.77"
            let signUp = try await api.post("/v1/users", ["username": "carol", "password": API.password], client: stranger)
            #expect(signUp.status == 409 && signUp["field"] == "username", "\(signUp.text)")
            #expect(
                try await api.post("/v1/login/password", ["username": "carol", "password": API.password], client: stranger).isUniformFailure
            )
            // Signed up first, a password account's id gets no grant (nor a PrimaryAuthenticator session).
            _ = try await api.primarySession("dave")
            let refused = try await api.post("/v1/backend/enrolment-grants", ["userId": "dave"], token: api.apiKey)
            #expect(refused.status == 409 && refused["field"] == "userId", "\(refused.text)")
            let audit = try await harness.service.store.auditEvents(userID: "dave", limit: 10).map(\.kind)
            #expect(!audit.contains(.enrolmentGrantIssued))
        }
    }

    /// Issue 42: the backend acts only on its own users. A password account's user is 404 to the
    /// backend user API — devices, sessions, requests, revocation and vouching alike — and the
    /// user's phone and session are untouched.
    @Test func theBackendUserAPIDoesNotReachAPasswordAccount() async throws {
        let harness = ServerHarness(recoveryChannel: CapturingRecoveryChannel())
        try await harness.test { api in
            let primary = try await api.primarySession("dave")
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: primary)
            let session = try await api.login("dave", deviceID, phone)
            let request = try await api.requestEnrolment(SoftwareDevice(), token: primary, name: "Pad")
            let base = "/v1/backend/users/dave"
            for (method, path) in [
                (HTTPRequest.Method.get, base + "/devices"), (.get, base + "/sessions"), (.get, base + "/enrolment-requests"),
                (.delete, base + "/devices/\(deviceID)"), (.delete, base + "/devices"),
                (.delete, base + "/sessions/\(session["sessionId"])"),
                (.delete, base + "/sessions"), (.delete, base + "/enrolment-requests/\(request["id"])"),
                (.post, base + "/enrolment-requests/\(request["id"])/approve"),
            ] {
                let reply = try await api.call(method, path, token: api.apiKey)
                #expect(reply.status == 404 && reply["field"] == "userId", "\(method) \(path): \(reply.text)")
            }
            #expect(try await api.call(.get, "/v1/devices", token: session["token"]).objects.first?["revokedAt"] == nil, "the phone stays")
            let pending = try await api.call(.get, "/v1/enrolment-requests/\(request["id"])", token: primary)
            #expect(pending["status"] == "pending", "not vouched for: \(pending.text)")
        }
    }

    /// With a declared namespace (`--backend-user-prefix shop-`) sign-up refuses the backend's
    /// future ids too, and the backend acts on no id outside it.
    @Test func aDeclaredBackendNamespaceIsClosedToSignUpBeforeTheBackendUsesIt() async throws {
        let harness = ServerHarness { $0.backendUserIDPrefixes = ["shop-"] }
        try await harness.test { api in
            let stranger = "198.51.100.78"
            let early = try await api.post("/v1/users", ["username": "shop-1042", "password": API.password], client: stranger)
            #expect(early.status == 409 && early["field"] == "username", "a future id of the backend: \(early.text)")
            let grant = try await api.post("/v1/backend/enrolment-grants", ["userId": "shop-1042"], token: api.apiKey)
            #expect(grant.status == 201, "\(grant.text)")
            let outside = try await api.post("/v1/backend/enrolment-grants", ["userId": "erin"], token: api.apiKey)
            #expect(outside.status == 409 && outside["field"] == "userId", "\(outside.text)")
            #expect(try await api.call(.get, "/v1/backend/users/erin/devices", token: api.apiKey).status == 404)
            #expect(try await api.call(.get, "/v1/backend/users/shop-1042/devices", token: api.apiKey).status == 200)
            #expect(try await api.post("/v1/users", ["username": "erin", "password": API.password], client: stranger).status == 201)
        }
    }

    /// Issue 43: a backend's API key has its own budget. From one address a key sends past the
    /// anonymous per-address limit, until its own bucket is empty (429 with the real wait); another
    /// key and the address's anonymous requests are untouched, and the bucket refills.
    @Test func aBackendKeyHasItsOwnBudgetNotItsAddresses() async throws {
        let harness = ServerHarness { $0.rateLimits = RateLimitPolicy(requestsPerClient: 20, apiKeyRequestsPerSecond: 1, apiKeyBurst: 50) }
        try await harness.test { api in
            let shop = "198.51.100.90"
            for n in 0..<50 {
                let reply = try await api.post("/v1/introspect", ["token": "not-a-token"], token: api.apiKey, client: shop)
                #expect(reply.status == 200, "request \(n): \(reply.status)")
            }
            let spent = try await api.post("/v1/introspect", ["token": "not-a-token"], token: api.apiKey, client: shop)
            #expect(spent.status == 429 && spent.headers[.retryAfter] == "1", "\(spent.status) \(spent.headers[.retryAfter] ?? "-")")
            let other = try await harness.service.createApiKey(
                name: "resource server", scopes: [.introspect], request: RequestInfo(clientAddress: "operator"))
            #expect(try await api.post("/v1/introspect", ["token": "not-a-token"], token: other.secret.value, client: shop).status == 200)
            #expect(
                try await api.post("/v1/login/challenge", ["userId": "alice", "deviceId": UUID().uuidString.lowercased()], client: shop)
                    .status == 200)
            harness.clock.advance(by: 2)
            #expect(
                try await api.post("/v1/introspect", ["token": "not-a-token"], token: api.apiKey, client: shop).status == 200, "refilled")
            // Guessing keys is anonymous traffic: it pays the address's limit.
            for _ in 0..<25 {
                _ = try await api.post(
                    "/v1/introspect", ["token": "x"], token: "bioauth_sk_" + String(repeating: "A", count: 43), client: "198.51.100.91")
            }
            #expect(try await api.post("/v1/introspect", ["token": "x"], token: api.apiKey, client: "198.51.100.91").status == 429)
        }
    }

    /// Issue 43: one user's junk approvals exhaust that user's failed redemptions only; another
    /// user's genuine approval still redeems through the same key.
    @Test func oneUsersJunkApprovalsDoNotRefuseAnothersGenuineOne() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: try await api.primarySession("alice"))
            let (approval, _) = try await api.stepUpApproval("alice", deviceID, phone, text: "pay 5 EUR")
            let operation = Base64URL.encode(Data("pay 5 EUR".utf8))
            var statuses: [Int] = []
            for _ in 0..<12 {
                statuses.append(try await api.redeem(Base64URL.encode(Data(count: 32)), operation: operation, user: "bob").status)
            }
            #expect(statuses.prefix(10).allSatisfy { $0 == 401 } && statuses.suffix(2).allSatisfy { $0 == 429 }, "\(statuses)")
            #expect(try await api.redeem(approval, operation: operation).status == 200, "alice's genuine approval")
        }
    }

    /// A deployment whose backend owns every id switches the built-in password login off: login
    /// and sign-up answer 404, grants still work.
    @Test func passwordLoginCanBeSwitchedOff() async throws {
        let harness = ServerHarness { $0.passwordLogin = false }
        try await harness.test { api in
            #expect(try await api.post("/v1/users", ["username": "erin", "password": API.password]).status == 404)
            #expect(try await api.post("/v1/login/password", ["username": "erin", "password": API.password]).status == 404)
            let grant = try await api.post("/v1/backend/enrolment-grants", ["userId": "erin"], token: api.apiKey)
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: grant["token"])
            #expect(try await api.login("erin", deviceID, phone).status == 200)
        }
    }

    /// Missing, malformed, unknown and revoked keys are the one 401 (audited, without the key); a
    /// key without the route's scope is 403; nothing is done for either.
    @Test func apiKeysAreCheckedForExistenceRevocationAndScope() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let request = RequestInfo(clientAddress: "operator")
            let grantsOnly = try await harness.service.createApiKey(name: "grants", scopes: [.enrolmentGrants], request: request)
            let revoked = try await harness.service.createApiKey(name: "old", scopes: Set(ApiKeyScope.all), request: request)
            try await harness.service.revokeApiKey(id: revoked.record.id, request: request)
            let body = ["userId": "carol"]
            let refused: [String?] = [
                nil, "", "garbage", ApiKeySecret().value, revoked.secret.value, String(api.apiKey.dropLast()), api.apiKey + "A",
            ]
            for key in refused {
                #expect(
                    try await api.post("/v1/backend/enrolment-grants", body, token: key).isUniformFailure, "\(key?.count ?? -1) characters")
            }
            #expect(try await api.post("/v1/backend/enrolment-grants", body, token: grantsOnly.secret.value).status == 201)
            let wrongScope = try await api.redeem(Base64URL.encode(Data(count: 32)), operation: "b3A", apiKey: grantsOnly.secret.value)
            #expect(wrongScope.status == 403 && wrongScope["error"] == "forbidden", "\(wrongScope.text)")
            // A session token is not an API key, and an API key is not a session.
            let session = try await api.primarySession("alice")
            #expect(try await api.post("/v1/backend/enrolment-grants", body, token: session).isUniformFailure)
            #expect(try await api.call(.get, "/v1/devices", token: api.apiKey).isUniformFailure)

            let audit = try await harness.service.store.auditEvents(userID: nil, limit: 100)
            // The refused keys, the session token, and the key without the scope (audited with its id).
            #expect(audit.filter { $0.kind == AuditKind.apiKeyRejected }.reduce(0) { $0 + $1.count } == refused.count + 2)
            #expect(
                audit.contains {
                    $0.kind == AuditKind.apiKeyRejected && $0.reason?.description == "apiKeyScope" && $0.apiKeyID == grantsOnly.record.id
                })
            #expect(audit.contains { $0.kind == AuditKind.apiKeyRevoked && $0.reason?.description == revoked.record.id.rawValue })
            let everything = audit.map { "\($0)" }.joined() + harness.logs.entries.map { "\($0.message) \($0.metadata)" }.joined()
            for secret in [api.apiKey, grantsOnly.secret.value, revoked.secret.value] { #expect(!everything.contains(secret)) }
            #expect(!"\(revoked.secret)".contains(revoked.secret.value) && !"\(revoked.record)".contains(revoked.secret.value))
        }
    }

    /// The backend redeems an approval for the user its own session names; for anyone else, or
    /// once the signing device is revoked, it is the uniform failure — and a wrong user consumes
    /// nothing.
    @Test func anApprovalIsRedeemedForTheExpectedUserWhileItsDeviceIsActive() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let phone = SoftwareDevice()
            let token = try await api.primarySession("alice")
            let deviceID = try await api.enrol(phone, token: token)
            let operation = Base64URL.encode(Data("pay 5 EUR".utf8))
            let first = try await api.stepUpApproval("alice", deviceID, phone, text: "pay 5 EUR")
            #expect(try await api.redeem(first.approval, operation: operation, user: "mallory").isUniformFailure)
            #expect(try await api.redeem(first.approval, operation: operation).status == 200, "a wrong user consumed nothing")

            let second = try await api.stepUpApproval("alice", deviceID, phone, text: "pay 5 EUR")
            #expect(try await api.call(.delete, "/v1/devices/\(deviceID)", token: second.session).status == 204)
            #expect(try await api.redeem(second.approval, operation: operation).isUniformFailure, "the signing device is revoked")
            #expect(try await api.redeem(second.approval, operation: operation, user: "no spaces").status == 400)
        }
    }
}
