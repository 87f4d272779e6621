import BioAuthCore
import BioAuthServer
import Crypto
import Foundation
import Hummingbird
import InMemoryLogging
import Testing
import BioAuthServerTesting

/// A JWS in compact form, checked here with CryptoKit alone (not jwt-kit): header, claims, and
/// whether the ES256 signature verifies with a JWKS key.
struct CompactJWS {
    let header: [String: Any]
    let claims: [String: Any]
    let signingInput: Data
    let signature: Data

    init?(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let headerJSON = try? JSONSerialization.jsonObject(with: header) as? [String: Any],
            let claimsJSON = try? JSONSerialization.jsonObject(with: claims) as? [String: Any]
        else { return nil }
        self.header = headerJSON
        self.claims = claimsJSON
        signingInput = Data((parts[0] + "." + parts[1]).utf8)
        self.signature = signature
    }

    /// Whether the signature verifies with the JWKS key named by the header's `kid`.
    func verifies(with jwks: [String: Any]) -> Bool {
        guard let keys = jwks["keys"] as? [[String: Any]], let kid = header["kid"] as? String,
            let key = keys.first(where: { $0["kid"] as? String == kid }),
            let x = (key["x"] as? String).flatMap(Base64URL.decode), let y = (key["y"] as? String).flatMap(Base64URL.decode),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: Data([4]) + x + y),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return publicKey.isValidSignature(signature, for: signingInput)
    }
}

/// Device logins hand out ES256 access tokens other services verify with the JWKS, and refresh
/// tokens that rotate; the backend can ask whether a token is still active.
struct AccessTokenTests {
    /// Enrols alice's phone and logs in: the session reply.
    static func login(_ api: API) async throws -> (reply: Reply, deviceID: String, phone: SoftwareDevice) {
        let phone = SoftwareDevice()
        let deviceID = try await api.enrol(phone, token: try await api.primarySession("alice"))
        let reply = try await api.login("alice", deviceID, phone)
        #expect(reply.status == 200)
        return (reply, deviceID, phone)
    }

    func introspect(_ api: API, _ token: String) async throws -> [String: any Sendable] {
        let reply = try await api.post("/v1/introspect", ["token": token], token: api.apiKey)
        #expect(reply.status == 200, "\(reply.text)")
        return reply.json
    }

    @Test func aDeviceLoginIssuesAnES256AccessTokenThatTheJWKSVerifies() async throws {
        let harness = ServerHarness()
        harness.clock.advance(by: 0.25)  // mid-second: the token's times are still whole seconds
        try await harness.test { api in
            let (login, deviceID, _) = try await Self.login(api)
            let jwks = try await api.call(.get, "/.well-known/jwks.json")
            #expect(jwks.status == 200 && jwks.headers[.cacheControl] == "public, max-age=60")
            let keySet = try #require(try JSONSerialization.jsonObject(with: Data(jwks.text.utf8)) as? [String: Any])
            let token = try #require(CompactJWS(login["accessToken"]))
            #expect(token.verifies(with: keySet))
            #expect(token.header["alg"] as? String == "ES256" && token.header["typ"] as? String == "at+jwt")
            let claims = token.claims
            #expect(claims["iss"] as? String == ServerHarness.relyingParty && claims["sub"] as? String == "alice")
            #expect(claims["aud"] as? String == ServerHarness.relyingParty || (claims["aud"] as? [String]) == [ServerHarness.relyingParty])
            #expect(claims["device_id"] as? String == deviceID && claims["sid"] as? String == login["sessionId"])
            #expect((claims["jti"] as? String)?.isEmpty == false)
            #expect(claims["client_id"] as? String == ServerHarness.relyingParty, "RFC 9068 client_id")
            // This server asks for no attestation: the token claims no hardware key (RFC 8176 pop).
            #expect(
                claims["amr"] as? [String] == ["pop", "user"] && claims["acr"] as? String == "urn:bioauth:acr:unattested-key"
                    && claims["att"] == nil)
            let issued = try #require(claims["iat"] as? Double), expires = try #require(claims["exp"] as? Double)
            #expect(expires - issued == 300 && Int64(expires) == login.json["accessTokenExpiresAt"] as? Int64)
            // NumericDate as whole seconds (RFC 7519 allows fractions, but several JWT libraries refuse them).
            let payload = String(
                decoding: try #require(Base64URL.decode(String(login["accessToken"].split(separator: ".")[1]))), as: UTF8.self)
            for claim in ["iat", "exp"] {
                #expect(payload.contains(try Regex("\"\(claim)\":[0-9]+[,}]")), "\(claim) in \(payload)")
            }
            #expect(login["refreshToken"].count == 43)

            // A changed claim or another key's signature does not verify.
            var forged = login["accessToken"].split(separator: ".").map(String.init)
            forged[1] = Base64URL.encode(
                Data(String(decoding: Base64URL.decode(forged[1])!, as: UTF8.self).replacingOccurrences(of: "alice", with: "mallo").utf8))
            #expect(!(CompactJWS(forged.joined(separator: "."))?.verifies(with: keySet) ?? true))

            // A password session gets no access token.
            let primary = try await api.post("/v1/login/password", ["username": "alice", "password": API.password])
            #expect(primary.json["accessToken"] == nil && primary.json["refreshToken"] == nil)
        }
    }

