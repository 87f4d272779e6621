import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthTesting
import Crypto
import Foundation
import Hummingbird
import Testing
import BioAuthServerTesting

/// Issue 22: enrolment asks for App Attest (and Android Key Attestation) as the
/// `AttestationPolicy` says; what was proven is stored, listed and claimed, and nothing else is.
struct AttestationEnrolmentTests {
    static let app = try! AppAttest.AppID("TEAM123456.dev.bioauth.tests")

    /// A server that trusts the emulator's test root for `app`, development keys included.
    static func harness(_ rule: (AppAttestVerifier) -> AttestationPolicy.Rule<AppAttestVerifier> = { .required($0) }) -> ServerHarness {
        ServerHarness { configuration in
            configuration.attestation.apple = rule(
                AppAttestVerifier(appIDs: [app], environments: [.development], roots: [EmulatedAppAttest.testRoot]))
        }
    }

    /// Begins the registration of `device` and finishes it with what `attest` makes of the
    /// challenge's message: the finish reply.
    static func enrol(
        _ api: API, _ device: SoftwareDevice, token: String, attest: (SignedMessage) throws -> [String: any Sendable]
    ) async throws -> Reply {
        let challenge = try await api.post("/v1/devices/registration/challenge", ["name": "Phone", "publicKey": device.spki], token: token)
        #expect(challenge.status == 200, "\(challenge.text)")
        var body: [String: any Sendable] = ["challengeId": challenge["challengeId"], "signature": try device.sign(challenge)]
        body.merge(try attest(try device.message(challenge))) { $1 }
        return try await api.post("/v1/devices/registration/finish", body, token: token)
    }

