import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import Crypto
import Foundation
import HTTPTypes
import Testing
import BioAuthServerTesting

/// Android Key Attestation end to end: the chain an Android app makes with the session's
/// attestation challenge (emulated under a test root the server is told to trust) enrols the key
/// attested, and each property a careless or hostile app would get wrong is refused by name.
struct AndroidEnrolmentTests {
    static let package = "dev.bioauth.android"
    static let digest = Data(repeating: 0x5A, count: 32)

    static func harness() -> ServerHarness {
        ServerHarness { configuration in
            configuration.attestation.android = .required(
                AndroidKeyAttestationVerifier(
                    requirements: AndroidKeyRequirements(packageNames: [package], signingCertificateDigests: [digest]), roots: [EmulatedKeyAttestation.testRoot]))
        }
    }

    /// The `androidKeyAttestation` field for `phone`'s key, made with `challenge` at the harness's time.
    static func chain(
        _ phone: SoftwareDevice, challenge: Data, at time: Date, forged: Bool = false, _ change: (inout EmulatedKeyAttestation.KeyProperties) -> Void = { _ in }
    ) -> [String: any Sendable] {
        var properties = EmulatedKeyAttestation.KeyProperties(packageName: package, signingCertificateDigest: digest)
        change(&properties)
        let chain =
            forged
            ? EmulatedKeyAttestation.forgedChain(for: phone.key.publicKey, challenge: challenge, properties: properties, at: time)
            : EmulatedKeyAttestation.chain(for: phone.key.publicKey, challenge: challenge, properties: properties, at: time)
        return ["androidKeyAttestation": chain.map(Base64URL.encode)]
    }

    @Test func aChainMadeWithTheSessionsChallengeEnrolsTheKeyAttested() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let token = try await api.primarySession()
            let challenge = try #require(Base64URL.decode(try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
            let phone = SoftwareDevice()
            let finish = try await AttestationEnrolmentTests.enrol(api, phone, token: token) { _ in
                Self.chain(phone, challenge: challenge, at: harness.clock.now()) { $0.securityLevel = .strongBox }
            }
            #expect(finish.status == 201, "\(finish.text)")
            let attestation = try #require(finish.json["attestation"] as? [String: any Sendable])
            #expect(attestation["format"] as? String == "android-key" && attestation["securityLevel"] as? String == "strongBox")
            #expect(attestation["appId"] as? String == Self.package && attestation["environment"] == nil)

            let login = try await api.login("alice", finish["id"], phone)
            let claims = try #require(CompactJWS(login["accessToken"])).claims
            #expect(claims["amr"] as? [String] == ["hwk", "user"] && claims["acr"] as? String == AttestationClass.attested)
            let att = try #require(claims["att"] as? [String: Any])
            #expect(att["fmt"] as? String == "android-key" && att["lvl"] as? String == "strongBox" && att["app"] as? String == Self.package)
        }
    }

    @Test func everyPropertyAnAppCanGetWrongIsRefusedByName() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let token = try await api.primarySession()
            let challenge = try #require(Base64URL.decode(try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
            let otherSession = try #require(
                Base64URL.decode(try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: try await api.primarySession())["challenge"]))
            let phone = SoftwareDevice()
            let now = harness.clock.now()
            func reason(_ fields: [String: any Sendable]) async throws -> String? {
                let reply = try await AttestationEnrolmentTests.enrol(api, phone, token: token) { _ in fields }
                #expect(reply.status == 403 && reply.json["field"] as? String == "androidKeyAttestation", "\(reply.text)")
                return reply.json["reason"] as? String
            }
            let cases: [(String, [String: any Sendable])] = [
                ("securityLevel", Self.chain(phone, challenge: challenge, at: now) { $0.securityLevel = .software }),
                ("challenge", Self.chain(phone, challenge: otherSession, at: now)),
                ("publicKey", Self.chain(SoftwareDevice(), challenge: challenge, at: now)),
                ("appIdentifier", Self.chain(phone, challenge: challenge, at: now) { $0.packageName = "com.attacker.app" }),
                ("signingCertificate", Self.chain(phone, challenge: challenge, at: now) { $0.signingCertificateDigest = Data(repeating: 1, count: 32) }),
                ("userAuthentication", Self.chain(phone, challenge: challenge, at: now) { $0.authTimeout = 300 }),
                ("userAuthentication", Self.chain(phone, challenge: challenge, at: now) { $0.userAuthType = nil }),
                ("keyAuthorization", Self.chain(phone, challenge: challenge, at: now) { $0.allowWhileOnBody = true }),
                ("keyOrigin", Self.chain(phone, challenge: challenge, at: now) { $0.origin = 2 }),
                ("keyPurpose", Self.chain(phone, challenge: challenge, at: now) { $0.purposes = [0, 1] }),
                ("keyAlgorithm", Self.chain(phone, challenge: challenge, at: now) { $0.algorithm = 1 }),
                ("keyCurve", Self.chain(phone, challenge: challenge, at: now) { $0.ecCurve = 2 }),
                ("keyCurve", Self.chain(phone, challenge: challenge, at: now) { $0.ecCurve = nil }),
                ("verifiedBoot", Self.chain(phone, challenge: challenge, at: now) { $0.verifiedBoot = false }),
                ("certificateChain", Self.chain(phone, challenge: challenge, at: now, forged: true)),
                // (A leaf's own dates are the device's and are not checked, as Google's verifier does
                // not: the challenge, this session's, is what makes the chain fresh.)
            ]
            for (expected, fields) in cases {
                #expect(try await reason(fields) == expected)
            }
            #expect(try await harness.service.store.devices(userID: "alice").isEmpty, "nothing refused is stored")
            // The same phone, with a chain made as Clients.md shows, enrols.
            let good = try await AttestationEnrolmentTests.enrol(api, phone, token: token) { _ in Self.chain(phone, challenge: challenge, at: now) }
            #expect(good.status == 201, "\(good.text)")
        }
    }
}

