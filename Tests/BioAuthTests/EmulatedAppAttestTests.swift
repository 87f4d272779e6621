import BioAuthAttestation
import BioAuthEmulator
import Crypto
import Foundation
import Testing

/// The emulated `DCAppAttestService` makes what a real device makes — the server's verifier accepts it
/// when told to trust the test root — and the attack scripts make what an attacker can make.
struct EmulatedAppAttestTests {
    let app = try! AppAttest.AppID("ABCDE12345.com.example.bank")
    var verifier: AppAttestVerifier { AppAttestVerifier(appIDs: [app], environments: [.development], roots: [EmulatedAppAttest.testRoot]) }
    let clientData = Data("registration challenge and the biometric key".utf8)
    var clientDataHash: Data { Data(SHA256.hash(data: clientData)) }

    func refusal(_ body: () async throws -> Void) async -> AttestationError.Check? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? AttestationError)?.check
        }
    }

    @Test func anAttestedKeySignsAssertionsWithARisingCounter() async throws {
        let service = EmulatedAppAttest(appID: app)
        let keyID = try service.generateKey()
        let attestation = try service.attestKey(keyID, clientDataHash: clientDataHash)
        var key = try await verifier.verifyAttestation(attestation, keyID: keyID, clientDataHash: clientDataHash, at: Date())
        #expect(key.counter == 0 && key.environment == .development && key.appID == app)
        let first = try service.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: Data("login 1".utf8))))
        key = try verifier.verifyAssertion(first, clientData: Data("login 1".utf8), key: key)
        let second = try service.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: Data("login 2".utf8))))
        key = try verifier.verifyAssertion(second, clientData: Data("login 2".utf8), key: key)
        #expect(key.counter == 2)
        // The attack script "replayed assertion": the first one again.
        #expect(await refusal { _ = try verifier.verifyAssertion(first, clientData: Data("login 1".utf8), key: key) } == .counter)
        // Signed for other client data.
        #expect(await refusal { _ = try verifier.verifyAssertion(second, clientData: Data("login 3".utf8), key: key) } == .signature)
    }

    @Test func aResignedAppASoftwareKeyAndApplesRootAreRefused() async throws {
        // An app re-signed by another team attests as that team's app.
        let resigned = EmulatedAppAttest(appID: try AppAttest.AppID("ZZZZZ99999.com.example.bank"))
        let keyID = try resigned.generateKey()
        let attestation = try resigned.attestKey(keyID, clientDataHash: clientDataHash)
        #expect(
            await refusal {
                _ = try await verifier.verifyAttestation(attestation, keyID: keyID, clientDataHash: clientDataHash, at: Date())
            } == .appIdentifier)
        // A software key cannot be attested by the device; a chain of the attacker's own leads nowhere.
        let software = P256.Signing.PrivateKey().publicKey
        let forged = EmulatedAppAttest.forgedAttestation(
            for: software, appID: app, environment: .development, clientDataHash: clientDataHash)
        let softwareID = Data(SHA256.hash(data: software.x963Representation))
        #expect(
            await refusal {
                _ = try await verifier.verifyAttestation(forged, keyID: softwareID, clientDataHash: clientDataHash, at: Date())
            } == .certificateChain)
        // Apple's root never vouches for the emulator; a production-only server refuses a development key.
        let genuine = EmulatedAppAttest(appID: app)
        let genuineID = try genuine.generateKey()
        let genuineAttestation = try genuine.attestKey(genuineID, clientDataHash: clientDataHash)
        let apple = AppAttestVerifier(appIDs: [app], environments: [.development])
        #expect(
            await refusal {
                _ = try await apple.verifyAttestation(genuineAttestation, keyID: genuineID, clientDataHash: clientDataHash, at: Date())
            } == .certificateChain)
        let production = AppAttestVerifier(appIDs: [app], environments: [.production], roots: [EmulatedAppAttest.testRoot])
        #expect(
            await refusal {
                _ = try await production.verifyAttestation(genuineAttestation, keyID: genuineID, clientDataHash: clientDataHash, at: Date())
            } == .environment)
    }

    @Test func theServiceFailsAsDCAppAttestServiceDoes() throws {
        #expect(throws: EmulatedAppAttest.Failure.featureUnsupported) {
            try EmulatedAppAttest(appID: app, isSupported: false).generateKey()
        }
        let service = EmulatedAppAttest(appID: app)
        let keyID = try service.generateKey()
        // not attested yet
        #expect(throws: EmulatedAppAttest.Failure.invalidKey) { try service.generateAssertion(keyID, clientDataHash: clientDataHash) }
        _ = try service.attestKey(keyID, clientDataHash: clientDataHash)
        // once per key
        #expect(throws: EmulatedAppAttest.Failure.invalidKey) { try service.attestKey(keyID, clientDataHash: clientDataHash) }
        #expect(throws: EmulatedAppAttest.Failure.invalidKey) {
            try service.attestKey(Data(repeating: 1, count: 32), clientDataHash: clientDataHash)
        }
        #expect(throws: EmulatedAppAttest.Failure.invalidInput) { try service.generateAssertion(keyID, clientDataHash: Data([1, 2])) }
    }
}
