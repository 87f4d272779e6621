import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import Crypto
import Foundation
import Testing
import BioAuthServerTesting

/// The assertion check alone: every verdict, with an emulated App Attest key and no store.
struct AppAttestAssertionTests {
    static let app = AttestationEnrolmentTests.app
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let service = EmulatedAppAttest(appID: Self.app, clock: ManualClock(start: Self.now))
    let verifier = AppAttestVerifier(appIDs: [Self.app], environments: [.development], roots: [EmulatedAppAttest.testRoot])
    let message = try! ChallengeRecord(
        id: ChallengeID(bytes: Data(repeating: 7, count: 16)), binding: .login, relyingPartyID: "example.com", userID: "alice",
        deviceID: "device-1",
        nonce: Data(repeating: 9, count: 32), createdAt: Self.now, expiresAt: Self.now.addingTimeInterval(60)
    ).message()
    let signature = Data([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01])

    /// A device whose enrolment App Attest proved, and the app key's id.
    func attestedDevice() async throws -> (DeviceRecord, keyID: Data) {
        let keyID = try service.generateKey()
        let hash = Data(repeating: 3, count: 32)
        let key = try await verifier.verifyAttestation(
            try service.attestKey(keyID, clientDataHash: hash), keyID: keyID, clientDataHash: hash, at: Self.now)
        let device = DeviceRecord(
            id: "device-1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: Self.now,
            credential: .appKey(attestation: DeviceAttestation(key, at: Self.now)))
        return (device, keyID)
    }

    func assertion(_ keyID: Data, message: SignedMessage? = nil, signature: Data? = nil) throws -> Data {
        try service.generateAssertion(
            keyID, clientDataHash: AttestationBinding.assertionHash(message ?? self.message, signature: signature ?? self.signature))
    }

    func check(_ assertion: Data?, _ device: DeviceRecord, _ assertions: AttestationPolicy.Assertions = .verifiedWhenSent)
        -> AppAttestAssertion.Verdict
    {
        AppAttestAssertion(policy: AttestationPolicy(apple: .required(verifier), assertions: assertions))
            .check(assertion, device: device, message: { message }, signature: signature)
    }

    @Test func aValidAssertionAdvancesTheStoredCounter() async throws {
        let (device, keyID) = try await attestedDevice()
        guard case .accepted(let advanced) = check(try assertion(keyID), device) else { Issue.record("not accepted"); return }
        #expect(advanced.appAttestKey?.counter == 1 && advanced.appAttestKey?.keyID == keyID)
        #expect(
            advanced.appID == device.credential.attestation?.appID
                && advanced.verifiedAt == device.credential.attestation?.verifiedAt)
    }

    @Test func aReplayedOrStaleAssertionIsRefusedByItsCounter() async throws {
        var (device, keyID) = try await attestedDevice()
        let first = try assertion(keyID), second = try assertion(keyID)
        guard case .accepted(let advanced) = check(second, device) else { Issue.record("not accepted"); return }
        device.credential = .appKey(attestation: advanced)
        #expect(check(second, device) == .rejected(.counter))
        #expect(check(first, device) == .rejected(.counter))
    }

    @Test func anAssertionOverAnotherSignatureOrMessageIsRefused() async throws {
        let (device, keyID) = try await attestedDevice()
        let otherSignature = try assertion(keyID, signature: Data([0x30, 0x06, 0x02, 0x01, 0x02, 0x02, 0x01, 0x01]))
        #expect(check(otherSignature, device) == .rejected(.signature))
        let otherMessage = try ChallengeRecord(
            id: ChallengeID(bytes: Data(repeating: 8, count: 16)), binding: .login, relyingPartyID: "example.com", userID: "alice",
            deviceID: "device-1",
            nonce: Data(repeating: 1, count: 32), createdAt: Self.now, expiresAt: Self.now.addingTimeInterval(60)
        ).message()
        #expect(check(try assertion(keyID, message: otherMessage), device) == .rejected(.signature))
        #expect(check(Data([0xA0]), device) == .rejected(.malformed))
    }

    @Test func anAppTheDeploymentNoLongerAcceptsIsRefused() async throws {
        let (device, keyID) = try await attestedDevice()
        let other = AppAttestVerifier(
            appIDs: [try AppAttest.AppID("TEAM123456.dev.bioauth.other")], environments: [.development], roots: [EmulatedAppAttest.testRoot]
        )
        let verdict = AppAttestAssertion(policy: AttestationPolicy(apple: .required(other))).check(
            try assertion(keyID), device: device, message: { message }, signature: signature)
        #expect(verdict == .rejected(.appIdentifier))
    }

    @Test func aMissingAssertionIsRefusedOnlyWhereRequired() async throws {
        let (device, _) = try await attestedDevice()
        #expect(check(nil, device, .required) == .rejected(nil))
        #expect(check(nil, device, .verifiedWhenSent) == .notApplicable)
    }

    @Test func aDeviceWithoutAnAttestedAppKeyOrAPolicyWithAppleOffChecksNothing() async throws {
        let (device, keyID) = try await attestedDevice()
        var unattested = device
        unattested.credential = .appKey(attestation: nil)
        #expect(check(try assertion(keyID), unattested, .required) == .notApplicable)
        #expect(check(nil, unattested, .required) == .notApplicable)
        let off = AppAttestAssertion(policy: AttestationPolicy(apple: .off, assertions: .required))
        #expect(off.check(nil, device: device, message: { message }, signature: signature) == .notApplicable)
    }
}

