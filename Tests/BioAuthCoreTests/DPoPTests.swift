import BioAuthCore
import BioAuthTesting
import Crypto
import Foundation
import Testing

/// DPoP proofs (RFC 9449): the RFC's own examples byte for byte, and each refusal.
@Suite
struct DPoPTests {
    struct Examples: Decodable {
        struct JWK: Decodable { var x: String, y: String }
        struct Proof: Decodable {
            struct Claims: Decodable { var jti: String, htm: String, htu: String, iat: Int64, ath: String? }
            var name: String, proof: String, payload: Claims
        }
        var jwk: JWK
        var jkt_expected: String
        var access_token: String
        var proofs: [Proof]
    }

    static func examples() throws -> Examples {
        try JSONDecoder().decode(Examples.self, from: TestVectors.load("dpop/rfc9449-examples.json"))
    }

    @Test func theRFCsExamplesVerifyByteForByte() throws {
        let examples = try Self.examples()
        let key = try DevicePublicKey(jwk: #"{"kty":"EC","crv":"P-256","x":"\#(examples.jwk.x)","y":"\#(examples.jwk.y)"}"#)
        #expect(key.jwkThumbprint == examples.jkt_expected)
        #expect(examples.proofs.count == 3)
        for example in examples.proofs {
            let proof = try DPoPProof(example.proof)
            #expect(proof.thumbprint == examples.jkt_expected, "\(example.name)")
            #expect(proof.jti == example.payload.jti && proof.method == example.payload.htm && proof.url == example.payload.htu)
            #expect(proof.issuedAt == Date(timeIntervalSince1970: TimeInterval(example.payload.iat)))
            #expect(proof.accessTokenHash == example.payload.ath)
            let at = proof.issuedAt.addingTimeInterval(5)
            let token = example.payload.ath == nil ? nil : examples.access_token
            try proof.check(method: example.payload.htm, url: example.payload.htu + "?query#fragment", at: at, accessToken: token)
        }
        #expect(DPoPProof.accessTokenHash(examples.access_token) == examples.proofs[2].payload.ath)
    }

    @Test func eachRequestCheckRefusesItsCase() throws {
        let examples = try Self.examples()
        let resource = try DPoPProof(examples.proofs[2].proof)
        let url = examples.proofs[2].payload.htu
        let at = resource.issuedAt.addingTimeInterval(1)
        func code(_ body: () throws -> Void) -> DPoPError.Code? {
            do { try body() } catch { return (error as? DPoPError)?.code }
            return nil
        }
        #expect(code { try resource.check(method: "POST", url: url, at: at, accessToken: examples.access_token) } == .method)
        #expect(code { try resource.check(method: "GET", url: "https://resource.example.org/other", at: at) } == .url)
        #expect(code { try resource.check(method: "GET", url: "https://evil.example.org/protectedresource", at: at) } == .url)
        #expect(code { try resource.check(method: "GET", url: url, at: at.addingTimeInterval(301)) } == .issuedAt)
        #expect(code { try resource.check(method: "GET", url: url, at: at.addingTimeInterval(-62)) } == .issuedAt)
        #expect(code { try resource.check(method: "GET", url: url, at: at, accessToken: "another token") } == .accessTokenHash)
        #expect(
            code { try resource.check(method: "GET", url: url, at: at, accessToken: examples.access_token, nonces: ["n-1"]) }
                == .nonceRequired
        )
        let token = try DPoPProof(examples.proofs[0].proof)
        #expect(
            code { try token.check(method: "POST", url: "https://server.example.com/token", at: token.issuedAt, accessToken: "t") }
                == .accessTokenHash)
        // The URL comparison ignores case in scheme and host and the default port, nothing else.
        try token.check(method: "POST", url: "HTTPS://Server.Example.com:443/token", at: token.issuedAt)
        #expect(code { try token.check(method: "POST", url: "https://server.example.com:8443/token", at: token.issuedAt) } == .url)
    }

    @Test func aProofOfOurOwnRoundTripsAndEachFormRuleHolds() throws {
        let device = P256.Signing.PrivateKey()
        let key = DevicePublicKey(device.publicKey)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let sign = { (input: Data) throws -> Data in try device.signature(for: input).rawRepresentation }
        let made = try DPoPProof.make(
            key: key, method: "POST", url: "https://auth.example.com/v1/token/refresh?x=1", at: now, accessToken: "abc", nonce: "n-1",
            sign: sign)
        let proof = try DPoPProof(made)
        #expect(proof.thumbprint == key.jwkThumbprint && proof.url == "https://auth.example.com/v1/token/refresh")
        var dumped = ""
        dump(proof, to: &dumped)
        let ath = try #require(proof.accessTokenHash)
        for shown in ["\(proof)", String(reflecting: proof), dumped] {
            #expect(!shown.contains("n-1") && !shown.contains(proof.jti) && !shown.contains(ath), "\(shown)")
        }
        try proof.check(
            method: "POST", url: "https://auth.example.com/v1/token/refresh", at: now, accessToken: "abc", nonces: ["n-0", "n-1"])
        #expect(throws: DPoPError.self) {
            try proof.check(method: "POST", url: "https://auth.example.com/v1/token/refresh", at: now, accessToken: "abc", nonces: ["n-0"])
        }

        func refused(_ header: String, _ claims: String, signedBy signer: P256.Signing.PrivateKey? = nil) -> DPoPError.Code? {
            let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
            let signature = (try? (signer ?? device).signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
            do { _ = try DPoPProof(input + "." + Base64URL.encode(signature)) } catch { return error.code }
            return nil
        }
        let point = key.x963Representation
        let jwk = #""kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(point[1..<33]))","y":"\#(Base64URL.encode(point[33..<65]))""#
        let claims = #"{"jti":"j-1","htm":"POST","htu":"https://a.example/t","iat":1800000000}"#
        #expect(refused(#"{"typ":"dpop+jwt","alg":"ES256","jwk":{\#(jwk)}}"#, claims) == nil)
        #expect(refused(#"{"typ":"JWT","alg":"ES256","jwk":{\#(jwk)}}"#, claims) == .malformed)
        #expect(refused(#"{"typ":"dpop+jwt","alg":"HS256","jwk":{\#(jwk)}}"#, claims) == .unsupportedAlgorithm)
        #expect(refused(#"{"typ":"dpop+jwt","alg":"none","jwk":{\#(jwk)}}"#, claims) == .unsupportedAlgorithm)
        #expect(refused(#"{"typ":"dpop+jwt","alg":"ES256","jwk":{\#(jwk),"d":"AAAA"}}"#, claims) == .malformed)
        #expect(refused(#"{"typ":"dpop+jwt","alg":"ES256"}"#, claims) == .malformed)
        #expect(refused(#"{"typ":"dpop+jwt","alg":"ES256","jwk":{\#(jwk)}}"#, claims, signedBy: P256.Signing.PrivateKey()) == .signature)
        #expect(refused(#"{"typ":"dpop+jwt","alg":"ES256","jwk":{\#(jwk)}}"#, #"{"jti":"j","htm":"POST","htu":"u"}"#) == .malformed)
        #expect(
            refused(#"{"typ":"dpop+jwt","alg":"ES256","jwk":{\#(jwk)}}"#, #"{"jti":"j","htm":"POST","htu":"u","iat":"1"}"#) == .malformed)
        #expect(refused(#"{"typ":"dpop+jwt","alg":"ES256","jwk":{\#(jwk)}}"#, #"{"jti":"","htm":"POST","htu":"u","iat":1}"#) == .malformed)
        #expect(throws: DPoPError.self) { try DPoPProof("a.b") }
        #expect(throws: DPoPError.self) { try DPoPProof(String(repeating: "a", count: 5000)) }
        // Its description names the failure, never the proof.
        do { _ = try DPoPProof(made + "x") } catch { #expect(!"\(error)".contains(made.prefix(20))) }
    }
}
