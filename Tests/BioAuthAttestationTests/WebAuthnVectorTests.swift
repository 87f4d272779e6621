import BioAuthAttestation
import BioAuthCore
import BioAuthTesting
import Crypto
import Foundation
import Testing

/// The WebAuthn ceremonies of real authenticators (py_webauthn's fixtures), each checked as the
/// relying party's verifier sees it, with py_webauthn 3.0.1's verdict as the oracle.
struct WebAuthnVectorTests {
    struct Fixture: Decodable {
        struct Credential: Decodable {
            struct Response: Decodable {
                let clientDataJSON: String
                let authenticatorData: String?
                let signature: String?
                let attestationObject: String?
            }
            let response: Response
        }
        enum Origins: Decodable {
            case one(String), many([String])
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let one = try? container.decode(String.self) {
                    self = .one(one)
                } else {
                    self = .many(try container.decode([String].self))
                }
            }
            var all: Set<String> {
                switch self {
                case .one(let origin): [origin]
                case .many(let origins): Set(origins)
                }
            }
        }
        let test: String
        let credential: Credential
        let challenge_b64url: String
        let expected_rp_id: String?
        let rp_id: String?
        let expected_origin: Origins
        let credential_public_key_b64url: String?
        let sign_count: UInt32?
        let verification_time: String?
        let py_webauthn_3_0_1_result: String

        /// The fixture's verification time (its certificates are short-lived), or now.
        var time: Date {
            verification_time.flatMap { try? Date($0, strategy: .iso8601) } ?? Date()
        }

