import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthServerTesting
import Crypto
import Foundation
import HTTPTypes
import Testing

/// Passkeys as devices, over HTTP: registered under the enrolment policy, listed with the
/// devices, signing in to the same kind of session, and refused for each thing a relying party
/// checks.
struct PasskeyTests {
    static let origin = "http://localhost:8080"

    static func harness(deviceBoundOnly: Bool = false, requestsPerClient: Int? = nil) -> ServerHarness {
        ServerHarness { configuration in
            if let requestsPerClient { configuration.rateLimits.requestsPerClient = requestsPerClient }
            configuration.passkeys = PasskeyPolicy(
                relyingParty: WebAuthnRelyingParty(id: "localhost", origins: [origin], allowsSyncedCredentials: !deviceBoundOnly),
                relyingPartyName: "BioAuth tests")
        }
    }

    /// Registers `passkey` for the session's user; the finish's reply.
    static func register(_ passkey: SoftwarePasskey, _ api: API, token: String, name: String = "Laptop") async throws -> Reply {
        let challenge = try await api.post("/v1/passkeys/registration/challenge", ["name": name], token: token)
        #expect(challenge.status == 200, "\(challenge.text)")
        let options = try JSONDecoder().decode(Wire.PasskeyCreationOptions.self, from: Data(challenge.text.utf8))
        let credential = try passkey.register(options)
        return try await api.post(
            "/v1/passkeys/registration/finish", ["challengeId": options.challengeId, "credential": try Self.object(credential)],
            token: token)
    }

    /// Signs in with `passkey` as `user`; the finish's reply. `change` alters the response first.
    static func signIn(
        _ passkey: SoftwarePasskey, _ api: API, user: String = "alice",
        change: (inout Wire.PasskeyAuthenticationCredential) -> Void = { _ in }
    ) async throws -> Reply {
        let challenge = try await api.post("/v1/passkeys/login/challenge", ["username": user])
        #expect(challenge.status == 200, "\(challenge.text)")
        let options = try JSONDecoder().decode(Wire.PasskeyRequestOptions.self, from: Data(challenge.text.utf8))
        var credential = try passkey.authenticate(options)
        change(&credential)
        return try await api.post(
            "/v1/passkeys/login/finish", ["challengeId": options.challengeId, "credential": try Self.object(credential)])
    }