    /// RFC 9700 §4.14.2: refresh tokens rotate; using one twice revokes the session, and with
    /// it every token of the family.
    @Test func refreshTokensRotateAndReuseRevokesTheSession() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (login, _, _) = try await Self.login(api)
            let first = login["refreshToken"]
            let refreshed = try await api.post("/v1/token/refresh", ["refreshToken": first])
            #expect(
                refreshed.status == 200 && refreshed["refreshToken"] != first && refreshed["accessToken"] != login["accessToken"],
                "\(refreshed.text)")
            let second = try await api.post("/v1/token/refresh", ["refreshToken": refreshed["refreshToken"]])
            #expect(second.status == 200)

            #expect(try await api.post("/v1/token/refresh", ["refreshToken": first]).isUniformFailure, "reuse")
            #expect(try await api.call(.get, "/v1/devices", token: login["token"]).isUniformFailure, "the session is revoked")
            #expect(try await api.post("/v1/token/refresh", ["refreshToken": second["refreshToken"]]).isUniformFailure, "the whole family")
            #expect(try await introspect(api, second["accessToken"])["active"] as? Bool == false)
            #expect(try await api.post("/v1/token/refresh", ["refreshToken": Base64URL.encode(Data(count: 32))]).isUniformFailure)
            #expect(try await api.post("/v1/token/refresh", ["refreshToken": "short"]).status == 400)
            #expect(try await api.post("/v1/token/refresh", raw: #"{"refreshToken":"\#(first)","extra":1}"#).status == 400)

            let audit = try await harness.service.store.auditEvents(userID: "alice", limit: 50).map(\.kind)
            #expect(audit.filter { $0 == AuditKind.tokenRefreshed }.count == 2 && audit.contains(AuditKind.refreshTokenReused))
            let logged = harness.logs.entries.map { "\($0.message) \($0.metadata)" }.joined()
            let stored = try await harness.service.store.auditEvents(userID: nil, limit: 100).map { "\($0)" }.joined()
            for secret in [login["accessToken"], first, refreshed["refreshToken"], refreshed["accessToken"]] {
                #expect(!logged.contains(secret) && !stored.contains(secret))
            }
        }
    }

    /// A refresh whose answer was lost is retried with the same token: within the grace window
    /// (10 s) it gets the same successor (and a fresh access token) instead of revoking the
    /// session; once the successor was used, or after the window, the old token is theft again.
    @Test func aRetriedRefreshWithinTheGraceGetsTheSameSuccessor() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (login, deviceID, phone) = try await Self.login(api)
            let first = login["refreshToken"]
            let lost = try await api.post("/v1/token/refresh", ["refreshToken": first])
            #expect(lost.status == 200)
            harness.clock.advance(by: 3)
            let retried = try await api.post("/v1/token/refresh", ["refreshToken": first])
            #expect(retried.status == 200 && retried["refreshToken"] == lost["refreshToken"], "the same successor: \(retried.text)")
            #expect(try await introspect(api, retried["accessToken"])["active"] as? Bool == true)
            // The successor is used now: the old token is reuse, even within the window.
            let next = try await api.post("/v1/token/refresh", ["refreshToken": retried["refreshToken"]])
            #expect(next.status == 200)
            #expect(try await api.post("/v1/token/refresh", ["refreshToken": first]).isUniformFailure, "reuse once the successor was used")
            #expect(
                try await api.post("/v1/token/refresh", ["refreshToken": next["refreshToken"]]).isUniformFailure, "the session is revoked")

            // After the window, a retry is theft as before.
            let other = try await api.login("alice", deviceID, phone)
            let spent = other["refreshToken"]
            #expect(try await api.post("/v1/token/refresh", ["refreshToken": spent]).status == 200)
            harness.clock.advance(by: 11)
            #expect(try await api.post("/v1/token/refresh", ["refreshToken": spent]).isUniformFailure, "after the grace: reuse")
            #expect(try await api.call(.get, "/v1/devices", token: other["token"]).isUniformFailure, "and the session is revoked")
        }
    }

    /// Introspection says active only for an unexpired token of an active session: logout,
    /// revoking the device and expiry end it; garbage and other keys' tokens were never active.
    @Test func introspectionSeesRevocationAndExpiry() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (login, deviceID, phone) = try await Self.login(api)
            let active = try await introspect(api, login["accessToken"])
            #expect(active["active"] as? Bool == true && active["sub"] as? String == "alice" && active["device_id"] as? String == deviceID)
            #expect(active["token_type"] as? String == "Bearer" && active["sid"] as? String == login["sessionId"])
            #expect(try await api.post("/v1/introspect", ["token": login["accessToken"]]).isUniformFailure, "needs an API key")

            let other = try await api.login("alice", deviceID, phone)
            #expect(try await api.post("/v1/logout", [:], token: login["token"]).status == 204)
            #expect(try await introspect(api, login["accessToken"])["active"] as? Bool == false, "logged out")
            #expect(try await introspect(api, other["accessToken"])["active"] as? Bool == true, "another session")
            harness.clock.advance(by: 301)
            #expect(try await introspect(api, other["accessToken"]).count == 1, "expired: only active=false")

            let stranger = P256.Signing.PrivateKey()
            let header = Base64URL.encode(
                Data(#"{"alg":"ES256","typ":"at+jwt","kid":"\#(CompactJWS(other["accessToken"])!.header["kid"]!)"}"#.utf8))
            let body = other["accessToken"].split(separator: ".")[1]
            let signature = try stranger.signature(for: Data((header + "." + body).utf8)).rawRepresentation
            for token in [
                "", "garbage", "a.b.c", header + "." + body + "." + Base64URL.encode(signature),
                Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + body + ".",
            ] {
                #expect(try await introspect(api, token)["active"] as? Bool == false)
            }
            // The request's schema allows 4096 code points: any string up to that is a token that
            // is not active, a longer one a 400 — even of four-byte characters, never a 413.
            #expect(try await introspect(api, String(repeating: "😀", count: 4096))["active"] as? Bool == false)
            for long in [String(repeating: "a", count: 4097), String(repeating: "😀", count: 4097)] {
                let refused = try await api.post("/v1/introspect", ["token": long], token: api.apiKey)
                #expect(refused.status == 400 && refused["field"] == "token", "\(refused.status)")
            }
        }
    }

    /// Introspection accepts a token only with the header this server writes (RFC 9068 §4): the
    /// same claims re-signed with the server's own key are not active when the header says
    /// another `alg` or `typ`, names no `kid` or an unknown one, adds a `crit` extension or any
    /// member the server never writes (`jku`, `x5u`, `jwk`), or when `exp` has a fraction.
    @Test func introspectionRefusesHeadersTheServerNeverWrites() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (login, _, _) = try await Self.login(api)
            let token = try #require(CompactJWS(login["accessToken"]))
            let kid = try #require(token.header["kid"] as? String)
            // The server's own signing key, as a thief of the database would have it.
            let stored = try #require(try await harness.service.store.signingKeys().first { $0.id == kid })
            let key = try P256.Signing.PrivateKey(rawRepresentation: stored.storedKey)  // plaintext in this harness
            let claims = String(login["accessToken"].split(separator: ".")[1])
            func signed(_ header: [String: Any], claims: String = claims) throws -> String {
                let encodedHeader = Base64URL.encode(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys))
                let signature = try key.signature(for: Data((encodedHeader + "." + claims).utf8)).rawRepresentation
                return encodedHeader + "." + claims + "." + Base64URL.encode(signature)
            }
            let own: [String: Any] = ["alg": "ES256", "typ": "at+jwt", "kid": kid]
            #expect(
                try await introspect(api, try signed(own))["active"] as? Bool == true, "the same header re-signed is the server's token")
            #expect(try await introspect(api, try signed(own.merging(["typ": "application/at+JWT"]) { $1 }))["active"] as? Bool == true)
            let refused: [(String, [String: Any])] = [
                ("no kid", own.filter { $0.key != "kid" }), ("unknown kid", own.merging(["kid": "nope"]) { $1 }),
                ("typ JWT", own.merging(["typ": "JWT"]) { $1 }), ("no typ", own.filter { $0.key != "typ" }),
                ("alg ES384", own.merging(["alg": "ES384"]) { $1 }), ("crit", own.merging(["crit": ["exp"], "exp": 1]) { $1 }),
                ("jku", own.merging(["jku": "https://attacker.example/jwks.json"]) { $1 }),
                ("x5u", own.merging(["x5u": "https://attacker.example/cert.pem"]) { $1 }), ("cty", own.merging(["cty": "JWT"]) { $1 }),
            ]
            for (name, header) in refused {
                #expect(try await introspect(api, try signed(header))["active"] as? Bool == false, "\(name)")
            }
            // The same claims with a fractional `exp` (a NumericDate may have one; this server's never do).
            let claimBytes = try #require(Base64URL.decode(claims))
            var payload = try #require(try JSONSerialization.jsonObject(with: claimBytes) as? [String: Any])
            let exp = try #require(payload["exp"] as? Int)
            payload["exp"] = Double(exp) - 0.5
            let fractional = Base64URL.encode(try JSONSerialization.data(withJSONObject: payload, options: .sortedKeys))
            #expect(try await introspect(api, try signed(own, claims: fractional))["active"] as? Bool == false, "fractional exp")
            payload["exp"] = exp
            let whole = Base64URL.encode(try JSONSerialization.data(withJSONObject: payload, options: .sortedKeys))
            #expect(
                try await introspect(api, try signed(own, claims: whole))["active"] as? Bool == true,
                "the same claims re-encoded are active")
        }
    }

    /// With an issuer that is the server's URL, discovery says where the keys and introspection
    /// are (RFC 8414, at both well-known paths); tokens carry that issuer; without one, 404.
    @Test func discoveryDescribesAnIssuerURL() async throws {
        try await ServerHarness().test { api in
            let missing = try await api.call(.get, "/.well-known/openid-configuration")
            #expect(missing.status == 404, "the relying-party id is not a URL: nothing to describe")
        }
        let harness = ServerHarness {
            $0.tokens.issuer = "https://auth.example.com"
            $0.tokens.audience = "https://api.example.com"
            $0.tokens.clientID = "TEAMID.com.example.shop"
        }
        try await harness.test { api in
            for path in ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"] {
                let metadata = try await api.call(.get, path)
                #expect(metadata.status == 200 && metadata.headers[.cacheControl] == "public, max-age=300")
                #expect(
                    metadata["issuer"] == "https://auth.example.com"
                        && metadata["jwks_uri"] == "https://auth.example.com/.well-known/jwks.json")
                #expect(metadata["introspection_endpoint"] == "https://auth.example.com/v1/introspect")
            }
            let (login, _, _) = try await Self.login(api)
            let claims = try #require(CompactJWS(login["accessToken"])).claims
            #expect(claims["iss"] as? String == "https://auth.example.com" && claims["client_id"] as? String == "TEAMID.com.example.shop")
            #expect(claims["aud"] as? String == "https://api.example.com" || (claims["aud"] as? [String]) == ["https://api.example.com"])
            let active = try await introspect(api, login["accessToken"])
            #expect(active["active"] as? Bool == true && active["client_id"] as? String == "TEAMID.com.example.shop")
        }
        #expect(TokenPolicy.issuerURL("http://auth.example.com") == nil && TokenPolicy.issuerURL("https://a.example/?x=1") == nil)
        #expect(TokenPolicy.issuerURL("http://127.0.0.1:8080") != nil && TokenPolicy.issuerURL("bioauth.test") == nil)
    }

    /// Keys rotate on schedule: the new key is published before it signs, the old one while its
    /// tokens live, and a token of each verifies.
    @Test func signingKeysRotateWithoutBreakingIssuedTokens() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let (login, deviceID, phone) = try await Self.login(api)
            harness.clock.advance(by: 30 * 86_400 - 200)
            let beforeRotation = try await api.login("alice", deviceID, phone)
            harness.clock.advance(by: 200)  // due: a new key is made, published, not yet signing
            let during = try await api.login("alice", deviceID, phone)
            let kid = { (token: String) in CompactJWS(token)?.header["kid"] as? String }
            #expect(kid(during["accessToken"]) == kid(login["accessToken"]), "the new key waits two minutes before it signs")
            let published = try await api.call(.get, "/.well-known/jwks.json").json["keys"] as? [[String: Any]] ?? []
            #expect(published.count == 2)
            harness.clock.advance(by: 121)
            let after = try await api.login("alice", deviceID, phone)
            #expect(kid(after["accessToken"]) != kid(login["accessToken"]))
            #expect(try await introspect(api, after["accessToken"])["active"] as? Bool == true)
            #expect(try await harness.service.store.signingKeys().count == 2)
            _ = beforeRotation
        }
    }
}