    /// The App Attest fields for `device`'s key, attested by `service` over the registration binding.
    static func appAttestation(_ service: EmulatedAppAttest, for device: SoftwareDevice, spki: String? = nil) -> (SignedMessage) throws ->
        [String: any Sendable]
    {
        { message in
            let keyID = try service.generateKey()
            let hash = AttestationBinding.registrationHash(message, publicKey: try #require(Base64URL.decode(spki ?? device.spki)))
            return [
                "appAttestKeyId": Base64URL.encode(keyID),
                "appAttestation": Base64URL.encode(try service.attestKey(keyID, clientDataHash: hash)),
            ]
        }
    }

    @Test func anAttestedKeyIsStoredListedAndClaimedAsHardware() async throws {
        let harness = Self.harness()
        let service = EmulatedAppAttest(appID: Self.app, clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let token = try await api.primarySession()
            let finish = try await Self.enrol(api, phone, token: token, attest: Self.appAttestation(service, for: phone))
            #expect(finish.status == 201, "\(finish.text)")
            let attestation = try #require(finish.json["attestation"] as? [String: any Sendable])
            #expect(attestation["format"] as? String == "apple-appattest" && attestation["securityLevel"] as? String == "secureEnclave")
            #expect(attestation["appId"] as? String == Self.app.description && attestation["environment"] as? String == "development")

            let login = try await api.login("alice", finish["id"], phone)
            let claims = try #require(CompactJWS(login["accessToken"])).claims
            #expect(claims["amr"] as? [String] == ["hwk", "user"] && claims["acr"] as? String == AttestationClass.attested)
            #expect(claims["enr"] as? String == "primaryLogin", "a first device, allowed by the primary login")
            let att = try #require(claims["att"] as? [String: Any])
            #expect(
                att["fmt"] as? String == "apple-appattest" && att["lvl"] as? String == "secureEnclave"
                    && att["app"] as? String == Self.app.description)
            // A refreshed token says the same; introspection too.
            let refreshed = try await api.post("/v1/token/refresh", ["refreshToken": login["refreshToken"]])
            #expect(try #require(CompactJWS(refreshed["accessToken"])).claims["amr"] as? [String] == ["hwk", "user"])
            let introspected = try await api.post("/v1/introspect", ["token": refreshed["accessToken"]], token: api.apiKey)
            #expect(
                introspected.json["acr"] as? String == AttestationClass.attested && introspected.json["enr"] as? String == "primaryLogin")

            let devices = try await api.call(.get, "/v1/devices", token: login["token"])
            #expect((devices.objects.first?["attestation"] as? [String: any Sendable])?["format"] as? String == "apple-appattest")
            let stored = try #require(
                try await harness.service.store.device(id: DeviceID(finish["id"]))?.credential.attestation?.appAttestKey)
            #expect(stored.counter == 0 && stored.keyID.count == 32 && stored.publicKey.count == 65)
        }
    }

    @Test func aRequiredAttestationRefusesEveryFakeAndStoresNothing() async throws {
        let harness = Self.harness()
        let genuine = EmulatedAppAttest(appID: Self.app, clock: harness.clock)
        let resigned = EmulatedAppAttest(appID: try AppAttest.AppID("ATTACKER01.dev.bioauth.tests"), clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let token = try await api.primarySession()
            func refusal(_ attest: @escaping (SignedMessage) throws -> [String: any Sendable]) async throws -> (
                field: String?, reason: String?
            ) {
                let reply = try await Self.enrol(api, phone, token: token, attest: attest)
                #expect(reply.status == 403 && reply.json["error"] as? String == "attestation_rejected", "\(reply.text)")
                return (reply.json["field"] as? String, reply.json["reason"] as? String)
            }
            // A software key with no attestation at all (the Python script of the issue).
            let missing = try await refusal { _ in [:] }
            #expect(missing.field == "attestation" && missing.reason == "missing")
            // A re-signed app: another team's genuine App Attest key.
            #expect(try await refusal(Self.appAttestation(resigned, for: phone)).reason == "appIdentifier")
            // A software key with a chain of its own.
            let forged: (SignedMessage) throws -> [String: any Sendable] = { message in
                let key = P256.Signing.PrivateKey()
                let hash = AttestationBinding.registrationHash(message, publicKey: try #require(Base64URL.decode(phone.spki)))
                let object = EmulatedAppAttest.forgedAttestation(
                    for: key.publicKey, appID: Self.app, environment: .development, clientDataHash: hash)
                return [
                    "appAttestKeyId": Base64URL.encode(Data(SHA256.hash(data: key.publicKey.x963Representation))),
                    "appAttestation": Base64URL.encode(object),
                ]
            }
            #expect(try await refusal(forged).reason == "certificateChain")
            // The genuine app vouching for another key than the one enrolled.
            let other = SoftwareDevice()
            #expect(try await refusal(Self.appAttestation(genuine, for: phone, spki: other.spki)).reason == "nonce")

            let audit = try await harness.service.store.auditEvents(userID: "alice", limit: 50).filter {
                $0.kind == .deviceEnrollmentFailed
            }.compactMap(\.reason?.description)
            #expect(
                audit.sorted() == ["attestation.appIdentifier", "attestation.certificateChain", "attestation.nonce", "attestationMissing"])
            #expect(try await harness.service.store.devices(userID: "alice").isEmpty)
            // The same key, genuinely attested, still enrols.
            #expect(try await Self.enrol(api, phone, token: token, attest: Self.appAttestation(genuine, for: phone)).status == 201)
        }
    }

    /// A refused attestation consumes its challenge; like a forged signature it cannot be guessed,
    /// so it locks out nobody (issue 43): the next challenge is issued.
    @Test func aRefusedAttestationConsumesItsChallengeAndLocksOutNobody() async throws {
        let harness = ServerHarness { configuration in
            configuration.attestation.apple = .required(
                AppAttestVerifier(appIDs: [Self.app], environments: [.development], roots: [EmulatedAppAttest.testRoot]))
            configuration.rateLimits.failuresPerClient = 2
        }
        let genuine = EmulatedAppAttest(appID: Self.app, clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let token = try await api.primarySession()
            let challenge = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Phone", "publicKey": phone.spki], token: token)
            let signed: [String: any Sendable] = ["challengeId": challenge["challengeId"], "signature": try phone.sign(challenge)]
            #expect(try await api.post("/v1/devices/registration/finish", signed, token: token).status == 403)
            // The challenge went with the refusal: a genuine attestation cannot reuse it.
            let retry = signed.merging(try Self.appAttestation(genuine, for: phone)(try phone.message(challenge))) { $1 }
            #expect(try await api.post("/v1/devices/registration/finish", retry, token: token).isUniformFailure)
            // Two failures from this address, with a limit of two failures: the address is not locked.
            let next = try await api.post("/v1/devices/registration/challenge", ["name": "Phone", "publicKey": phone.spki], token: token)
            #expect(next.status == 200, "\(next.text)")
            #expect(try await harness.auditedReasons().filter { $0.hasPrefix("attestation.") || $0 == "attestationMissing" }.count == 1)
        }
    }

    @Test func preferredAcceptsAnUnattestedKeyButNotABadAttestation() async throws {
        let harness = Self.harness { .preferred($0) }
        let resigned = EmulatedAppAttest(appID: try AppAttest.AppID("ATTACKER01.dev.bioauth.tests"), clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let token = try await api.primarySession()
            let bad = try await Self.enrol(api, phone, token: token, attest: Self.appAttestation(resigned, for: phone))
            #expect(bad.status == 403 && bad.json["error"] as? String == "attestation_rejected")
            let unattested = try await Self.enrol(api, phone, token: token) { _ in [:] }
            #expect(unattested.status == 201 && unattested.json["attestation"] == nil)
            let login = try await api.login("alice", unattested["id"], phone)
            #expect(try #require(CompactJWS(login["accessToken"])).claims["amr"] as? [String] == ["pop", "user"])
        }
    }

    @Test func attestationFieldsAreCheckedForShape() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let phone = SoftwareDevice()
            let token = try await api.primarySession()
            let keyID = Base64URL.encode(Data(repeating: 1, count: 32))
            for (fields, field) in [
                (["appAttestation": "AAAA"], "appAttestKeyId"), (["appAttestKeyId": keyID], "appAttestation"),
                (["appAttestKeyId": "AAAA", "appAttestation": "AAAA"], "appAttestKeyId"),
                (["appAttestKeyId": keyID, "appAttestation": "AAAA", "androidKeyAttestation": ["AAAA"]], "androidKeyAttestation"),
            ] as [([String: any Sendable], String)] {
                let reply = try await Self.enrol(api, phone, token: token) { _ in fields }
                #expect(reply.status == 400 && reply.json["field"] as? String == field, "\(reply.text)")
            }
            let empty = try await Self.enrol(api, phone, token: token) { _ in ["androidKeyAttestation": [String]()] }
            #expect(empty.status == 400 && empty.json["field"] as? String == "androidKeyAttestation")
            // Garbage where an attestation object belongs: a typed refusal, not a 500.
            let garbage = try await Self.enrol(api, phone, token: token) { _ in ["appAttestKeyId": keyID, "appAttestation": "AAAA"] }
            #expect(garbage.status == 403 && garbage.json["reason"] as? String == "malformed")
        }
    }

    @Test func anAndroidChainIsCheckedAgainstTheEnrolledKey() async throws {
        let harness = ServerHarness { configuration in
            configuration.attestation.android = .required(
                AndroidKeyAttestationVerifier(
                    requirements: AndroidKeyRequirements(packageNames: ["dev.bioauth"], signingCertificateDigests: [Data(count: 32)]),
                    revocation: .unchecked))
        }
        try await harness.test { api in
            let token = try await api.primarySession()
            let challenge = try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)
            #expect(challenge.status == 200 && Base64URL.decode(challenge["challenge"])?.count == 32)
            // Each call issues a new challenge, in the same session or another.
            #expect(
                try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: token)["challenge"]
                    != challenge["challenge"])
            #expect(
                try await api.call(.get, "/v1/devices/registration/attestation-challenge", token: try await api.primarySession())[
                    "challenge"] != challenge["challenge"])
            // A real Pixel's chain is for its own key, not the one being enrolled.
            let pem = String(decoding: try TestVectors.load("attestation/android-key/testdata/marlin/sdk29/TEE_EC_NONE.pem"), as: UTF8.self)
            let chain = AttestationFiles.pemBlocks(pem).map(Base64URL.encode)
            #expect(chain.count >= 3)
            let phone = SoftwareDevice()
            let reply = try await Self.enrol(api, phone, token: token) { _ in ["androidKeyAttestation": chain] }
            #expect(reply.status == 403 && reply.json["field"] as? String == "androidKeyAttestation", "\(reply.text)")
            #expect(["publicKey", "certificateChain"].contains(reply.json["reason"] as? String ?? ""), "\(reply.text)")
            #expect(try await harness.service.store.devices(userID: "alice").isEmpty)
        }
    }
}