/// Assertions over HTTP: a deployment that requires them refuses a login or step-up without one,
/// stores each counter with the session or approval it authorises, and refuses a stale one.
struct AssertionLoginTests {
    static let app = AttestationEnrolmentTests.app

    static func harness(_ assertions: AttestationPolicy.Assertions) -> ServerHarness {
        ServerHarness { configuration in
            configuration.attestation = AttestationPolicy(
                apple: .preferred(AppAttestVerifier(appIDs: [app], environments: [.development], roots: [EmulatedAppAttest.testRoot])),
                assertions: assertions)
        }
    }

    /// `phone` enrolled by alice, attested by `service` when given; its device id and App Attest key id.
    static func enrol(_ api: API, _ harness: ServerHarness, _ phone: SoftwareDevice, service: EmulatedAppAttest?) async throws -> (
        deviceID: String, keyID: Data?
    ) {
        let token = try await api.primarySession()
        let finish = try await AttestationEnrolmentTests.enrol(api, phone, token: token) { message in
            guard let service else { return [:] }
            return try AttestationEnrolmentTests.appAttestation(service, for: phone)(message)
        }
        #expect(finish.status == 201, "\(finish.text)")
        let keyID = try await harness.service.store.device(id: DeviceID(finish["id"]))?.credential.attestation?.appAttestKey?.keyID
        return (finish["id"], keyID)
    }

    /// The finish body for `challenge`, signed by `phone`, with `service`'s assertion over it when given.
    static func signed(_ challenge: Reply, _ phone: SoftwareDevice, service: EmulatedAppAttest? = nil, keyID: Data? = nil) throws
        -> [String: any Sendable]
    {
        let signature = try phone.signatureBytes(challenge)
        var body: [String: any Sendable] = ["challengeId": challenge["challengeId"], "signature": Base64URL.encode(signature)]
        if let service, let keyID {
            let assertion = try service.generateAssertion(
                keyID, clientDataHash: AttestationBinding.assertionHash(try phone.message(challenge), signature: signature))
            body["appAttestAssertion"] = Base64URL.encode(assertion)
        }
        return body
    }