/// `--insecure-android-attestation-root` on the real executable: a required-attestation deployment
/// tested end to end with chains of the tester's own, as `--insecure-app-attest-root` serves Apple.
struct AndroidTestRootTests {
    @Test(.timeLimit(.minutes(2)))
    func aTestRootIsTrustedOnlyWhenNamedAndOnlyItsOwnChains() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-android-root-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rootFile = directory.appendingPathComponent("root.pem")
        try EmulatedKeyAttestation.testRootPEM.write(to: rootFile, atomically: true, encoding: .utf8)
        let required = ["--android-package", AndroidEnrolmentTests.package, "--android-signing-digest", AndroidEnrolmentTests.digest.hexString]

        /// What a new user's first Android enrolment on `server` gets: "enrolled", or the status and reason.
        func enrol(on server: ServerProcess, forged: Bool = false) async throws -> String {
            let http = ServerClient(baseURL: "http://127.0.0.1:\(server.port)")
            // A new user each time: a user's first device needs no approval.
            let credentials = ["username": "user-\(UUID().uuidString.prefix(8).lowercased())", "password": API.password]
            _ = try await http.post("/v1/users", credentials)
            let token = try await http.post("/v1/login/password", credentials)["token"]
            let challenge = try #require(Base64URL.decode(try await http.get("/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
            let phone = SoftwareDevice()
            let registration = try await http.post("/v1/devices/registration/challenge", ["name": "Pixel", "publicKey": phone.spki], token: token)
            #expect(registration.status == 200, "\(registration.text)")
            let envelope = Reply(status: registration.status, text: registration.text, headers: [:])
            var body = AndroidEnrolmentTests.chain(phone, challenge: challenge, at: Date(), forged: forged)
            body["challengeId"] = registration["challengeId"]
            body["signature"] = try phone.sign(envelope)
            let finish = try await http.post("/v1/devices/registration/finish", json: body, token: token)
            return finish.status == 201 ? "enrolled" : "\(finish.status) \(finish["reason"])"
        }

        let testing = try ServerProcess(database: ":memory:", extra: required + ["--insecure-android-attestation-root", rootFile.path])
        defer { testing.stop() }
        #expect(try await enrol(on: testing) == "enrolled")
        #expect(try await enrol(on: testing, forged: true) == "403 certificateChain", "a chain under another root")
        let production = try ServerProcess(database: ":memory:", extra: required)
        defer { production.stop() }
        #expect(try await enrol(on: production) == "403 certificateChain", "Google's roots alone do not vouch for the test root's chains")
        let missing = try ServerProcess.command([
            "--android-package", "p", "--android-signing-digest", AndroidEnrolmentTests.digest.hexString, "--insecure-android-attestation-root", directory.appendingPathComponent("none.pem").path,
        ])
        #expect(missing.status == 64, "a root file without a certificate stops the start (EX_USAGE)")
    }
}