/// Apple's steps 7 and 9, which only an attestation signed under a trusted root can reach (any
/// change to the authenticator data of a real one breaks its nonce first).
struct AppAttestStepTests {
    @Test func anAttestationWhoseCounterIsNotZeroOrWhoseCredentialIsAnotherKeyIsRefused() async throws {
        let verifier = AppAttestVerifier(
            appIDs: [AttestationEnrolmentTests.app], environments: [.development], roots: [EmulatedAppAttest.testRoot])
        let key = P256.Signing.PrivateKey().publicKey, keyID = Data(SHA256.hash(data: key.x963Representation)),
            hash = Data(repeating: 7, count: 32)
        let now = Date()
        func check(counter: UInt32 = 0, credentialID: Data? = nil) async -> AttestationError.Check? {
            let object = EmulatedAppAttest.irregularAttestation(
                for: key, appID: AttestationEnrolmentTests.app, clientDataHash: hash, at: now, counter: counter, credentialID: credentialID)
            do {
                _ = try await verifier.verifyAttestation(object, keyID: keyID, clientDataHash: hash, at: now)
                return nil
            } catch { return error.check }
        }
        #expect(await check() == nil, "the regular object verifies")
        #expect(await check(counter: 1) == .counter)
        #expect(await check(credentialID: Data(repeating: 9, count: 32)) == .credentialIdentifier)
    }
}