    @Test func requiredAssertionsGuardEveryLoginAndStepUpAndStoreTheirCounters() async throws {
        let harness = Self.harness(.required)
        let service = EmulatedAppAttest(appID: Self.app, clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let (deviceID, keyID) = try await Self.enrol(api, harness, phone, service: service)
            let attestedKey = try #require(keyID)
            func refusal(_ reply: Reply) -> String? {
                #expect(
                    reply.status == 403 && reply.json["error"] as? String == "attestation_rejected"
                        && reply.json["field"] as? String == "appAttestAssertion", "\(reply.text)")
                return reply.json["reason"] as? String
            }
            // The device key alone no longer logs in: a hooked app, or a script holding the key, has no assertion.
            let bare = try await api.loginChallenge("alice", deviceID)
            #expect(refusal(try await api.post("/v1/login/finish", try Self.signed(bare, phone))) == "missing")

            let first = try await api.loginChallenge("alice", deviceID), second = try await api.loginChallenge("alice", deviceID)
            let earlier = try Self.signed(first, phone, service: service, keyID: attestedKey)
            let later = try Self.signed(second, phone, service: service, keyID: attestedKey)
            let login = try await api.post("/v1/login/finish", later)
            #expect(login.status == 200, "\(login.text)")
            #expect(try await harness.service.store.device(id: DeviceID(deviceID))?.credential.attestation?.appAttestKey?.counter == 2)
            // The earlier assertion, held back and sent after: its counter is not above the stored one.
            #expect(refusal(try await api.post("/v1/login/finish", earlier)) == "counter")

            let operation = Base64URL.encode(Data("pay 10 EUR".utf8))
            func stepUp(asserted: Bool) async throws -> Reply {
                let challenge = try await api.post(
                    "/v1/step-up/challenge", ["deviceId": deviceID, "operation": operation], token: login["token"])
                #expect(challenge.status == 200, "\(challenge.text)")
                return try await api.post(
                    "/v1/step-up/finish", try Self.signed(challenge, phone, service: asserted ? service : nil, keyID: attestedKey),
                    token: login["token"])
            }
            #expect(refusal(try await stepUp(asserted: false)) == "missing")
            let approved = try await stepUp(asserted: true)
            #expect(approved.status == 200, "\(approved.text)")
            #expect(try await harness.service.store.device(id: DeviceID(deviceID))?.credential.attestation?.appAttestKey?.counter == 3)

            let reasons = try await harness.service.store.auditEvents(userID: "alice", limit: 50).compactMap(\.reason?.description)
            #expect(reasons.filter { $0 == "assertionMissing" }.count == 2 && reasons.contains("assertion.counter"), "\(reasons)")
        }
    }

    @Test func withoutTheRequirementAnAssertionSentIsStillVerified() async throws {
        let harness = Self.harness(.verifiedWhenSent)
        let service = EmulatedAppAttest(appID: Self.app, clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let (deviceID, keyID) = try await Self.enrol(api, harness, phone, service: service)
            #expect(try await api.login("alice", deviceID, phone).status == 200, "none sent, none asked for")
            let attestedKey = try #require(keyID)
            var tampered = try Self.signed(try await api.loginChallenge("alice", deviceID), phone, service: service, keyID: attestedKey)
            var bytes = try #require(Base64URL.decode(tampered["appAttestAssertion"] as? String ?? ""))
            bytes[bytes.count - 1] ^= 1
            tampered["appAttestAssertion"] = Base64URL.encode(bytes)
            let refused = try await api.post("/v1/login/finish", tampered)
            #expect(refused.status == 403 && refused.json["field"] as? String == "appAttestAssertion", "\(refused.text)")
            #expect(
                try await harness.service.store.device(id: DeviceID(deviceID))?.credential.attestation?.appAttestKey?.counter == 0,
                "a refusal stores no counter")

            // An unattested device has no key to verify against: its assertion is ignored.
            let other = SoftwareDevice()
            let token = try await api.primarySession("bob")
            let finish = try await AttestationEnrolmentTests.enrol(api, other, token: token) { _ in [:] }
            let challenge = try await api.loginChallenge("bob", finish["id"])
            var body = try Self.signed(challenge, other)
            body["appAttestAssertion"] = Base64URL.encode(Data([0xA0]))
            #expect(try await api.post("/v1/login/finish", body).status == 200)
        }
    }
}

/// Issue 45 item 4: an app reinstalled over its keychain has lost its App Attest key; one login
/// (or step-up) signed by its still-valid device key attests a new one, and the device carries on
/// under required assertions without revocation or a new enrolment.
struct ReattestationTests {
    static let app = AttestationEnrolmentTests.app

    /// The finish body for `challenge`, signed by `phone`, with a new key of `service` attested over
    /// this message and `spki` (the device key's by default).
    static func reattested(_ challenge: Reply, _ phone: SoftwareDevice, service: EmulatedAppAttest, spki: Data? = nil) throws -> (
        body: [String: any Sendable], keyID: Data
    ) {
        var body = try AssertionLoginTests.signed(challenge, phone)
        let keyID = try service.generateKey()
        let hash = AttestationBinding.registrationHash(
            try phone.message(challenge), publicKey: spki ?? phone.key.publicKey.derRepresentation)
        body["appAttestKeyId"] = Base64URL.encode(keyID)
        body["appAttestation"] = Base64URL.encode(try service.attestKey(keyID, clientDataHash: hash))
        return (body, keyID)
    }

