import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import Hummingbird
import Testing

/// Python's joserfc — another implementation of JOSE — verifies an access token with nothing but
/// the served JWKS. `.ci/run` installs it in a virtual environment and names its interpreter in
/// `BIOAUTH_TEST_PYTHON`; elsewhere the suite is skipped without it, under `.ci/run`
/// (`BIOAUTH_REQUIRE_SERVICES=1`) it must run.
@Suite(.enabled(if: IndependentJOSE.python != nil || TestServices.required, IndependentJOSE.skipReason))
struct IndependentJOSETests {
    @Test func joserfcVerifiesAnAccessTokenWithTheJWKS() async throws {
        let python = try #require(IndependentJOSE.python, "BIOAUTH_TEST_PYTHON is not set: run .ci/run, which installs joserfc")
        let harness = ServerHarness()
        try await harness.test { api in
            let (login, deviceID, _) = try await AccessTokenTests.login(api)
            let jwks = try await api.call(.get, "/.well-known/jwks.json").text
            let verified = try IndependentJOSE.verify(python: python, token: login["accessToken"], jwks: jwks, now: harness.clock.now())
            #expect(verified.status == 0, "\(verified.output)")
            let result = try #require(
                try JSONSerialization.jsonObject(with: Data(verified.output.utf8)) as? [String: Any], "\(verified.output)")
            let claims = try #require(result["claims"] as? [String: Any])
            let header = try #require(result["header"] as? [String: Any])
            #expect(header["alg"] as? String == "ES256" && header["typ"] as? String == "at+jwt")
            #expect(
                claims["sub"] as? String == "alice" && claims["device_id"] as? String == deviceID
                    && claims["sid"] as? String == login["sessionId"])

            // The same verifier refuses a token whose claims were changed after signing.
            var parts = login["accessToken"].split(separator: ".").map(String.init)
            parts[1] = Base64URL.encode(
                Data(String(decoding: Base64URL.decode(parts[1])!, as: UTF8.self).replacingOccurrences(of: "alice", with: "mallo").utf8))
            let tampered = try IndependentJOSE.verify(
                python: python, token: parts.joined(separator: "."), jwks: jwks, now: harness.clock.now())
            #expect(tampered.status != 0 && tampered.output.contains("BadSignatureError"), "\(tampered.output)")
        }
    }
}

extension IndependentJOSETests {
    /// A resource server in Python, written as `docs/Clients.md` says, with joserfc: it accepts a
    /// DPoP-bound access token only with a proof by the key `cnf.jkt` names, for its own request.
    @Test func joserfcChecksADPoPBoundTokenAndItsProofAsTheGuideSays() async throws {
        let python = try #require(IndependentJOSE.python, "BIOAUTH_TEST_PYTHON is not set: run .ci/run, which installs joserfc")
        let harness = DPoPBindingTests.harness()
        try await harness.test { api in
            let phone = SoftwareDevice(), key = P256.Signing.PrivateKey()
            let phoneID = try await DPoPBindingTests.enrol(api, harness, phone: phone, dpopKey: key)
            let login = try await DPoPBindingTests.login(api, harness, phoneID: phoneID, phone: phone, dpopKey: key)
            let token = login["accessToken"], jwks = try await api.call(.get, "/.well-known/jwks.json").text
            let code = try IndependentJOSE.guideResourceServer()
            func proof(_ signer: P256.Signing.PrivateKey, url: String = "https://api.example.com/orders", for accessToken: String = token)
                throws -> String
            {
                try DPoPProof.make(
                    key: DevicePublicKey(signer.publicKey), method: "GET", url: url, at: harness.clock.now(), accessToken: accessToken
                ) { try signer.signature(for: $0).rawRepresentation }
            }
            let cases: [(String, String, Bool)] = [
                ("the owner's proof", try proof(key), true),
                ("another key's proof", try proof(P256.Signing.PrivateKey()), false),
                ("a proof for another URL", try proof(key, url: "https://api.example.com/admin"), false),
                ("a proof for another token", try proof(key, for: "another token"), false),
            ]
            for (name, dpop, accepted) in cases {
                let result = try IndependentJOSE.run(
                    python: python, code: code + IndependentJOSE.dpopDriver,
                    arguments: [
                        jwks, token, dpop, "GET", "https://api.example.com/orders", String(Int(harness.clock.now().timeIntervalSince1970)),
                    ])
                #expect(
                    (result.status == 0) == accepted && result.output.hasPrefix(accepted ? "accepted" : "rejected"),
                    "\(name): \(result.output)")
            }
        }
    }
}

