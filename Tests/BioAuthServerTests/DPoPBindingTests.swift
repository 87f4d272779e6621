import BioAuthCore
import BioAuthServer
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import HTTPTypes
import Testing

/// DPoP-bound sessions and tokens (RFC 9449): a device registers its proof key with its
/// enrolment; its logins, refreshes and account calls need that key's proofs.
@Suite struct DPoPBindingTests {
    static let origin = "https://auth.example.com"

    static func harness(_ configure: @escaping (inout DPoPPolicy) -> Void = { _ in }) -> ServerHarness {
        ServerHarness { configuration in
            configuration.dpop.publicOrigin = origin
            configure(&configuration.dpop)
        }
    }

    /// A proof by `key` for `method` `path`, now on the harness's clock.
    static func proof(
        _ key: P256.Signing.PrivateKey, _ method: String, _ path: String, _ harness: ServerHarness, accessToken: String? = nil,
        nonce: String? = nil, url: String? = nil
    ) throws -> HTTPFields {
        let proof = try DPoPProof.make(
            key: DevicePublicKey(key.publicKey), method: method, url: url ?? origin + path, at: harness.clock.now(),
            accessToken: accessToken,
            nonce: nonce
        ) { try key.signature(for: $0).rawRepresentation }
        return [HTTPField.Name("DPoP")!: proof]
    }

    /// Alice's phone enrolled with `dpopKey`'s proof on its registration: the phone's id.
    static func enrol(_ api: API, _ harness: ServerHarness, phone: SoftwareDevice, dpopKey: P256.Signing.PrivateKey?) async throws -> String
    {
        let token = try await api.primarySession()
        let challenge = try await api.post("/v1/devices/registration/challenge", ["name": "Phone", "publicKey": phone.spki], token: token)
        let headers = try dpopKey.map { try proof($0, "POST", "/v1/devices/registration/finish", harness) } ?? [:]
        let finish = try await api.call(
            .post, "/v1/devices/registration/finish", ["challengeId": challenge["challengeId"], "signature": try phone.sign(challenge)],
            token: token, headers: headers)
        #expect(finish.status == 201, "\(finish.text)")
        return finish["id"]
    }

    static func login(
        _ api: API, _ harness: ServerHarness, phoneID: String, phone: SoftwareDevice, dpopKey: P256.Signing.PrivateKey?,
        nonce: String? = nil
    ) async throws -> Reply {
        let challenge = try await api.loginChallenge("alice", phoneID)
        let headers = try dpopKey.map { try proof($0, "POST", "/v1/login/finish", harness, nonce: nonce) } ?? [:]
        return try await api.call(
            .post, "/v1/login/finish", ["challengeId": challenge["challengeId"], "signature": try phone.sign(challenge)], headers: headers)
    }

    /// The payload of a JWT, decoded.
    static func claims(_ jwt: String) throws -> [String: any Sendable] {
        let part = try #require(jwt.split(separator: ".").dropFirst().first)
        let bytes = try #require(Base64URL.decode(String(part)))
        let object = try JSONSerialization.jsonObject(with: bytes) as? [String: any Sendable]
        return try #require(object)
    }

    @Test func aBoundDevicesSessionAndTokensAnswerOnlyToItsKey() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let phone = SoftwareDevice(), key = P256.Signing.PrivateKey(), other = P256.Signing.PrivateKey()
            let thumbprint = DevicePublicKey(key.publicKey).jwkThumbprint
            let phoneID = try await Self.enrol(api, harness, phone: phone, dpopKey: key)
            #expect(try await harness.service.store.device(id: DeviceID(phoneID))?.dpopThumbprint == thumbprint)

            // A login without the key's proof, or with another key's, is the uniform failure.
            #expect(try await Self.login(api, harness, phoneID: phoneID, phone: phone, dpopKey: nil).isUniformFailure)
            #expect(try await Self.login(api, harness, phoneID: phoneID, phone: phone, dpopKey: other).isUniformFailure)
            #expect(try await harness.auditedReasons().filter { $0.hasPrefix("dpop.") } == ["dpop.missing", "dpop.wrongKey"])

