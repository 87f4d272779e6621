import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import Testing

struct DemoTests {
    @Test func demoTellsTheWholeStoryAndExitsZero() async {
        let result = await CommandRunner.run(["demo"])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(result.output.contains("All 13 steps behaved as expected."))
        for title in [
            "Primary login", "Device-key enrolment", "Biometric login", "Step-up approval", "Hooked evaluatePolicy",
            "Tampered challenge", "knows the device passcode", "Replayed signature", "Stolen public key", "Expired challenge", "Brute-force burst",
        ] {
            #expect(result.output.contains(title), "missing step: \(title)")
        }
        #expect(!result.output.contains("✘"))
    }

    @Test func demoJSONIsOneRecordPerStep() async throws {
        let result = await CommandRunner.run(["demo", "--json"])
        #expect(result.exitCode == 0)
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == 14)
        for line in lines.dropLast() {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(record["ok"] as? Bool == true && record["title"] is String && record["step"] is Int)
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as? [String: Any])
        #expect(summary["passed"] as? Bool == true && summary["steps"] as? Int == 13)
    }

    @Test func repliesDescribeThemselvesWithoutTheirBody() {
        let reply = ServerClient.Reply(status: 200, text: #"{"token":"c2VjcmV0LXRva2VuLXZhbHVl"}"#, retryAfter: nil)
        #expect("\(reply)" == "Reply(HTTP 200, \(reply.text.utf8.count) bytes)")
        #expect(!"\(reply)".contains("c2VjcmV0"))
    }

    @Test func helpListsTheCommands() async {
        let result = await CommandRunner.run(["--help"])
        #expect(result.output.contains("USAGE: bioauth <subcommand>"))
        for command in ["demo", "device", "key"] { #expect(result.output.contains(command)) }
        let device = await CommandRunner.run(["device", "--help"])
        for command in ["create", "register", "login", "step-up", "enroll", "remove-passcode", "lock-out", "status"] {
            #expect(device.output.contains(command), "device --help lacks \(command)")
        }
    }
}

struct KeyCommandTests {
    let key = P256.Signing.PrivateKey()

    @Test(arguments: ["x963", "spki", "pem", "jwk"])
    func convertsBetweenEveryPairOfFormats(from: String) async throws {
        let publicKey = DevicePublicKey(key.publicKey)
        let inputs = [
            "x963": publicKey.x963Representation.hexString, "spki": publicKey.spkiRepresentation.base64EncodedString(),
            "pem": publicKey.pemRepresentation, "jwk": publicKey.jwkRepresentation,
        ]
        let expected = [
            "x963": publicKey.x963Representation.hexString, "spki": publicKey.spkiRepresentation.hexString,
            "pem": publicKey.pemRepresentation.trimmingCharacters(in: .newlines), "jwk": publicKey.jwkRepresentation,
        ]
        for to in ["x963", "spki", "pem", "jwk"] {
            let result = await CommandRunner.run(["key", "convert", "--to", to], input: inputs[from]!.split(separator: "\n").map(String.init))
            #expect(result.exitCode == 0)
            #expect(result.output.trimmingCharacters(in: .newlines) == expected[to], "\(from) → \(to)")
        }
    }

    @Test func rejectsANonP256KeyWithAHint() async {
        let result = await CommandRunner.run(["key", "convert", "--to", "pem"], input: [Data(repeating: 4, count: 65).hexString])
        #expect(result.exitCode == 1)
        #expect(result.output.contains("not a P-256 public key") && result.output.contains("→"))
    }

    @Test func verifiesDERAndRawSignatures() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let message = Data("hello".utf8)
        let signature = try key.signature(for: message)
        let files = [
            "key": Data(DevicePublicKey(key.publicKey).pemRepresentation.utf8), "message": message,
            "der": signature.derRepresentation, "raw": Data(signature.rawRepresentation.hexString.utf8), "other": Data("hellp".utf8),
        ]
        for (name, data) in files { try data.write(to: directory.appendingPathComponent(name)) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let valid = await CommandRunner.run(["key", "verify", "--key", path("key"), "--signature", path("der"), "--message", path("message")])
        #expect(valid.exitCode == 0 && valid.output.contains("valid signature"))
        let raw = await CommandRunner.run(["key", "verify", "--raw", "--key", path("key"), "--signature", path("raw"), "--message", path("message")])
        #expect(raw.exitCode == 0)
        let invalid = await CommandRunner.run(["key", "verify", "--key", path("key"), "--signature", path("der"), "--message", path("other")])
        #expect(invalid.exitCode == 1 && invalid.output.contains("INVALID"))
    }

    @Test func vectorsMatchTheProtocol() async throws {
        let result = await CommandRunner.run(["key", "vectors"])
        #expect(result.exitCode == 0)
        for vector in ProtocolVectors.all { #expect(result.output.contains(vector.message.encoded.hexString)) }
        let json = await CommandRunner.run(["key", "vectors", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let publicKey = try DevicePublicKey(spki: Data(hexString: object["publicKeySPKI"] as! String)!)
        for record in object["vectors"] as! [[String: String]] {
            #expect(publicKey.isValidSignature(der: Data(hexString: record["signature"]!)!, for: Data(hexString: record["message"]!)!))
        }
    }
}

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
        let wrongKey = await device("step-up", "--operation", "transfer 1.00 EUR to bob", "--api-key", "bioauth_sk_" + String(repeating: "A", count: 43))
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
        let reenrolled = await device("register", "--server", url, "--user", "alice", "--reenrol", "--recovery-inbox", inbox, input: ["alice's password"])
        #expect(reenrolled.exitCode == 0 && reenrolled.output.contains("re-enrolled"), "\(reenrolled.output)")
        #expect(await device("login").exitCode == 0)

        // Removing the passcode deletes the key.
        #expect(await device("remove-passcode").exitCode == 0)
        let gone = await device("login")
        #expect(gone.exitCode == 1)
        #expect(await device("status").output.contains("passcode:   not set"))
    }
}