        var relyingParty: WebAuthnRelyingParty {
            WebAuthnRelyingParty(id: expected_rp_id ?? rp_id ?? "", origins: expected_origin.all, userVerification: .preferred)
        }
        /// A value as the fixture writes it: base64url, or (in the TPM fixtures) standard base64.
        func bytes(_ text: String?) throws -> Data {
            let text = try #require(text, "\(test)")
            if let data = Base64URL.decode(text) { return data }
            let padded = text + String(repeating: "=", count: (4 - text.count % 4) % 4)
            return try #require(Data(base64Encoded: padded), "\(test)")
        }
    }

    static func fixtures() throws -> [Fixture] {
        struct File: Decodable { let fixtures: [Fixture] }
        let url = TestVectors.directory.appendingPathComponent("webauthn/py_webauthn-fixtures.json")
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).fixtures
    }

    /// Every authentication: accepted with the counter py_webauthn reports, or refused where it refused.
    @Test func everyAuthenticationHasPyWebauthnsVerdict() throws {
        let assertions = try Self.fixtures().filter { $0.credential.response.signature != nil }
        #expect(assertions.count == 6)
        for fixture in assertions {
            let response = fixture.credential.response
            let key = try COSEKey(try fixture.bytes(fixture.credential_public_key_b64url))
            let verdict = Result { () throws(WebAuthnError) in
                try fixture.relyingParty.verifyAssertion(
                    clientDataJSON: try! fixture.bytes(response.clientDataJSON),
                    authenticatorData: try! fixture.bytes(response.authenticatorData), signature: try! fixture.bytes(response.signature),
                    challenge: try! fixture.bytes(fixture.challenge_b64url), publicKey: key, storedSignCount: fixture.sign_count ?? 0)
            }
            let expected = fixture.py_webauthn_3_0_1_result.split(separator: " ")
            switch verdict {
            case .success(let verified):
                #expect(expected.prefix(2) == ["auth", "OK"], "\(fixture.test): accepted, py_webauthn refused")
                #expect(expected.count > 2 && "\(verified.signCount)" == expected[2], "\(fixture.test)")
            case .failure(let error):
                #expect(expected.first == "FAIL" && error.check == .signature, "\(fixture.test): \(error)")
            }
        }
    }

    /// The one a verifier that requires user verification must refuse, and a counter that went back.
    @Test func userVerificationAndTheCounterAreEnforced() throws {
        let fixture = try #require(try Self.fixtures().first { $0.test == "test_raises_exception_on_uv_required_but_false" })
        let response = fixture.credential.response
        var party = fixture.relyingParty
        let key = try COSEKey(try fixture.bytes(fixture.credential_public_key_b64url))
        func verify(_ party: WebAuthnRelyingParty, stored: UInt32) throws(WebAuthnError) {
            _ = try party.verifyAssertion(
                clientDataJSON: try! fixture.bytes(response.clientDataJSON),
                authenticatorData: try! fixture.bytes(response.authenticatorData),
                signature: try! fixture.bytes(response.signature), challenge: try! fixture.bytes(fixture.challenge_b64url), publicKey: key,
                storedSignCount: stored)
        }
        try verify(party, stored: fixture.sign_count ?? 0)
        #expect(throws: WebAuthnError(.signCount, "the signature counter 33 is not above the stored 33")) { try verify(party, stored: 33) }
        party.userVerification = .required
        #expect { try verify(party, stored: 0) } throws: { ($0 as? WebAuthnError)?.check == .userVerification }
    }

    /// Each check of an authentication refuses what it names: the type, the challenge, the origin,
    /// the RP ID, a flipped flag (the signature then fails), a synced credential where device-bound
    /// ones are required.
    @Test func eachAuthenticationCheckRefusesItsCase() throws {
        let fixture = try #require(try Self.fixtures().first { $0.test == "test_verify_authentication_response_with_EC2_public_key" })
        let response = fixture.credential.response
        let key = try COSEKey(try fixture.bytes(fixture.credential_public_key_b64url))
        let clientData = try fixture.bytes(response.clientDataJSON), authData = try fixture.bytes(response.authenticatorData)
        let signature = try fixture.bytes(response.signature), challenge = try fixture.bytes(fixture.challenge_b64url)
        func check(
            _ party: WebAuthnRelyingParty, clientData: Data = clientData, authData: Data = authData, challenge: Data = challenge
        ) -> WebAuthnError.Check? {
            do {
                _ = try party.verifyAssertion(
                    clientDataJSON: clientData, authenticatorData: authData, signature: signature, challenge: challenge, publicKey: key,
                    storedSignCount: 0)
                return nil
            } catch { return error.check }
        }
        let party = fixture.relyingParty
        #expect(check(party) == nil)
        var otherChallenge = challenge
        otherChallenge[0] ^= 1
        #expect(check(party, challenge: otherChallenge) == .challenge)
        #expect(check(WebAuthnRelyingParty(id: party.id, origins: ["https://evil.example"], userVerification: .preferred)) == .origin)
        #expect(check(WebAuthnRelyingParty(id: "example.com", origins: party.origins, userVerification: .preferred)) == .relyingParty)
        let created = Data(
            String(decoding: clientData, as: UTF8.self).replacingOccurrences(of: "webauthn.get", with: "webauthn.create").utf8)
        #expect(check(party, clientData: created) == .type)
        var flipped = authData
        flipped[32] ^= WebAuthnAuthenticatorData.Flags.userVerified.rawValue
        #expect(check(party, authData: flipped) == .signature)
        var synced = authData
        synced[32] |= WebAuthnAuthenticatorData.Flags.backupEligible.rawValue
        #expect(
            check(
                WebAuthnRelyingParty(id: party.id, origins: party.origins, userVerification: .preferred, allowsSyncedCredentials: false),
                authData: synced) == .backupState)
        var backedUpOnly = authData
        backedUpOnly[32] |= WebAuthnAuthenticatorData.Flags.backedUp.rawValue
        #expect(check(party, authData: backedUpOnly) == .backupState)
        #expect(check(party, authData: authData + Data([0])) == .malformed)
    }

    /// Every registration's authenticator data is read: the credential, its COSE key (EC2, OKP and
    /// RSA keys among them) and flags. The four formats a passkey uses (`none`, `packed`, `apple`,
    /// `android-key`) verify whole, as py_webauthn says, with what each proves; the security-key
    /// and Windows formats (`fido-u2f`, `tpm`) are refused as such.
    @Test func everyRegistrationHasItsVerdict() async throws {
        let registrations = try Self.fixtures().filter { $0.credential.response.attestationObject != nil }
        #expect(registrations.count == 16)
        var algorithms = Set<Int>()
        var verified: [String: Int] = [:]
        for fixture in registrations {
            let object = try CBOR(decoding: try fixture.bytes(fixture.credential.response.attestationObject))
            let data = try WebAuthnAuthenticatorData(try #require(object["authData"]?.bytesValue))
            let credential = try #require(data.attestedCredential, "\(fixture.test)")
            algorithms.insert(credential.publicKey.algorithm)
            let format = try #require(object["fmt"]?.textValue)
            let result: Result<WebAuthnRelyingParty.VerifiedRegistration, WebAuthnError>
            do {
                result = .success(
                    try await fixture.relyingParty.verifyRegistration(
                        clientDataJSON: try fixture.bytes(fixture.credential.response.clientDataJSON),
                        attestationObject: try fixture.bytes(fixture.credential.response.attestationObject),
                        challenge: try fixture.bytes(fixture.challenge_b64url), at: fixture.time))
            } catch let error as WebAuthnError { result = .failure(error) }
            guard ["none", "packed", "apple", "android-key"].contains(format) else {
                #expect(throws: WebAuthnError(.attestationFormat, "attestation format \(format) is not accepted")) { try result.get() }
                continue
            }
            let registration = try result.get()
            #expect(fixture.py_webauthn_3_0_1_result.hasPrefix("reg OK \(format) "), "\(fixture.test)")
            #expect(registration.credentialID == credential.credentialID && registration.format == format)
            let expected = try #require(fixture.py_webauthn_3_0_1_result.split(separator: " ").dropFirst(3).first)
            #expect(registration.aaguid.map { String(format: "%02x", $0) }.joined() == expected.replacingOccurrences(of: "-", with: ""))
            switch format {
            case "none": #expect(registration.attestation == .none && registration.attestationCertificates.isEmpty)
            case "packed": #expect(registration.attestation == .unanchored && !registration.attestationCertificates.isEmpty)
            default: #expect(registration.attestation == .anchored && registration.attestationCertificates.count >= 2, "\(format)")
            }
            verified[format, default: 0] += 1
        }
        #expect(verified == ["none": 3, "packed": 3, "apple": 1, "android-key": 1])
        #expect(algorithms == [-7, -8, -257], "ES256, EdDSA and RS256 keys are all read")
    }

    /// An `apple` or `android-key` statement is refused when its chain does not lead to the
    /// format's root at the time (another root, after the leaf expired), when the registration
    /// it signs is not this one, or when its certificates are swapped between the formats.
    @Test func platformStatementsAreAnchoredAndBound() async throws {
        let fixtures = try Self.fixtures()
        for name in ["test_verify_attestation_apple_passkey", "test_verify_attestation_android_key_hardware_authority"] {
            let fixture = try #require(fixtures.first { $0.test == name })
            let clientData = try fixture.bytes(fixture.credential.response.clientDataJSON)
            let object = try fixture.bytes(fixture.credential.response.attestationObject)
            let challenge = try fixture.bytes(fixture.challenge_b64url)
            func check(
                _ party: WebAuthnRelyingParty, object: Data = object, at time: Date = fixture.time
            ) async -> WebAuthnError.Check? {
                do {
                    _ = try await party.verifyRegistration(
                        clientDataJSON: clientData, attestationObject: object, challenge: challenge, at: time)
                    return nil
                } catch { return error.check }
            }
            var party = fixture.relyingParty
            #expect(await check(party) == nil, "\(name)")
            #expect(await check(party, at: fixture.time.addingTimeInterval(20 * 365 * 86_400)) == .certificateChain, "\(name)")
            party.attestationRoots = .init(apple: TrustAnchors.googleHardwareAttestationRoots, androidKey: [TrustAnchors.appleWebAuthnRoot])
            #expect(await check(party) == .certificateChain, "\(name): the other format's roots")
            // The signature counter changed: every other check still holds, the binding does not.
            var decoded = try CBOR(decoding: object)
            guard case .map(let entries) = decoded else { Issue.record("not a map"); continue }
            var authData = try #require(decoded["authData"]?.bytesValue)
            authData[authData.startIndex + 35] ^= 1
            decoded = .map(entries.map { $0.key == .text("authData") ? (key: $0.key, value: .bytes(authData)) : $0 })
            #expect(await check(fixture.relyingParty, object: decoded.encoded) == .attestation, "\(name): another registration")
        }
    }

    /// A packed statement is refused when its signature, its algorithm or its certificate's AAGUID
    /// does not hold; a self attestation by the credential's own key verifies.
    @Test func aPackedStatementIsCheckedWhole() async throws {
        let fixture = try #require(
            try Self.fixtures().first {
                $0.test == "test_verify_attestation_from_yubikey_firefox" && $0.py_webauthn_3_0_1_result.contains("packed")
            })
        let clientData = try fixture.bytes(fixture.credential.response.clientDataJSON)
        let challenge = try fixture.bytes(fixture.challenge_b64url)
        let object = try CBOR(decoding: try fixture.bytes(fixture.credential.response.attestationObject))
        func replacing(_ key: String, in map: CBOR, with value: CBOR) -> CBOR {
            guard case .map(let entries) = map else { return map }
            return .map(entries.map { $0.key == .text(key) ? (key: $0.key, value: value) : $0 })
        }
        func check(_ object: CBOR) async -> WebAuthnError.Check? {
            do {
                _ = try await fixture.relyingParty.verifyRegistration(
                    clientDataJSON: clientData, attestationObject: object.encoded, challenge: challenge, at: fixture.time)
                return nil
            } catch { return error.check }
        }
        let statement = try #require(object["attStmt"])
        #expect(await check(object) == nil)
        var signature = try #require(statement["sig"]?.bytesValue)
        signature[signature.count - 3] ^= 1
        #expect(
            await check(replacing("attStmt", in: object, with: replacing("sig", in: statement, with: .bytes(signature)))) == .attestation)
        #expect(await check(replacing("attStmt", in: object, with: replacing("alg", in: statement, with: .negative(7)))) == .algorithm)
        var authData = try #require(object["authData"]?.bytesValue)
        authData[37] ^= 1  // the AAGUID's first byte: the signature no longer covers it
        #expect(await check(replacing("authData", in: object, with: .bytes(authData))) == .attestation)

        // Self attestation: a software P-256 credential signs its own registration.
        let key = P256.Signing.PrivateKey()
        let x963 = key.publicKey.x963Representation
        let cose = CBOR.map([
            (.unsigned(1), .unsigned(2)), (.unsigned(3), .negative(6)), (.negative(0), .unsigned(1)),
            (.negative(1), .bytes(x963[1..<33])), (.negative(2), .bytes(x963[33...])),
        ]).encoded
        let party = WebAuthnRelyingParty(id: "localhost", origins: ["http://localhost:5000"])
        let ownChallenge = Data((0..<32).map { UInt8($0) })
        let json = Data(
            #"{"type":"webauthn.create","challenge":"\#(Base64URL.encode(ownChallenge))","origin":"http://localhost:5000"}"#.utf8)
        let selfData =
            Data(SHA256.hash(data: Data("localhost".utf8))) + Data([0x45, 0, 0, 0, 0]) + Data(count: 16) + Data([0, 4, 1, 2, 3, 4]) + cose
        let selfSignature = try key.signature(for: selfData + Data(SHA256.hash(data: json))).derRepresentation
        let selfObject = CBOR.map([
            (.text("fmt"), .text("packed")),
            (.text("attStmt"), .map([(.text("alg"), .negative(6)), (.text("sig"), .bytes(selfSignature))])),
            (.text("authData"), .bytes(selfData)),
        ])
        let verified = try await party.verifyRegistration(
            clientDataJSON: json, attestationObject: selfObject.encoded, challenge: ownChallenge, at: Date())
        #expect(verified.format == "packed" && verified.attestation == .selfAttested && verified.credentialID == Data([1, 2, 3, 4]))
        let wrongAlgorithm = CBOR.map([
            (.text("fmt"), .text("packed")),
            (.text("attStmt"), .map([(.text("alg"), .negative(7)), (.text("sig"), .bytes(selfSignature))])),
            (.text("authData"), .bytes(selfData)),
        ])
        await #expect(throws: WebAuthnError.self) {
            try await party.verifyRegistration(
                clientDataJSON: json, attestationObject: wrongAlgorithm.encoded, challenge: ownChallenge, at: Date())
        }
    }
}

/// `clientDataJSON` that names a member twice is refused: parsers disagree on which one counts,
/// so an origin check could read one and another verifier the other.
struct ClientDataStrictnessTests {
    @Test(arguments: [
        #"{"type":"webauthn.get","challenge":"AAAA","origin":"https://evil.example","origin":"https://bioauth.test"}"#,
        #"{"type":"webauthn.get","challenge":"AAAA","origin":"https://bioauth.test","\u006frigin":"https://evil.example"}"#,
        #"{"type":"webauthn.get","challenge":"AAAA","origin":"https://bioauth.test",}"#,
    ])
    func aMemberNamedTwiceOrAStrayCommaIsRefused(_ json: String) {
        #expect(throws: WebAuthnError.self) { try WebAuthnClientData(json: Data(json.utf8)) }
    }

    @Test func strictClientDataIsRead() throws {
        let data = try WebAuthnClientData(json: Data(#"{"type":"webauthn.get","challenge":"AAAA","origin":"https://bioauth.test"}"#.utf8))
        #expect(data.origin == "https://bioauth.test" && data.type == "webauthn.get")
    }
}