    @Test func aReinstalledAppAttestsANewKeyWithOneSignedLoginAndCarriesOn() async throws {
        let harness = AssertionLoginTests.harness(.required)
        let service = EmulatedAppAttest(appID: Self.app, clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let (deviceID, oldKey) = try await AssertionLoginTests.enrol(api, harness, phone, service: service)
            let old = try #require(oldKey)
            service.reinstall()
            #expect(throws: EmulatedAppAttest.Failure.invalidKey) { try service.generateAssertion(old, clientDataHash: Data(count: 32)) }
            func reason(_ reply: Reply) -> String {
                #expect(reply.status == 403 && reply.json["field"] as? String == "appAttestation", "\(reply.text)")
                return reply.json["reason"] as? String ?? ""
            }

            // What an attacker can send is refused by name, and nothing changes.
            let otherApp = EmulatedAppAttest(appID: try AppAttest.AppID("ZZZZZZZZZZ.com.attacker.app"), clock: harness.clock)
            #expect(
                reason(
                    try await api.post(
                        "/v1/login/finish",
                        try Self.reattested(try await api.loginChallenge("alice", deviceID), phone, service: otherApp).body))
                    == "appIdentifier")
            let otherKey = SoftwareDevice().key.publicKey.derRepresentation
            #expect(
                reason(
                    try await api.post(
                        "/v1/login/finish",
                        try Self.reattested(try await api.loginChallenge("alice", deviceID), phone, service: service, spki: otherKey).body))
                    == "nonce")
            let forgedChallenge = try await api.loginChallenge("alice", deviceID)
            let forgedKey = P256.Signing.PrivateKey().publicKey
            var forgedBody = try AssertionLoginTests.signed(forgedChallenge, phone)
            forgedBody["appAttestKeyId"] = Base64URL.encode(Data(SHA256.hash(data: forgedKey.x963Representation)))
            forgedBody["appAttestation"] = Base64URL.encode(
                EmulatedAppAttest.forgedAttestation(
                    for: forgedKey, appID: Self.app, environment: .development,
                    clientDataHash: AttestationBinding.registrationHash(
                        try phone.message(forgedChallenge), publicKey: phone.key.publicKey.derRepresentation), at: harness.clock.now()))
            #expect(reason(try await api.post("/v1/login/finish", forgedBody)) == "certificateChain")
            // A re-attestation needs the device key's signature too: without it, the usual uniform failure.
            var unsigned = try Self.reattested(try await api.loginChallenge("alice", deviceID), phone, service: service).body
            unsigned["signature"] = try SoftwareDevice().sign(try await api.loginChallenge("alice", deviceID))
            #expect(try await api.post("/v1/login/finish", unsigned).isUniformFailure)
            #expect(try await harness.service.store.device(id: DeviceID(deviceID))?.credential.attestation?.appAttestKey?.keyID == old)

            // The genuine app's new key, attested over this login and the device key: the login succeeds and the key is replaced.
            let (body, newKey) = try Self.reattested(try await api.loginChallenge("alice", deviceID), phone, service: service)
            let login = try await api.post("/v1/login/finish", body)
            #expect(login.status == 200, "\(login.text)")
            let stored = try #require(try await harness.service.store.device(id: DeviceID(deviceID))?.credential.attestation)
            #expect(stored.appAttestKey?.keyID == newKey && stored.appAttestKey?.counter == 0 && stored.format == .appleAppAttest)
            let events = try await harness.service.store.auditEvents(userID: "alice", limit: 50)
            #expect(events.contains { $0.kind == .deviceReattested && $0.deviceID == DeviceID(deviceID) })
            #expect(
                events.contains { $0.reason?.description == "reattestation.appIdentifier" }
                    && events.contains { $0.reason?.description == "reattestation.nonce" })

            // It asserts from now on; the lost key's assertions would not.
            let next = try await api.loginChallenge("alice", deviceID)
            #expect(
                try await api.post("/v1/login/finish", try AssertionLoginTests.signed(next, phone, service: service, keyID: newKey)).status
                    == 200)
            // A step-up can re-attest too.
            let operation = Base64URL.encode(Data("pay 10 EUR".utf8))
            service.reinstall()
            let stepUp = try await api.post("/v1/step-up/challenge", ["deviceId": deviceID, "operation": operation], token: login["token"])
            let (stepUpBody, thirdKey) = try Self.reattested(stepUp, phone, service: service)
            #expect(try await api.post("/v1/step-up/finish", stepUpBody, token: login["token"]).status == 200)
            #expect(try await harness.service.store.device(id: DeviceID(deviceID))?.credential.attestation?.appAttestKey?.keyID == thirdKey)
        }
    }

    @Test func onlyADeviceAppAttestProvedReattestsAndTheFieldsAreCheckedForShape() async throws {
        let harness = AssertionLoginTests.harness(.verifiedWhenSent)
        let service = EmulatedAppAttest(appID: Self.app, clock: harness.clock)
        try await harness.test { api in
            let phone = SoftwareDevice()
            let (deviceID, _) = try await AssertionLoginTests.enrol(api, harness, phone, service: nil)
            let reply = try await api.post(
                "/v1/login/finish", try Self.reattested(try await api.loginChallenge("alice", deviceID), phone, service: service).body)
            #expect(reply.status == 403 && reply.json["reason"] as? String == "format", "an unattested device enrols again: \(reply.text)")
            #expect(try await harness.service.store.device(id: DeviceID(deviceID))?.credential.attestation == nil)

            var both = try Self.reattested(try await api.loginChallenge("alice", deviceID), phone, service: service).body
            both["appAttestAssertion"] = "AAAA"
            #expect(try await api.post("/v1/login/finish", both).status == 400)
            var half = try AssertionLoginTests.signed(try await api.loginChallenge("alice", deviceID), phone)
            half["appAttestation"] = "AAAA"
            let refused = try await api.post("/v1/login/finish", half)
            #expect(refused.status == 400 && refused.json["field"] as? String == "appAttestKeyId", "\(refused.text)")
        }
    }
}
