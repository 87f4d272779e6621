import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthSQLite
import Crypto
import Foundation
import Logging

/// Enrolments per second through the service API (SQLite in memory), without and with App Attest
/// required, in the same run. Only the server's work is timed (begin + finish, the attestation's
/// P-384 chain included); the emulated phone's signing and attesting happen outside the clock.
func enrolmentFigures(rawVerifiesPerSecond: Double) async throws {
    let app = try AppAttest.AppID("BENCHTEAM1.dev.bioauth.bench")
    let phone = EmulatedAppAttest(appID: app)
    line(
        "\nenrolment (grant session, registration challenge, signature, device row), service API, SQLite :memory:, 1 client; server time only"
    )
    var perSecond: [Bool: Double] = [:]
    for attested in [false, true] {
        var configuration = ServerConfiguration(relyingPartyID: "bench")
        configuration.rateLimits.requestsPerClient = .max
        if attested {
            configuration.attestation.apple = .required(
                AppAttestVerifier(appIDs: [app], environments: [.development], roots: [EmulatedAppAttest.testRoot]))
        }
        let service = BioAuthService(
            store: try SQLiteStore.inMemory(), configuration: configuration,
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        let rounds = 400
        var serverTime = 0.0
        let request = RequestInfo(clientAddress: "bench")
        for n in 0..<rounds {
            let key = P256.Signing.PrivateKey()
            let grant = try await service.issueEnrolmentGrant(userID: UserID("user-\(n)"), request: request)
            var start = ContinuousClock.now
            let challenge = try await service.beginRegistration(
                session: grant.session, name: "Phone", publicKey: Base64URL.encode(key.publicKey.derRepresentation), replacesDeviceID: nil,
                enrolmentRequestID: nil, request: request)
            serverTime += seconds(ContinuousClock.now - start)
            let message = try challenge.message()
            let signature = Base64URL.encode(try key.signature(for: message.encoded).derRepresentation)
            var attestation: PresentedAttestation?
            if attested {
                let keyID = try phone.generateKey()
                let object = try phone.attestKey(
                    keyID, clientDataHash: AttestationBinding.registrationHash(message, publicKey: key.publicKey.derRepresentation))
                attestation = .appAttest(keyID: keyID, object: object)
            }
            start = ContinuousClock.now
            _ = try await service.finishRegistration(
                session: grant.session, challengeID: try ChallengeID(challenge.challengeId), signature: signature, attestation: attestation,
                request: request
            )
            serverTime += seconds(ContinuousClock.now - start)
        }
        perSecond[attested] = Double(rounds) / serverTime
    }
    let plain = perSecond[false] ?? 0, attested = perSecond[true] ?? 0
    line(String(format: "  unattested:                   %8.0f enrolments/s   %.3f ms each", plain, 1000 / plain))
    line(
        String(
            format:
                "  App Attest required:          %8.0f enrolments/s   %.3f ms each   (%.2f× unattested; the attestation adds %.3f ms = %.1f P-256 verifies)",
            attested, 1000 / attested, attested / plain, 1000 / attested - 1000 / plain, (1 / attested - 1 / plain) * rawVerifiesPerSecond))
}
