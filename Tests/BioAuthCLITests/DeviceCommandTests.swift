import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import Testing

/// `bioauth device …` end to end against a spawned `bioauth-server`: the pen-test story replayed.
struct DeviceCommandTests {
    @Test(.timeLimit(.minutes(3)))
    func penTestStoryAgainstARealServer() async throws {
        let inbox = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-inbox-\(UUID().uuidString)").path
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-cli-\(UUID().uuidString).sqlite").path
        let apiKey = try ServerProcess.createApiKey(database: database, scopes: ["approvals"])
        let server = try ServerProcess(database: database, extra: ["--recovery-code-directory", inbox])
        defer { server.stop() }
        defer { try? FileManager.default.removeItem(atPath: inbox) }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-device-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let url = "http://127.0.0.1:\(server.port)"
        func device(_ arguments: String..., input: [String] = []) async -> CommandRunner.Result {
            await CommandRunner.run(["device"] + arguments + ["--state", state], input: input)
        }

        let missing = await device("status")
        #expect(missing.exitCode == 1 && missing.output.contains("bioauth device create"))
        #expect(await device("create", "--biometry", "face-id", input: ["123456"]).exitCode == 0)
        let permissions = try FileManager.default.attributesOfItem(atPath: state)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        let noPassword = await device("register", "--server", url, "--user", "alice", "--sign-up")
        #expect(noPassword.exitCode == 1 && noPassword.output.contains("standard input"))
        let registered = await device("register", "--server", url, "--user", "alice", "--sign-up", input: ["alice's password"])
        #expect(registered.exitCode == 0, "\(registered.output)")
        let login = await device("login")
        #expect(login.exitCode == 0 && login.output.contains("signed in as alice"), "\(login.output)")
        #expect(await device("step-up", "--operation", "transfer 5.00 EUR to bob").output.contains("pass --api-key to redeem it"))
        let redeemed = await device("step-up", "--operation", "transfer 100.00 EUR to bob", "--api-key", apiKey)
        #expect(redeemed.output.contains("the app's backend redeemed the one-time approval for device"), "\(redeemed.output)")
        let wrongKey = await device(
            "step-up", "--operation", "transfer 1.00 EUR to bob", "--api-key", "bioauth_sk_" + String(repeating: "A", count: 43))
        #expect(wrongKey.exitCode == 1, "\(wrongKey.output)")

        // The jailbreak hook and a stranger's face get nothing.
        let hooked = await device("login", "--jailbreak-hook", "--person", "stranger")
        #expect(hooked.exitCode == 1 && hooked.output.contains("notRecognised"), "\(hooked.output)")

        // Lockout: the device passcode clears it.
        #expect(await device("lock-out").exitCode == 0)
        let locked = await device("login")
        #expect(locked.exitCode == 1 && locked.output.contains("bioauth device unlock"))
        #expect(await device("unlock", input: ["123456"]).exitCode == 0)
        #expect(await device("login").exitCode == 0)

        // Someone who knows the passcode enrols a face: the key is dead (still found), re-enrolment fixes it.
        #expect(await device("enroll").exitCode == 0)
        let invalidated = await device("login")
        #expect(invalidated.exitCode == 1 && invalidated.output.contains("--reenrol"), "\(invalidated.output)")
        #expect(await device("status").output.contains("device key: invalidated"))
        let passwordOnly = await device("register", "--server", url, "--user", "alice", "--reenrol", input: ["alice's password"])
        #expect(passwordOnly.exitCode == 1 && passwordOnly.output.contains("approvalRequired"), "\(passwordOnly.output)")
        let reenrolled = await device(
            "register", "--server", url, "--user", "alice", "--reenrol", "--recovery-inbox", inbox, input: ["alice's password"])
        #expect(reenrolled.exitCode == 0 && reenrolled.output.contains("re-enrolled"), "\(reenrolled.output)")
        #expect(await device("login").exitCode == 0)

        // Removing the passcode deletes the key.
        #expect(await device("remove-passcode").exitCode == 0)
        let gone = await device("login")
        #expect(gone.exitCode == 1)
        #expect(await device("status").output.contains("passcode:   not set"))
    }

