import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthServerTesting
import BioAuthWebhooks
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import SwiftASN1
import Synchronization
import Testing
import X509

/// Android Key Attestation end to end: the chain an Android app makes with the session's
/// attestation challenge (emulated under a test root the server is told to trust) enrols the key
/// attested, and each property a careless or hostile app would get wrong is refused by name.
struct AndroidEnrolmentTests {
    static let package = "dev.bioauth.android"
    static let digest = Data(repeating: 0x5A, count: 32)

    static func harness(revocation: AndroidKeyAttestationVerifier.Revocation = .unchecked) -> ServerHarness {
        ServerHarness { configuration in
            configuration.attestation.android = .required(
                AndroidKeyAttestationVerifier(
                    requirements: AndroidKeyRequirements(packageNames: [package], signingCertificateDigests: [digest]),
                    roots: [EmulatedKeyAttestation.testRoot],
                    revocation: revocation))
        }
    }

    /// Issue 45 item 3: the attestation challenge is the server's, for one enrolment, for ten
    /// minutes: a chain made with it enrols once; made up, expired or already used, it is refused.
    @Test func oneAttestationChallengeEnrolsOnceInItsSessionWithinItsLifetime() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let token = try await api.primarySession()
            func issue() async throws -> Data {
                try #require(
                    Base64URL.decode(try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
            }
            let phone = SoftwareDevice()
            /// The finish of a registration of `phone` with a chain made for `challenge`, signed by `signer`.
            func enrol(_ challenge: Data, signer: SoftwareDevice? = nil) async throws -> String {
                let registration = try await api.post(
                    "/v1/devices/registration/challenge", ["name": "Pixel", "publicKey": phone.spki], token: token)
                var body = Self.chain(phone, challenge: challenge, at: harness.clock.now())
                body["challengeId"] = registration["challengeId"]
                body["signature"] = try (signer ?? phone).sign(registration)
                let reply = try await api.post("/v1/devices/registration/finish", body, token: token)
                return reply.status == 201 ? "enrolled" : "\(reply.status) \(reply.json["reason"] as? String ?? "")"
            }
            #expect(
                try await enrol(Data((0..<32).map { _ in UInt8.random(in: 0...255) })) == "403 challenge", "one the server never issued")
            // A finish that takes the challenge and then fails (a bad signature) spends it.
            let first = try await issue()
            #expect(try await enrol(first, signer: SoftwareDevice()).hasPrefix("401"))
            #expect(try await enrol(first) == "403 challenge", "used once already")
            // One that waits past its ten minutes.
            let late = try await issue()
            harness.clock.advance(by: AttestationPolicy.androidChallengeLifetime + 1)
            #expect(try await enrol(late) == "403 challenge", "expired")
            #expect(try await harness.service.store.devices(userID: "alice").isEmpty)
            #expect(try await enrol(try await issue()) == "enrolled")
        }
    }

    /// Issue 45 item 2 at the server: a listed certificate refuses the enrolment by name; a list
    /// the server cannot trust any more answers 503 and leaves the challenge to finish once it can.
    @Test func theStatusListRefusesAListedChainAndFailsClosedWhenStale() async throws {
        let status = AttestationStatus()
        let harness = Self.harness(revocation: .checked(status))
        try await harness.test { api in
            let token = try await api.primarySession()
            let challenge = try #require(
                Base64URL.decode(try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
            let phone = SoftwareDevice()
            let now = harness.clock.now()
            let fields = Self.chain(phone, challenge: challenge, at: now)
            let intermediate = try Certificate(
                derEncoded: [UInt8](try #require(Base64URL.decode((fields["androidKeyAttestation"] as? [String])?.last ?? ""))))

            // No list yet: 503 with Retry-After, the readiness probe says why, nothing counted or consumed.
            let registration = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Pixel", "publicKey": phone.spki], token: token)
            var body: [String: any Sendable] = ["challengeId": registration["challengeId"], "signature": try phone.sign(registration)]
            body.merge(fields) { $1 }
            let unknown = try await api.post("/v1/devices/registration/finish", body, token: token)
            #expect(
                unknown.status == 503 && unknown.json["error"] as? String == "unavailable" && unknown.headers[.retryAfter] == "300",
                "\(unknown.text)")
            let ready = try await api.call(.get, "/health/ready")
            #expect(
                ready.status == 200 && (ready.json["notes"] as? [String])?.first?.contains("Android enrolments are refused") == true,
                "\(ready.text)")

            // The intermediate listed: refused by name, audited; the challenge is spent.
            status.update(
                .init(
                    list: AttestationStatusList(entries: [
                        AttestationStatusList.key(intermediate.serialNumber): .init(status: "REVOKED", reason: "KEY_COMPROMISE")
                    ]), asOf: now))
            #expect(try await api.call(.get, "/health/ready").json["notes"] == nil)
            let revoked = try await api.post("/v1/devices/registration/finish", body, token: token)
            #expect(revoked.status == 403 && revoked["reason"] == "certificateStatus", "\(revoked.text)")
            let audit = try await harness.service.store.auditEvents(userID: "alice", limit: 10)
            #expect(audit.contains { $0.kind == .deviceEnrollmentFailed && $0.reason?.description == "attestation.certificateStatus" })

            // A list that names nobody of the chain, but is eight days old: 503 again.
            status.update(.init(list: AttestationStatusList(entries: [:]), asOf: now))
            harness.clock.advance(by: 8 * 86_400)
            let stale = try await AttestationEnrolmentTests.enrol(api, phone, token: try await api.primarySession()) { _ in fields }
            #expect(stale.status == 503, "\(stale.text)")
            #expect(try await harness.service.store.devices(userID: "alice").isEmpty, "nothing refused is stored")
        }
    }

    /// The `androidKeyAttestation` field for `phone`'s key, made with `challenge` at the harness's time.
    static func chain(
        _ phone: SoftwareDevice, challenge: Data, at time: Date, forged: Bool = false,
        _ change: (inout EmulatedKeyAttestation.KeyProperties) -> Void = { _ in }
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
            let challenge = try #require(
                Base64URL.decode(try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
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
            let challenge = try #require(
                Base64URL.decode(try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
            let otherSession = try #require(
                Base64URL.decode(
                    try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: try await api.primarySession())[
                        "challenge"]))
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
                (
                    "signingCertificate",
                    Self.chain(phone, challenge: challenge, at: now) { $0.signingCertificateDigest = Data(repeating: 1, count: 32) }
                ),
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
            let good = try await AttestationEnrolmentTests.enrol(api, phone, token: token) { _ in
                Self.chain(phone, challenge: challenge, at: now)
            }
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
        let required = [
            "--android-package", AndroidEnrolmentTests.package, "--android-signing-digest", AndroidEnrolmentTests.digest.hexString,
        ]

        /// What a new user's first Android enrolment on `server` gets: "enrolled", or the status and reason.
        func enrol(on server: ServerProcess, forged: Bool = false) async throws -> String {
            let http = ServerClient(baseURL: "http://127.0.0.1:\(server.port)")
            // A new user each time: a user's first device needs no approval.
            let credentials = ["username": "user-\(UUID().uuidString.prefix(8).lowercased())", "password": API.password]
            _ = try await http.post("/v1/users", credentials)
            let token = try await http.post("/v1/login/password", credentials)["token"]
            let challenge = try #require(
                Base64URL.decode(try await http.get("/v1/devices/registration/attestation-challenge", token: token)["challenge"]))
            let phone = SoftwareDevice()
            let registration = try await http.post(
                "/v1/devices/registration/challenge", ["name": "Pixel", "publicKey": phone.spki], token: token)
            #expect(registration.status == 200, "\(registration.text)")
            let envelope = Reply(status: registration.status, text: registration.text, headers: [:])
            var body = AndroidEnrolmentTests.chain(phone, challenge: challenge, at: Date(), forged: forged)
            body["challengeId"] = registration["challengeId"]
            body["signature"] = try phone.sign(envelope)
            let finish = try await http.post("/v1/devices/registration/finish", json: body, token: token)
            return finish.status == 201 ? "enrolled" : "\(finish.status) \(finish["reason"])"
        }

        // A status list of the tester's own, in Google's format: an empty one, and one that names the test intermediate.
        let emptyList = directory.appendingPathComponent("status.json"), revokedList = directory.appendingPathComponent("revoked.json")
        try AttestationStatusList(entries: [:]).json().write(to: emptyList)
        let intermediate = try Certificate(
            derEncoded: [UInt8](
                EmulatedKeyAttestation.chain(
                    for: P256.Signing.PrivateKey().publicKey, challenge: Data(),
                    properties: .init(packageName: "p", signingCertificateDigest: Data()))[1]))
        try AttestationStatusList(entries: [
            AttestationStatusList.key(intermediate.serialNumber): .init(status: "REVOKED", reason: "KEY_COMPROMISE")
        ]).json().write(to: revokedList)
        let testRoot = required + ["--insecure-android-attestation-root", rootFile.path]

        let testing = try ServerProcess(database: ":memory:", extra: testRoot + ["--android-attestation-status", emptyList.path])
        defer { testing.stop() }
        #expect(try await enrol(on: testing) == "enrolled")
        #expect(try await enrol(on: testing, forged: true) == "403 certificateChain", "a chain under another root")
        let revoked = try ServerProcess(database: ":memory:", extra: testRoot + ["--android-attestation-status", revokedList.path])
        defer { revoked.stop() }
        #expect(try await enrol(on: revoked) == "403 certificateStatus", "the intermediate is on the list")
        // A list that cannot be read: fail closed, and the readiness probe says why.
        let unread = try ServerProcess(
            database: ":memory:", extra: testRoot + ["--android-attestation-status", directory.appendingPathComponent("absent.json").path])
        defer { unread.stop() }
        #expect(try await enrol(on: unread) == "503 ")
        let ready = try await ServerClient(baseURL: "http://127.0.0.1:\(unread.port)").get("/health/ready")
        #expect(ready.status == 200 && (ready.json["notes"] as? [String])?.count == 1, "\(ready.text)")

        let production = try ServerProcess(database: ":memory:", extra: required + ["--android-attestation-status", "off"])
        defer { production.stop() }
        #expect(try await enrol(on: production) == "403 certificateChain", "Google's roots alone do not vouch for the test root's chains")
        let missing = try ServerProcess.command([
            "--android-package", "p", "--android-signing-digest", AndroidEnrolmentTests.digest.hexString,
            "--insecure-android-attestation-root", directory.appendingPathComponent("none.pem").path,
        ])
        #expect(missing.status == 64, "a root file without a certificate stops the start (EX_USAGE)")
    }
}