            let login = try await Self.login(api, harness, phoneID: phoneID, phone: phone, dpopKey: key)
            #expect(login.status == 200 && login["tokenType"] == "DPoP", "\(login.text)")
            let access = try Self.claims(login["accessToken"])
            #expect((access["cnf"] as? [String: any Sendable])?["jkt"] as? String == thumbprint)
            let introspected = try await api.post("/v1/introspect", ["token": login["accessToken"]], token: api.apiKey)
            #expect((introspected.json["cnf"] as? [String: any Sendable])?["jkt"] as? String == thumbprint)
            #expect(introspected["token_type"] == "DPoP")

            // The session token: only as `DPoP` with a fresh proof of this key naming it.
            let token = login["token"]
            let proof = try Self.proof(key, "GET", "/v1/devices", harness, accessToken: token)
            #expect(try await api.call(.get, "/v1/devices", headers: proof.merging([.authorization: "DPoP " + token])).status == 200)
            #expect(try await api.call(.get, "/v1/devices", headers: proof.merging([.authorization: "DPoP " + token])).isUniformFailure)
            let asBearer = try await api.call(.get, "/v1/devices", token: token)
            #expect(asBearer.isUniformFailure && asBearer.headers[.wwwAuthenticate] == #"DPoP error="invalid_dpop_proof", algs="ES256""#)
            let others = try Self.proof(other, "GET", "/v1/devices", harness, accessToken: token)
            #expect(try await api.call(.get, "/v1/devices", headers: others.merging([.authorization: "DPoP " + token])).isUniformFailure)
            let elsewhere = try Self.proof(key, "GET", "/v1/sessions", harness, accessToken: token)
            #expect(try await api.call(.get, "/v1/devices", headers: elsewhere.merging([.authorization: "DPoP " + token])).isUniformFailure)
            let unbound = try Self.proof(key, "GET", "/v1/devices", harness)
            #expect(try await api.call(.get, "/v1/devices", headers: unbound.merging([.authorization: "DPoP " + token])).isUniformFailure)
            let reasons = try await harness.auditedReasons()
            #expect(
                ["dpop.replayed", "dpop.missing", "dpop.wrongKey", "dpop.url", "dpop.accessTokenHash"].allSatisfy(reasons.contains),
                "\(reasons)")

            // The refresh token too: refused without the key's proof, and not burnt by the refusal.
            let refresh = login["refreshToken"]
            let bare = try await api.post("/v1/token/refresh", ["refreshToken": refresh])
            #expect(bare.status == 400 && bare["error"] == "invalid_dpop_proof" && bare["reason"] == "missing", "\(bare.text)")
            let stolen = try await api.call(
                .post, "/v1/token/refresh", ["refreshToken": refresh], headers: try Self.proof(other, "POST", "/v1/token/refresh", harness))
            #expect(stolen.status == 400 && stolen["reason"] == "wrongKey")
            let good = try Self.proof(key, "POST", "/v1/token/refresh", harness)
            let refreshed = try await api.call(.post, "/v1/token/refresh", ["refreshToken": refresh], headers: good)
            #expect(refreshed.status == 200 && refreshed["tokenType"] == "DPoP", "\(refreshed.text)")
            #expect((try Self.claims(refreshed["accessToken"])["cnf"] as? [String: any Sendable])?["jkt"] as? String == thumbprint)
            let replayed = try await api.call(.post, "/v1/token/refresh", ["refreshToken": refreshed["refreshToken"]], headers: good)
            #expect(replayed.status == 400 && replayed["reason"] == "replayed")
        }
    }

    @Test func aProofForAnotherRequestIsRefusedBeforeTheChallengeIsTaken() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let phone = SoftwareDevice(), key = P256.Signing.PrivateKey()
            let phoneID = try await Self.enrol(api, harness, phone: phone, dpopKey: key)
            let challenge = try await api.loginChallenge("alice", phoneID)
            let body: [String: any Sendable] = ["challengeId": challenge["challengeId"], "signature": try phone.sign(challenge)]
            for (headers, reason) in [
                (try Self.proof(key, "GET", "/v1/login/finish", harness), "method"),
                (try Self.proof(key, "POST", "/v1/token/refresh", harness), "url"),
                (try Self.proof(key, "POST", "/v1/login/finish", harness, url: "https://evil.example.com/v1/login/finish"), "url"),
                ([HTTPField.Name("DPoP")!: "not.a.proof"], "malformed"),
            ] {
                let refused = try await api.call(.post, "/v1/login/finish", body, headers: headers)
                #expect(refused.status == 400 && refused["error"] == "invalid_dpop_proof" && refused["reason"] == reason, "\(refused.text)")
            }
            harness.clock.advance(by: 400)
            let stale = try DPoPProof.make(
                key: DevicePublicKey(key.publicKey), method: "POST", url: Self.origin + "/v1/login/finish",
                at: harness.clock.now().addingTimeInterval(-301)
            ) { try key.signature(for: $0).rawRepresentation }
            let old = try await api.call(.post, "/v1/login/finish", body, headers: [HTTPField.Name("DPoP")!: stale])
            #expect(old.status == 400 && old["reason"] == "issuedAt")
            // The challenge was not taken by any of them: it still logs in.
            harness.clock.advance(by: -400)
            let login = try await api.call(
                .post, "/v1/login/finish", body, headers: try Self.proof(key, "POST", "/v1/login/finish", harness))
            #expect(login.status == 200, "\(login.text)")
        }
    }

    @Test func aDeploymentMayRequireProofsAndItsNonce() async throws {
        let harness = Self.harness {
            $0.required = true; $0.nonces = true
        }
        try await harness.test { api in
            let phone = SoftwareDevice(), key = P256.Signing.PrivateKey()
            let token = try await api.primarySession()
            let challenge = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Phone", "publicKey": phone.spki], token: token)
            let body: [String: any Sendable] = ["challengeId": challenge["challengeId"], "signature": try phone.sign(challenge)]
            let bare = try await api.post("/v1/devices/registration/finish", body, token: token)
            #expect(bare.status == 400 && bare["error"] == "invalid_dpop_proof" && bare["reason"] == "missing")
            // Without the server's nonce: use_dpop_nonce and the nonce to retry with.
            let first = try await api.call(
                .post, "/v1/devices/registration/finish", body, token: token,
                headers: try Self.proof(key, "POST", "/v1/devices/registration/finish", harness))
            #expect(first.status == 400 && first["error"] == "use_dpop_nonce", "\(first.text)")
            let nonce = try #require(first.headers[HTTPField.Name("DPoP-Nonce")!])
            let enrolled = try await api.call(
                .post, "/v1/devices/registration/finish", body, token: token,
                headers: try Self.proof(key, "POST", "/v1/devices/registration/finish", harness, nonce: nonce))
            #expect(enrolled.status == 201, "\(enrolled.text)")
            #expect(try await Self.login(api, harness, phoneID: enrolled["id"], phone: phone, dpopKey: key, nonce: nonce).status == 200)
            // A nonce from two periods ago is stale.
            harness.clock.advance(by: 2 * DPoPPolicy().nonceLifetime)
            let stale = try await Self.login(api, harness, phoneID: enrolled["id"], phone: phone, dpopKey: key, nonce: nonce)
            #expect(stale.status == 400 && stale["error"] == "use_dpop_nonce" && stale.headers[HTTPField.Name("DPoP-Nonce")!] != nonce)
        }
    }

    @Test func aDeviceWithoutAKeyKeepsBearerTokensUnlessItProvesOne() async throws {
        let harness = Self.harness()
        try await harness.test { api in
            let phone = SoftwareDevice()
            let phoneID = try await Self.enrol(api, harness, phone: phone, dpopKey: nil)
            let bearer = try await Self.login(api, harness, phoneID: phoneID, phone: phone, dpopKey: nil)
            let claims = try Self.claims(bearer["accessToken"])
            #expect(bearer.status == 200 && bearer["tokenType"] == "Bearer" && claims["cnf"] == nil)
            #expect(try await api.call(.get, "/v1/devices", token: bearer["token"]).status == 200)
            // A login that proves a key binds that session, though the device registered none.
            let key = P256.Signing.PrivateKey()
            let bound = try await Self.login(api, harness, phoneID: phoneID, phone: phone, dpopKey: key)
            #expect(bound.status == 200 && bound["tokenType"] == "DPoP")
            #expect(try await api.call(.get, "/v1/devices", token: bound["token"]).isUniformFailure)
        }
    }
}

extension HTTPFields {
    func merging(_ other: HTTPFields) -> HTTPFields {
        var merged = self
        for field in other { merged[field.name] = field.value }
        return merged
    }
}
