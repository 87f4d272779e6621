import BioAuthCore
import Crypto
import Foundation
import Hummingbird
import JWTKit
import Synchronization

// bioauth-floor: the least any server must do for one device login over HTTP, and nothing more —
// the ceiling of this machine for `bioauth-load`, measured the same way as `bioauth-server`.
//
// The same two requests on the same stack (Hummingbird, Foundation's JSON coders): a challenge
// (two random values, kept in memory, its envelope encoded) and a finish (the challenge taken,
// the message rebuilt, the device's ES256 signature verified, two random tokens hashed, an ES256
// access token signed). No database, no lockout, no audit, no metrics, no access log: what is
// left between this and `bioauth-server` is what BioAuth adds. It takes the arguments
// `bioauth-load` gives a server and ignores them; the device key comes from
// BIOAUTH_LOAD_DEVICE_KEY (base64 SPKI), which `bioauth-load` sets. Not a server to deploy:
// a challenge lives until it is finished, and any device id is accepted with the one key.

struct ChallengeRequest: Decodable {
    let userId: String
    let deviceId: String
}

struct FinishRequest: Decodable {
    let challengeId: String
    let signature: String
}

struct Grant: ResponseEncodable {
    let sessionToken: String
    let accessToken: String
    let refreshToken: String
    let expiresAt: Int
}

extension ChallengeEnvelope: @retroactive ResponseEncodable {}

struct Claims: JWTPayload {
    let iss: IssuerClaim
    let aud: AudienceClaim
    let sub: SubjectClaim
    let exp: ExpirationClaim
    let iat: IssuedAtClaim
    let jti: IDClaim
    let did: String

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

guard let spki = ProcessInfo.processInfo.environment["BIOAUTH_LOAD_DEVICE_KEY"].flatMap({ Data(base64Encoded: $0) }),
    let deviceKey = try? DevicePublicKey(spki: spki)
else {
    FileHandle.standardError.write(Data("bioauth-floor: set BIOAUTH_LOAD_DEVICE_KEY to the device's base64 SPKI\n".utf8))
    exit(2)
}
let challenges = Mutex<[Data: SignedMessage]>([:])
let signingKeys = JWTKeyCollection()
await signingKeys.add(ecdsa: ES256PrivateKey(), kid: "floor")

let router = Router()
router.post("/v1/login/challenge") { request, context -> ChallengeEnvelope in
    let body = try await request.decode(as: ChallengeRequest.self, context: context)
    let message = try SignedMessage(
        purpose: .login, relyingPartyID: "load.test", challengeID: SecretBytes.random(count: 16).data,
        nonce: SecretBytes.random(count: 32).data,
        userID: body.userId, deviceID: body.deviceId, expiresAt: UInt64(Date().timeIntervalSince1970) + 60)
    challenges.withLock { $0[message.challengeID] = message }
    return ChallengeEnvelope(message)
}
router.post("/v1/login/finish") { request, context -> Grant in
    let body = try await request.decode(as: FinishRequest.self, context: context)
    guard let id = Base64URL.decode(body.challengeId), let message = challenges.withLock({ $0.removeValue(forKey: id) }),
        let signature = Base64URL.decode(body.signature), deviceKey.isValidSignature(der: signature, for: message.encoded)
    else { throw HTTPError(.unauthorized) }
    let session = SecretBytes.random(count: 32), refresh = SecretBytes.random(count: 32)
    _ = (SHA256.hash(data: session.data), SHA256.hash(data: refresh.data))  // what a server stores of them
    let now = Date()
    let claims = Claims(
        iss: "load.test", aud: "load.test", sub: SubjectClaim(value: message.userID), exp: ExpirationClaim(value: now + 300),
        iat: IssuedAtClaim(value: now), jti: IDClaim(value: Base64URL.encode(SecretBytes.random(count: 16).data)), did: message.deviceID)
    return Grant(
        sessionToken: Base64URL.encode(session.data), accessToken: try await signingKeys.sign(claims, kid: "floor"),
        refreshToken: Base64URL.encode(refresh.data), expiresAt: Int(now.timeIntervalSince1970) + 300)
}
let app = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("bioauth-floor on http://127.0.0.1:\(channel.localAddress?.port ?? 0)\n".utf8))
    })
try await app.runService()