/// The status list over HTTP, as `bioauth-server` and `bioauth attestation status update` fetch it.
struct AttestationStatusFetchTests {
    @Test(.timeLimit(.minutes(3)))
    func aListServedOverHTTPIsFetchedAndAFailedFetchKeepsTheListInForce() async throws {
        let serving = Mutex(true)
        let router = Router()
        router.get("status") { _, _ -> Response in
            guard serving.withLock({ $0 }) else { return Response(status: .notFound) }
            return Response(
                status: .ok, body: .init(byteBuffer: ByteBuffer(string: #"{"entries": {"2c8cdddfd5e03bfc": {"status": "REVOKED"}}}"#)))
        }
        let mirror = try await LoopbackServer.start(router)
        defer { Task { await mirror.stop() } }
        let port = mirror.port

        let status = AttestationStatus(
            source: try AttestationStatusSource("http://127.0.0.1:\(port)/status"), fetch: attestationStatusFetch)
        let now = Date()
        let loaded = try await status.refresh(now: now)
        #expect(loaded.list.entries["2c8cdddfd5e03bfc"]?.status == "REVOKED" && loaded.asOf == now)
        serving.withLock { $0 = false }
        await #expect(throws: AttestationStatusListError.self) { try await status.refresh(now: now + 3600) }
        #expect(status.loaded?.asOf == now, "the list in force stays")
        // Without an HTTP client a URL cannot be read (the verification module links none).
        await #expect(throws: AttestationStatusListError.self) { try await AttestationStatus(source: .google).refresh(now: now) }
    }
}