    static func object(_ value: some Encodable) throws -> [String: any Sendable] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: any Sendable])
    }

    @Test func aFirstPasskeyRegistersAndSignsInAsADevice() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let primary = try await api.primarySession()
            let passkey = SoftwarePasskey(origin: Self.origin)
            let options = try await api.post("/v1/passkeys/registration/challenge", ["name": "Laptop"], token: primary)
            #expect(options.json["challengeId"] is String)
            let publicKey = try #require(options.json["publicKey"] as? [String: any Sendable])
            #expect((publicKey["rp"] as? [String: any Sendable])?["id"] as? String == "localhost")
            #expect((publicKey["authenticatorSelection"] as? [String: any Sendable])?["userVerification"] as? String == "required")
            // One list: the algorithms offered are the ones the verifier reads.
            let offered = (publicKey["pubKeyCredParams"] as? [[String: any Sendable]])?.compactMap { $0["alg"] as? Int }
            #expect(offered == COSEKey.Algorithm.allCases.map(\.rawValue))
            let registered = try await Self.register(passkey, api, token: primary)
            #expect(registered.status == 201, "\(registered.text)")
            #expect(registered["enrolledBy"] == "primaryLogin")
            let listed = try #require(registered.json["passkey"] as? [String: any Sendable])
            #expect(listed["synced"] as? Bool == false && listed["format"] as? String == "none")

            let signedIn = try await Self.signIn(passkey, api)
            #expect(signedIn.status == 200, "\(signedIn.text)")
            #expect(signedIn.json["accessToken"] is String && signedIn.json["refreshToken"] is String)
            let devices = try await api.call(.get, "/v1/devices", token: signedIn["token"])
            #expect(devices.status == 200)
            #expect(devices.objects.map { $0["id"] as? String } == [registered["id"]])
            #expect(devices.objects.first?["lastUsedAt"] is Int)
        }
    }

    /// `--dpop-required` covers passkeys: a sign-in without a proof is refused, one with a proof
    /// (the sign-in page's WebCrypto key) opens a session whose token, access token and refresh
    /// token are bound to that key — a copy used as a bearer token, or with another key, fails.
    @Test func dpopRequiredBindsPasskeySessionsToTheBrowsersKey() async throws {
        let harness = ServerHarness { configuration in
            configuration.passkeys = PasskeyPolicy(
                relyingParty: WebAuthnRelyingParty(id: "localhost", origins: [Self.origin]), relyingPartyName: "BioAuth tests")
            configuration.dpop.required = true
            configuration.dpop.publicOrigin = DPoPBindingTests.origin
        }
        try await harness.test { api in
            let primary = try await api.primarySession()
            let passkey = SoftwarePasskey(origin: Self.origin)
            #expect(try await Self.register(passkey, api, token: primary).status == 201)
            let refused = try await Self.signIn(passkey, api)
            #expect(refused.status == 400 && refused["error"] == "invalid_dpop_proof", "no proof, no session: \(refused.text)")

            let browserKey = P256.Signing.PrivateKey()
            let challenge = try await api.post("/v1/passkeys/login/challenge", ["username": "alice"])
            let options = try JSONDecoder().decode(Wire.PasskeyRequestOptions.self, from: Data(challenge.text.utf8))
            let credential = try passkey.authenticate(options)
            let signedIn = try await api.call(
                .post, "/v1/passkeys/login/finish", ["challengeId": options.challengeId, "credential": try Self.object(credential)],
                headers: try DPoPBindingTests.proof(browserKey, "POST", "/v1/passkeys/login/finish", harness))
            #expect(signedIn.status == 200 && signedIn["tokenType"] == "DPoP", "\(signedIn.text)")
            let access = try DPoPBindingTests.claims(signedIn["accessToken"])
            #expect((access["cnf"] as? [String: any Sendable])?["jkt"] as? String == DevicePublicKey(browserKey.publicKey).jwkThumbprint)

            let asBearer = try await api.call(.get, "/v1/devices", token: signedIn["token"])
            #expect(asBearer.isUniformFailure, "a copied token is useless as a bearer token")
            let refresh = try await api.post("/v1/token/refresh", ["refreshToken": signedIn["refreshToken"]])
            #expect(refresh.status >= 400, "nor does its refresh token rotate without the key: \(refresh.text)")
            let owner = try await api.call(
                .get, "/v1/devices",
                headers: [
                    .authorization: "DPoP " + signedIn["token"],
                    HTTPField.Name("DPoP")!: try DPoPBindingTests.proof(
                        browserKey, "GET", "/v1/devices", harness, accessToken: signedIn["token"]
                    ).first!.value,
                ])
            #expect(owner.status == 200, "the browser's own key works: \(owner.text)")
            let logout = try await api.call(
                .post, "/v1/logout", [:] as [String: any Sendable],
                headers: [
                    .authorization: "DPoP " + signedIn["token"],
                    HTTPField.Name("DPoP")!: try DPoPBindingTests.proof(
                        browserKey, "POST", "/v1/logout", harness, accessToken: signedIn["token"]
                    ).first!.value,
                ])
            #expect(logout.status == 204, "and ends its own session: \(logout.text)")
        }
    }

    /// A cloned counter-keeping authenticator racing its original: eight sign-ins carrying the
    /// same counter value at once, and exactly one gets a session; the stored counter never goes
    /// back, so the trailing clone is refused afterwards too.
    @Test func parallelSignInsWithOneCounterLetOneIn() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let primary = try await api.primarySession()
            let passkey = SoftwarePasskey(origin: Self.origin)
            passkey.keepsCounter = true
            #expect(try await Self.register(passkey, api, token: primary).status == 201)
            var finishes: [[String: any Sendable]] = []
            for _ in 0..<8 {
                let challenge = try await api.post("/v1/passkeys/login/challenge", ["username": "alice"])
                let options = try JSONDecoder().decode(Wire.PasskeyRequestOptions.self, from: Data(challenge.text.utf8))
                passkey.signCount = 4  // every copy signs counter 5
                finishes.append(["challengeId": options.challengeId, "credential": try Self.object(try passkey.authenticate(options))])
            }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for body in finishes { group.addTask { try await api.post("/v1/passkeys/login/finish", body).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1 && statuses.filter { $0 == 401 }.count == 7, "\(statuses)")
            let stored = try await harness.service.store.devices(userID: "alice").first?.credential.passkey?.signCount
            #expect(stored == 5, "the counter is the one that got in, never lower")
            passkey.signCount = 3
            #expect(try await Self.signIn(passkey, api).isUniformFailure, "a clone trailing behind is refused")
        }
    }

    /// Each anonymous passkey request costs the client one request of its budget: a sign-in is two.
    @Test func aSignInCostsTwoRequestsOfTheClientsBudget() async throws {
        let harness = Self.harness(requestsPerClient: 8)
        try await harness.test { api in
            // One request from the address: a password login for a user who does not exist yet.
            _ = try await api.post("/v1/login/password", ["username": "alice", "password": API.password], client: "198.51.100.7")
            let token = try await api.primarySession()  // from the default address: another budget
            let passkey = SoftwarePasskey(origin: Self.origin)
            #expect(try await Self.register(passkey, api, token: token).status == 201)
            // Then three sign-ins (six requests) and one challenge fill its budget of 8.
            let client = "198.51.100.7"
            for round in 1...3 {
                let challenge = try await api.post("/v1/passkeys/login/challenge", ["username": "alice"], client: client)
                let options = try JSONDecoder().decode(Wire.PasskeyRequestOptions.self, from: Data(challenge.text.utf8))
                let finish = try await api.post(
                    "/v1/passkeys/login/finish",
                    ["challengeId": options.challengeId, "credential": try Self.object(try passkey.authenticate(options))], client: client)
                #expect(finish.status == 200, "sign-in \(round): \(finish.text)")
            }
            #expect(try await api.post("/v1/passkeys/login/challenge", ["username": "alice"], client: client).status == 200)
            #expect(try await api.post("/v1/passkeys/login/challenge", ["username": "alice"], client: client).status == 429)
        }
    }

    /// A user who has a device needs the policy's proof for a passkey, as for a second phone: the
    /// verified passkey waits in an enrolment request until the phone approves it with the binding
    /// code; then it is a device in its cool-down, enrolled by approval.
    @Test func aPasskeyAfterTheFirstDeviceWaitsForThePhonesApproval() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let primary = try await api.primarySession()
            let phone = SoftwareDevice()
            let phoneID = try await api.enrol(phone, token: primary)
            let passkey = SoftwarePasskey(origin: Self.origin)
            let waiting = try await Self.register(passkey, api, token: primary)
            #expect(waiting.status == 202, "\(waiting.text)")
            #expect(waiting.json["bindingCode"] is String && waiting["approvalText"].contains("Laptop"))
            let complete: [String: any Sendable] = ["enrolmentRequestId": waiting["id"]]
            let early = try await api.post("/v1/passkeys/registration/complete", complete, token: primary)
            #expect(early.status == 403 && early["error"] == "approval_required", "\(early.text)")
            #expect(try await Self.signIn(passkey, api).isUniformFailure, "not a device yet")

            // The phone sees the request and approves it with the code the browser shows.
            let (approval, phoneSession) = try await api.stepUpApproval("alice", phoneID, phone, text: waiting.signedApprovalText)
            let approved = try await api.post(
                "/v1/enrolment-requests/\(waiting["id"])/approve", ["approval": approval], token: phoneSession)
            #expect(approved.status == 204, "\(approved.text)")
            // Only the session that registered it completes it.
            let other = try await api.post("/v1/login/password", ["username": "alice", "password": API.password])["token"]
            #expect(try await api.post("/v1/passkeys/registration/complete", complete, token: other).status == 404)
            let enrolled = try await api.post("/v1/passkeys/registration/complete", complete, token: primary)
            #expect(enrolled.status == 201, "\(enrolled.text)")
            #expect(enrolled["enrolledBy"] == "approval" && enrolled.json["passkey"] is [String: any Sendable])
            #expect(try await api.post("/v1/passkeys/registration/complete", complete, token: primary).status == 404, "used up")

            // A device now, in its cool-down: it signs in, and may not end every session.
            let signedIn = try await Self.signIn(passkey, api)
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let endAll = try await api.call(.delete, "/v1/sessions", token: signedIn["token"])
            #expect(endAll.status == 403, "\(endAll.text)")
        }
    }

    /// The user handle names the account to the authenticator without naming the person: 32
    /// random bytes, the same for each of the user's passkeys, never the user id; an assertion must
    /// carry the one its registration named. A passkey from before random handles keeps the user
    /// id's bytes, which its authenticator holds.
    @Test func aUserHandleIsRandomSharedByTheUsersPasskeysAndChecked() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let primary = try await api.primarySession()
            let laptop = SoftwarePasskey(origin: Self.origin)
            let registered = try await Self.register(laptop, api, token: primary)
            #expect(registered.status == 201, "\(registered.text)")
            #expect(laptop.userHandle.count == 32 && laptop.userHandle != Data("alice".utf8))
            #expect(try await Self.signIn(laptop, api).status == 200)
            let asUserID = { (credential: inout Wire.PasskeyAuthenticationCredential) in
                credential.response.userHandle = Base64URL.encode(Data("alice".utf8))
            }
            #expect(try await Self.signIn(laptop, api, change: asUserID).isUniformFailure, "the handle its registration did not name")

            // The next passkey of alice's is given the same handle; bob's another.
            let options = try await api.post("/v1/passkeys/registration/challenge", ["name": "Tablet"], token: primary)
            let user = try #require((options.json["publicKey"] as? [String: any Sendable])?["user"] as? [String: any Sendable])
            #expect(user["id"] as? String == Base64URL.encode(laptop.userHandle) && user["name"] as? String == "alice")
            let bob = SoftwarePasskey(origin: Self.origin)
            #expect(try await Self.register(bob, api, token: try await api.primarySession("bob")).status == 201)
            #expect(bob.userHandle.count == 32 && bob.userHandle != laptop.userHandle)

            // Registered before random handles: the stored credential has none, the authenticator the user id.
            let deviceID = DeviceID(registered["id"])
            var legacy = try #require(try await harness.service.store.device(id: deviceID)?.credential.passkey)
            legacy.userHandle = nil
            var plan = WritePlan()
            plan.add(.storePasskey(deviceID: deviceID, legacy))
            _ = try await harness.service.store.apply(plan)
            #expect(try await Self.signIn(laptop, api, change: asUserID).status == 200, "the legacy handle")
            #expect(try await Self.signIn(laptop, api).isUniformFailure, "a handle the legacy registration never named")
        }
    }

    /// Every check a relying party makes refuses its case with the uniform failure, audited
    /// under its reason: another origin, no user verification, a changed signature, a counter
    /// that went back, a replayed response, a revoked passkey, another user's name.
    @Test func eachSignInCheckRefusesItsCase() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let primary = try await api.primarySession()
            let passkey = SoftwarePasskey(origin: Self.origin)
            passkey.keepsCounter = true
            let registered = try await Self.register(passkey, api, token: primary)
            #expect(registered.status == 201, "\(registered.text)")
            #expect(try await Self.signIn(passkey, api).status == 200)

            passkey.origin = "http://localhost:8081"
            #expect(try await Self.signIn(passkey, api).isUniformFailure)
            passkey.origin = Self.origin
            passkey.userVerified = false
            #expect(try await Self.signIn(passkey, api).isUniformFailure)
            passkey.userVerified = true
            #expect(
                try await Self.signIn(passkey, api) { credential in
                    var signature = Base64URL.decode(credential.response.signature)!
                    signature[signature.count - 1] ^= 1
                    credential.response.signature = Base64URL.encode(signature)
                }.isUniformFailure)
            passkey.signCount = 0  // a clone's counter
            #expect(try await Self.signIn(passkey, api).isUniformFailure)
            passkey.signCount = 100
            #expect(try await Self.signIn(passkey, api).status == 200)

            // The same response twice: the challenge was consumed by the first.
            let challenge = try await api.post("/v1/passkeys/login/challenge", ["username": "alice"])
            let options = try JSONDecoder().decode(Wire.PasskeyRequestOptions.self, from: Data(challenge.text.utf8))
            let body: [String: any Sendable] = [
                "challengeId": options.challengeId, "credential": try Self.object(try passkey.authenticate(options)),
            ]
            #expect(try await api.post("/v1/passkeys/login/finish", body).status == 200)
            #expect(try await api.post("/v1/passkeys/login/finish", body).isUniformFailure)

            // Malformed, not wrong: 400 naming the field, and the challenge stays usable.
            for (field, change) in [
                ("type", { (credential: inout Wire.PasskeyAuthenticationCredential) in credential.type = "password" }),
                ("rawId", { (credential: inout Wire.PasskeyAuthenticationCredential) in credential.rawId = "not base64url!" }),
            ] {
                let refused = try await Self.signIn(passkey, api, change: change)
                #expect(refused.status == 400 && refused["field"] == field, "\(field): \(refused.text)")
            }

            // Named as another user: that user has no such passkey.
            _ = try await api.primarySession("bob")
            #expect(try await Self.signIn(passkey, api, user: "bob").isUniformFailure)

            // Revoked from its own session: it never signs in again.
            let own = try await Self.signIn(passkey, api)["token"]
            #expect(try await api.call(.delete, "/v1/devices/\(registered["id"])", token: own).status == 204)
            #expect(try await Self.signIn(passkey, api).isUniformFailure)
            let reasons = try await harness.auditedReasons()
            for reason in [
                "passkey.origin", "passkey.userVerification", "passkey.signature", "passkey.signCount", "unknownChallenge", "unknownDevice",
                "revokedDevice",
            ] {
                #expect(reasons.contains(reason), "\(reason) in \(reasons)")
            }
        }
    }

    /// A deployment that requires device-bound passkeys refuses a synced one at registration.
    @Test func aSyncedPasskeyIsRefusedWhereDeviceBoundOnesAreRequired() async throws {
        let harness = Self.harness(deviceBoundOnly: true)
        try await harness.test { api in
            let primary = try await api.primarySession()
            let synced = SoftwarePasskey(origin: Self.origin)
            synced.synced = true
            #expect(try await Self.register(synced, api, token: primary).isUniformFailure)
            #expect(try await harness.auditedReasons().contains("passkey.backupState"))
            let bound = SoftwarePasskey(origin: Self.origin)
            bound.format = "packed"
            let registered = try await Self.register(bound, api, token: primary)
            #expect(registered.status == 201, "\(registered.text)")
            #expect((registered.json["passkey"] as? [String: any Sendable])?["attestation"] as? String == "selfAttested")
        }
    }

    /// A passkey's key answers WebAuthn ceremonies only: a BioAuth login message it signed is
    /// refused like an unknown device's.
    @Test func aPasskeyNeverAnswersANativeChallenge() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let primary = try await api.primarySession()
            let passkey = SoftwarePasskey(origin: Self.origin)
            let id = try await Self.register(passkey, api, token: primary)["id"]
            let challenge = try await api.loginChallenge("alice", id)
            let message = try JSONDecoder().decode(ChallengeEnvelope.self, from: Data(challenge.text.utf8)).message()
            let signature = Base64URL.encode(try passkey.sign(message.encoded))
            #expect(try await api.finish(challenge, signature: signature).isUniformFailure)
        }
    }

    /// `bioauth-server` refuses origins a relying party cannot serve: another site, plain HTTP
    /// beyond localhost, a path; and origins without an RP ID.
    @Test(.timeLimit(.minutes(2))) func theServerRefusesOriginsOutsideItsRelyingParty() throws {
        for (id, origin, message) in [
            ("example.com", "https://evil.com", "is not example.com or under it"),
            ("example.com", "http://login.example.com", "must be https"),
            ("example.com", "https://example.com/login", "not an origin"),
        ] {
            let refused = try ServerProcess.command(
                ["serve", "--passkey-rp-id", id, "--passkey-origin", origin, "--database", ":memory:"], includingErrors: true)
            #expect(refused.status != 0 && refused.output.contains(message), "\(origin): \(refused.output)")
        }
        let orphan = try ServerProcess.command(
            ["serve", "--passkey-origin", "https://example.com", "--database", ":memory:"], includingErrors: true)
        #expect(orphan.status != 0 && orphan.output.contains("needs --passkey-rp-id"))
    }

    /// The ceremonies' bodies never show a challenge, its id or a signature in a description,
    /// `debugDescription` or `dump()`.
    @Test func passkeyBodiesHideTheirSecrets() throws {
        let challenge = Data(repeating: 0xAB, count: 32)
        let secret = Base64URL.encode(challenge)
        let creation = Wire.PasskeyCreationOptions(
            challengeId: "pending-id", relyingPartyID: "localhost", relyingPartyName: "n", userHandle: Data(count: 32), userName: "alice",
            challenge: challenge, timeout: 1, excluded: [], userVerification: "required", algorithms: [-7])
        let request = Wire.PasskeyRequestOptions(
            challengeId: "pending-id", relyingPartyID: "localhost", challenge: challenge, timeout: 1, userVerification: "required")
        let login = Wire.PasskeyLoginFinish(
            challengeId: "pending-id",
            credential: .init(
                id: "cred", response: .init(clientDataJSON: secret, authenticatorData: secret, signature: "sig-secret", userHandle: nil)))
        let registration = Wire.PasskeyRegistrationFinish(
            challengeId: "pending-id", credential: .init(id: "cred", response: .init(clientDataJSON: secret, attestationObject: secret)))
        for value in [creation, request, login, registration] as [Any] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), dumped] {
                #expect(!text.contains(secret) && !text.contains("pending-id") && !text.contains("sig-secret"), "\(text)")
            }
        }
    }

    /// Answers alike for a user who exists and one who does not; 404 where passkeys are off.
    @Test func theLoginChallengeTellsNothingAndPasskeysCanBeOff() async throws {
        try await Self.harness().test { api in
            _ = try await api.primarySession()
            let known = try await api.post("/v1/passkeys/login/challenge", ["username": "alice"])
            let unknown = try await api.post("/v1/passkeys/login/challenge", ["username": "nobody"])
            #expect(known.status == 200 && unknown.status == 200)
            #expect(known.json.keys.sorted() == unknown.json.keys.sorted())
            #expect((known.json["publicKey"] as? [String: any Sendable])?["allowCredentials"] as? [Any] != nil)
        }
        try await ServerHarness().test { api in
            let off = try await api.post("/v1/passkeys/login/challenge", ["username": "alice"])
            #expect(off.status == 404, "\(off.text)")
        }
    }
}