extension IndependentJOSETests {
    /// `docs/Clients.md` §9 as written: the CLI's emulated phone logs in to a real server and
    /// prints its access token and a proof for an API call; the guide's Python resource server
    /// accepts them for that call and for no other.
    @Test(.timeLimit(.minutes(3)))
    func theGuidesRecipeAcceptsTheCLIsTokenAndProof() async throws {
        let python = try #require(IndependentJOSE.python, "BIOAUTH_TEST_PYTHON is not set: run .ci/run, which installs joserfc")
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-recipe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let server = try ServerProcess(database: scratch.appendingPathComponent("bioauth.sqlite").path)
        defer { _ = server.stop() }
        let state = scratch.appendingPathComponent("phone.json").path
        func device(_ arguments: String..., input: [String] = []) async -> CommandRunner.Result {
            await CommandRunner.run(["device"] + arguments + ["--state", state], input: input)
        }
        let url = "http://127.0.0.1:\(server.port)"
        #expect(await device("create", "--biometry", "face-id", input: ["123456"]).exitCode == 0)
        #expect(await device("register", "--server", url, "--user", "alice", "--sign-up", input: ["alice's password"]).exitCode == 0)
        #expect(await device("login").exitCode == 0)
        let api = "https://api.example.com/orders"
        let printed = await device("dpop-proof", "--method", "GET", "--url", api, "--print-access-token")
        #expect(printed.exitCode == 0, "\(printed.output)")
        let lines = printed.output.split(separator: "\n").map(String.init)
        let (token, proof) = (try #require(lines.dropLast().last), try #require(lines.last))
        let jwks = try await ServerClient(baseURL: url).get("/.well-known/jwks.json").text
        let code = try IndependentJOSE.guideResourceServer()
        let now = String(Int(Date().timeIntervalSince1970))
        for (name, method, target, accepted) in [
            ("the call the proof names", "GET", api, true), ("another method", "POST", api, false),
            ("another URL", "GET", "https://api.example.com/admin", false),
        ] {
            let result = try IndependentJOSE.run(
                python: python, code: code + IndependentJOSE.dpopDriver, arguments: [jwks, token, proof, method, target, now])
            #expect(
                (result.status == 0) == accepted && result.output.hasPrefix(accepted ? "accepted alice" : "rejected"),
                "\(name): \(result.output)")
        }
    }
}

enum IndependentJOSE {
    /// The guide's Python block that defines `verify_dpop_request`, imports included, as printed
    /// in `docs/Clients.md`.
    static func guideResourceServer() throws -> String {
        let guide = try PackagePaths.text("docs/Clients.md")
        let block = guide.components(separatedBy: "```python\n").dropFirst().first { $0.contains("def verify_dpop_request") }
        return String(try #require(block?.components(separatedBy: "```").first))
    }

    /// Calls the guide's `verify_dpop_request` with a request made of the arguments; prints
    /// `accepted <sub>` or `rejected <why>`.
    static let dpopDriver = #"""

        import sys
        class Request:
            pass
        jwks, token, proof, method, url, now = sys.argv[1:7]
        request = Request()
        request.method, request.url = method, url
        request.headers = {"Authorization": "DPoP " + token, "DPoP": proof}
        try:
            claims = verify_dpop_request(request, json.loads(jwks), set(), now=int(now))
            print("accepted", claims["sub"])
        except Exception as error:
            print("rejected", error)
            sys.exit(1)
        """#

    /// Runs `code` with `arguments` in `python`: its status and output.
    static func run(python: String, code: String, arguments: [String]) throws -> (status: Int32, output: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-jose-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let scriptFile = directory.appendingPathComponent("resource.py")
        try code.write(to: scriptFile, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [scriptFile.path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static let python = ProcessInfo.processInfo.environment["BIOAUTH_TEST_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
    static let skipReason: Comment = "no BIOAUTH_TEST_PYTHON with joserfc: .ci/run installs it"

    /// Verifies with joserfc: signature (ES256 only, key by `kid`), then iss, aud, sub and exp
    /// at `now`. Prints the header and claims as JSON, or the error's type and exits 1.
    static let script = #"""
        import json, sys
        from joserfc import jwt
        from joserfc.jwk import KeySet
        from joserfc.errors import JoseError
        jwks, token, now = json.loads(open(sys.argv[1]).read()), sys.argv[2], int(sys.argv[3])
        try:
            decoded = jwt.decode(token, KeySet.import_key_set(jwks), algorithms=["ES256"])
            registry = jwt.JWTClaimsRegistry(now=now, leeway=0, iss={"essential": True, "value": "bioauth.test"},
                                             aud={"essential": True, "value": "bioauth.test"}, sub={"essential": True}, exp={"essential": True})
            registry.validate(decoded.claims)
        except JoseError as error:
            print(type(error).__name__)
            sys.exit(1)
        print(json.dumps({"header": decoded.header, "claims": decoded.claims}))
        """#

    static func verify(python: String, token: String, jwks: String, now: Date) throws -> (status: Int32, output: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-jwks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let jwksFile = directory.appendingPathComponent("jwks.json")
        try jwks.write(to: jwksFile, atomically: true, encoding: .utf8)
        return try run(python: python, code: script, arguments: [jwksFile.path, token, String(Int(now.timeIntervalSince1970))])
    }
}