    /// What a backend team (Python, its own login) tests without Swift: its backend asks for a
    /// grant, the emulated phone enrols with it (`register --grant`, the token on stdin), logs in
    /// and prints the access token for its services, and approves an operation whose approval the
    /// backend redeems itself (`step-up --print-approval`).
    @Test(.timeLimit(.minutes(3)))
    func aBackendThatOwnsTheLoginDrivesThePhoneFromTheShell() async throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-cli-\(UUID().uuidString).sqlite").path
        let apiKey = try ServerProcess.createApiKey(database: database, scopes: ["enrolment-grants", "approvals"])
        let server = try ServerProcess(database: database)
        defer { server.stop() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-device-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let url = "http://127.0.0.1:\(server.port)"
        let backend = ServerClient(baseURL: url)
        func device(_ arguments: String..., input: [String] = []) async -> CommandRunner.Result {
            await CommandRunner.run(["device"] + arguments + ["--state", state], input: input)
        }
        #expect(await device("create", input: ["123456"]).exitCode == 0)
        let grant = try await backend.post("/v1/backend/enrolment-grants", ["userId": "u-1842"], token: apiKey)
        #expect(grant.status == 201, "\(grant)")
        let both = await device("register", "--server", url, "--user", "u-1842", "--grant", "--sign-up", input: [grant["token"]])
        #expect(both.exitCode != 0 && both.output.contains("--grant and --sign-up"), "\(both.output)")
        let registered = await device("register", "--server", url, "--user", "u-1842", "--grant", input: [grant["token"]])
        #expect(registered.exitCode == 0 && registered.output.contains("enrolled device"), "\(registered.output)")
        #expect(!registered.output.contains(grant["token"]), "the grant is never printed")

        let login = await device("login", "--print-access-token")
        let accessToken = try #require(login.output.split(separator: "\n").last.map(String.init))
        #expect(login.exitCode == 0 && accessToken.split(separator: ".").count == 3, "\(login.output)")
        let introspected = try await backend.post("/v1/introspect", ["token": accessToken], token: apiKey)
        #expect(introspected.status == 403, "this key has no introspect scope: the token itself is checked with the JWKS")
        let claims = try #require(Base64URL.decode(String(accessToken.split(separator: ".")[1])))
        #expect(String(decoding: claims, as: UTF8.self).contains(#""sub":"u-1842""#))

        let approved = await device("step-up", "--operation", "pay 5.00 EUR", "--print-approval")
        let approval = try #require(approved.output.split(separator: "\n").last.map(String.init))
        #expect(approved.exitCode == 0 && approval.count == 43, "\(approved.output)")
        let operation = Base64URL.encode(Data("pay 5.00 EUR".utf8))
        let redeemed = try await backend.post(
            "/v1/backend/approvals/redeem", ["approval": approval, "operation": operation, "userId": "u-1842"], token: apiKey)
        #expect(redeemed.status == 200 && redeemed["userId"] == "u-1842", "\(redeemed)")
        #expect(
            try await backend.post(
                "/v1/backend/approvals/redeem", ["approval": approval, "operation": operation, "userId": "u-1842"], token: apiKey
            ).status == 401, "once")
    }

    /// The CLI's phone serves other languages: it lists a browser's sign-in, approves it with the
    /// screen's number (a wrong one is refused and ends the request), denies another, and prints
    /// a DPoP proof for an API call that checks out against its access token as a resource server
    /// checks it (`docs/Clients.md` §9).
    @Test(.timeLimit(.minutes(3)))
    func thePhoneApprovesABrowserAndProvesItsToken() async throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-cli-\(UUID().uuidString).sqlite").path
        let server = try ServerProcess(database: database, extra: ["--cross-device-sign-in"])
        defer { server.stop() }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-device-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let url = "http://127.0.0.1:\(server.port)"
        func device(_ arguments: String..., input: [String] = []) async -> CommandRunner.Result {
            await CommandRunner.run(["device"] + arguments + ["--state", state], input: input)
        }
        #expect(await device("create", "--biometry", "face-id", input: ["123456"]).exitCode == 0)
        #expect(await device("register", "--server", url, "--user", "alice", "--sign-up", input: ["alice's password"]).exitCode == 0)
        #expect(await device("login").exitCode == 0)

        let browser = ServerClient(baseURL: url)
        let started = try await browser.post("/v1/cross-device/requests", ["username": "alice"])
        let listed = await device("sign-ins")
        #expect(listed.output.contains(started["id"]) && listed.output.contains("Sign in as alice on another screen"), "\(listed.output)")
        #expect(!listed.output.contains(started["number"]), "the phone never shows the number")
        let approved = await device("approve-sign-in", "--id", started["id"], "--number", started["number"])
        #expect(approved.exitCode == 0, "\(approved.output)")
        let polled = try await browser.post("/v1/cross-device/requests/\(started["id"])/poll", ["pollToken": started["pollToken"]])
        #expect(polled["status"] == "approved", "\(polled.text)")

        let other = try await browser.post("/v1/cross-device/requests", ["username": "alice"])
        let wrong = String(format: "%04d", (Int(other["number"])! + 1) % 10_000)
        #expect(await device("approve-sign-in", "--id", other["id"], "--number", wrong).exitCode != 0, "a wrong number is refused")
        let third = try await browser.post("/v1/cross-device/requests", ["username": "alice"])
        #expect(await device("deny-sign-in", "--id", third["id"]).exitCode == 0)
        let denied = try await browser.post("/v1/cross-device/requests/\(third["id"])/poll", ["pollToken": third["pollToken"]])
        #expect(denied["status"] == "ended" && denied["endedBy"] == "denied", "\(denied.text)")

        let api = "https://api.example.com/orders"
        let printed = await device("dpop-proof", "--method", "GET", "--url", api, "--print-access-token")
        #expect(printed.exitCode == 0, "\(printed.output)")
        let lines = printed.output.split(separator: "\n").map(String.init)
        let (token, compact) = (try #require(lines.dropLast().last), try #require(lines.last))
        let proof = try DPoPProof(compact)
        try proof.check(method: "GET", url: api, at: Date(), window: DPoPWindow(), accessToken: token, nonces: [])
        let payload = try #require(Base64URL.decode(String(token.split(separator: ".")[1])))
        let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        #expect((claims["cnf"] as? [String: Any])?["jkt"] as? String == proof.thumbprint, "the token is bound to the proof's key")
    }
}
