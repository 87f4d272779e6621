import BioAuth
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthTestServer
import BioAuthTesting
import Foundation
import Testing

/// DPoP with the code an app ships: the second key is made at enrolment, signs without a prompt,
/// and every token the phone holds is bound to it.
@Suite(.timeLimit(.minutes(2)))
struct ClientDPoPTests {
    static func claims(_ jwt: String) throws -> [String: Any] {
        let part = try #require(jwt.split(separator: ".").dropFirst().first)
        let object = try JSONSerialization.jsonObject(with: try #require(Base64URL.decode(String(part)))) as? [String: Any]
        return try #require(object)
    }

    @Test func thePhonesTokensAreBoundToItsProofKeyAndNoProofPrompts() async throws {
        try await Phone.with(server: { $0.dpop.nonces = true }) { phone in
            try await phone.enrolAlice()
            let proofKey = DeviceProofKey(platform: phone.device.platform, tag: "dev.bioauth.dpop-key")
            let thumbprint = try proofKey.publicKey().jwkThumbprint
            let prompts = phone.device.promptCount
            // The login asks for the server's nonce first; the client retries with it, one prompt in all.
            let session = try await phone.client.logIn()
            #expect(session.token.isDPoPBound)
            #expect(phone.device.promptCount == prompts + 1)
            // Account calls go as `Authorization: DPoP` with a proof: no prompt.
            #expect(try await phone.client.devices().count == 1)
            let access = try await phone.client.accessToken()
            #expect(access.token.isDPoPBound)
            #expect((try Self.claims(access.token.value)["cnf"] as? [String: Any])?["jkt"] as? String == thumbprint)
            // A refresh needs the key's proof too (and the nonce): the client does both.
            phone.passTime(16 * 60)
            let refreshed = try await phone.client.accessToken()
            #expect(refreshed.token.value != access.token.value && refreshed.token.isDPoPBound)
            #expect(phone.device.promptCount == prompts + 1, "no proof ever prompts")

            // The app's own API request: a proof its service checks against cnf.jkt.
            let proof = try await phone.client.dpopProof(
                method: "GET", url: "https://api.example.com/orders?page=2", accessToken: refreshed)
            let parsed = try DPoPProof(proof)
            #expect(parsed.thumbprint == thumbprint && parsed.url == "https://api.example.com/orders")
            try parsed.check(
                method: "GET", url: "https://api.example.com/orders", at: phone.clock.now(), accessToken: refreshed.token.value)

            // Revoking this phone deletes the proof key with the device key.
            try await phone.client.revoke(device: session.deviceID)
            #expect(!proofKey.hasKey)
        }
    }

    @Test func aClientWithoutAProofKeyKeepsBearerTokens() async throws {
        try await Phone.with { phone in
            var configuration = phone.client.configuration
            configuration.proofKeyTag = nil
            let client = BioAuthClient(
                configuration: configuration, platform: phone.device.platform,
                transport: URLSessionTransport(baseURL: URL(string: phone.server.url)!))
            try await client.signUp(username: "bob", password: "bob's long password")
            _ = try await client.enrol(try await client.signIn(username: "bob", password: "bob's long password"), deviceName: "Bob's")
            let session = try await client.logIn()
            #expect(!session.token.isDPoPBound)
            #expect(try await client.devices().count == 1)
            #expect(try Self.claims(try await client.accessToken().token.value)["cnf"] == nil)
            await #expect(throws: ClientError.self) { try await client.dpopProof(method: "GET", url: "https://api.example.com/") }
        }
    }
}
