@testable import BioAuthAttestation
import BioAuthCore
import BioAuthTesting
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

/// Every positive vector, changed in one place, is refused — by the check that place belongs to.
@Suite
struct AttestationTamperTests {
    static func cases() throws -> [AttestationCase] {
        try AttestationFiles.cases(at: TestVectors.directory.appendingPathComponent("attestation"))
    }

    func refusal(_ body: () async throws -> Void) async -> AttestationError.Check? {
        do {
            try await body()
            return nil
        } catch let error as AttestationError {
            return error.check
        } catch {
            Issue.record("not an AttestationError: \(error)")
            return nil
        }
    }

    static func replacing(_ map: CBOR, _ key: String, with value: CBOR) -> CBOR {
        guard case .map(let entries) = map else { return map }
        return .map(entries.map { $0.key == .text(key) ? ($0.key, value) : $0 })
    }

    static func flipping(_ data: Data, at index: Int) -> Data {
        var copy = data
        copy[copy.startIndex + index] ^= 0x01
        return copy
    }

    @Test func everyAttestationChangedInOnePlaceIsRefused() async throws {
        let all = try Self.cases()
        let appIDs = AttestationFiles.appIDs(in: all)
        var checked = 0
        for item in all {
            guard case .appAttestation(let object, let keyID, let clientDataHash, _) = item.evidence, let time = item.time else { continue }
            let verifier = AppAttestVerifier(appIDs: appIDs, environments: [.development])
            let key = try await verifier.verifyAttestation(object, keyID: keyID, clientDataHash: clientDataHash, at: time)
            #expect(key.counter == 0 && key.keyID == keyID && !key.receipt.isEmpty)
            let decoded = try CBOR(decoding: object)
            let authenticatorData = try #require(decoded["authData"]?.bytesValue)
            let x5c = try #require(decoded["attStmt"]?["x5c"]?.arrayValue)
            func attest(
                _ object: CBOR, keyID: Data = keyID, hash: Data = clientDataHash, at: Date = time, verifier: AppAttestVerifier = verifier
            ) async -> AttestationError.Check? {
                await refusal { _ = try await verifier.verifyAttestation(object.encoded, keyID: keyID, clientDataHash: hash, at: at) }
            }
            let name = item.name
            // One byte of authenticator data (the rpIdHash, then the counter): the nonce no longer matches.
            for index in [0, 36] {
                #expect(
                    await attest(Self.replacing(decoded, "authData", with: .bytes(Self.flipping(authenticatorData, at: index)))) == .nonce,
                    "\(name)")
            }
            #expect(await attest(decoded, hash: Self.flipping(clientDataHash, at: 0)) == .nonce, "\(name)")
            // One byte of the leaf's signature; the chain in the wrong order; the leaf alone.
            let leaf = try #require(x5c[0].bytesValue)
            let flippedLeaf = CBOR.array([.bytes(Self.flipping(leaf, at: leaf.count - 1))] + x5c.dropFirst())
            let statement = try #require(decoded["attStmt"])
            #expect(
                await attest(Self.replacing(decoded, "attStmt", with: Self.replacing(statement, "x5c", with: flippedLeaf)))
                    == .certificateChain, "\(name)")
            #expect(
                await attest(Self.replacing(decoded, "attStmt", with: Self.replacing(statement, "x5c", with: .array(x5c.reversed()))))
                    == .certificateChain, "\(name)")
            #expect(
                await attest(Self.replacing(decoded, "attStmt", with: Self.replacing(statement, "x5c", with: .array([x5c[0]]))))
                    == .certificateChain, "\(name)")
            // After the leaf expired (3 days on iOS 14, 11 months in 2024), or before it was issued.
            #expect(await attest(decoded, at: time.addingTimeInterval(400 * 86_400)) == .certificateChain, "\(name)")
            #expect(await attest(decoded, at: time.addingTimeInterval(-30 * 86_400)) == .certificateChain, "\(name)")
            // Another key id; another app; the production environment only; not the Apple root.
            #expect(await attest(decoded, keyID: Self.flipping(keyID, at: 0)) == .keyIdentifier, "\(name)")
            let otherApp = try AppAttest.AppID("ABCDE12345.com.example.other")
            #expect(
                await attest(decoded, verifier: AppAttestVerifier(appIDs: [otherApp], environments: [.development])) == .appIdentifier,
                "\(name)")
            #expect(
                await attest(decoded, verifier: AppAttestVerifier(appIDs: appIDs, environments: [.production])) == .environment, "\(name)")
            let otherRoot = TrustAnchors.googleHardwareAttestationRoots[1]
            #expect(
                await attest(decoded, verifier: AppAttestVerifier(appIDs: appIDs, environments: [.development], roots: [otherRoot]))
                    == .certificateChain, "\(name)")
            // Not an attestation at all.
            #expect(await attest(Self.replacing(decoded, "fmt", with: .text("packed"))) == .format, "\(name)")
            #expect(
                await refusal {
                    _ = try await verifier.verifyAttestation(object.dropLast(), keyID: keyID, clientDataHash: clientDataHash, at: time)
                } == .malformed)
            checked += 1
        }
        #expect(checked == 6)
    }

    @Test func everyAssertionChangedInOnePlaceIsRefused() async throws {
        let all = try Self.cases()
        var checked = 0
        for item in all {
            guard case .appAssertion(let object, let clientData, let publicKey, let appID, let environment, let counter) = item.evidence
            else { continue }
            let verifier = AppAttestVerifier(appIDs: [appID], environments: [environment])
            let keyID = Data(SHA256.hash(data: publicKey.x963Representation))
            let before = AppAttestKey(
                keyID: keyID, publicKey: publicKey, appID: appID, environment: environment, counter: counter - 1, receipt: Data())
            #expect(try verifier.verifyAssertion(object, clientData: clientData, key: before).counter == counter)
            let decoded = try CBOR(decoding: object)
            let signature = try #require(decoded["signature"]?.bytesValue)
            let authenticatorData = try #require(decoded["authenticatorData"]?.bytesValue)
            func assert(_ object: CBOR, clientData: Data = clientData, key: AppAttestKey = before, verifier: AppAttestVerifier = verifier)
                async -> AttestationError.Check?
            {
                await refusal { _ = try verifier.verifyAssertion(object.encoded, clientData: clientData, key: key) }
            }
            #expect(
                await assert(Self.replacing(decoded, "signature", with: .bytes(Self.flipping(signature, at: signature.count - 1))))
                    == .signature)
            #expect(
                await assert(Self.replacing(decoded, "authenticatorData", with: .bytes(Self.flipping(authenticatorData, at: 36))))
                    == .signature)
            #expect(await assert(decoded, clientData: clientData + Data("x".utf8)) == .signature)
            // The same assertion again: its counter is no longer above the stored one.
            let after = AppAttestKey(
                keyID: keyID, publicKey: publicKey, appID: appID, environment: environment, counter: counter, receipt: Data())
            #expect(await assert(decoded, key: after) == .counter)
            // Another device's key; an app the server no longer accepts.
            let stranger = AppAttestKey(
                keyID: keyID, publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey), appID: appID, environment: environment,
                counter: 0, receipt: Data())
            #expect(await assert(decoded, key: stranger) == .signature)
            let otherApp = try AppAttest.AppID("ABCDE12345.com.example.other")
            #expect(await assert(decoded, verifier: AppAttestVerifier(appIDs: [otherApp], environments: [environment])) == .appIdentifier)
            checked += 1
        }
        #expect(checked == 6)
    }

    @Test func everyAndroidChainChangedInOnePlaceIsRefused() async throws {
        var checked = 0
        for item in try Self.cases() where item.shouldPass {
            guard case .androidChain(let ders, _) = item.evidence, let time = item.time else { continue }
            func decode(_ chain: [Data], at: Date = time) async -> AttestationError.Check? {
                await refusal { _ = try await AndroidKeyAttestationVerifier.decode(chain: chain, at: at) }
            }
            #expect(await decode(ders) == nil, "\(item.name)")
            #expect(await decode([Self.flipping(ders[0], at: ders[0].count - 1)] + ders.dropFirst()) == .certificateChain, "\(item.name)")
            #expect(await decode(ders.reversed()) != nil, "\(item.name)")
            #expect(await decode([ders[0]]) == .certificateChain, "\(item.name)")
            #expect(await decode(ders, at: Date(timeIntervalSince1970: 4_102_444_800)) == .certificateChain, "\(item.name)")  // 2100
            // A chain that brings its own root is not trusted because its root is self-signed.
            #expect(
                await refusal {
                    _ = try await AndroidKeyAttestationVerifier.decode(chain: ders, roots: [TrustAnchors.appleAppAttestationRoot], at: time)
                } == .certificateChain)
            checked += 1
        }
        #expect(checked == 12)
    }

    /// The StrongBox and TEE chains of a Pixel 9a (2026 EC root, verified boot, locked) pass a policy that
    /// asks for what they have, and fail each requirement they do not meet.
    @Test func androidRequirementsEachRefuseWhatTheyName() async throws {
        let chains = try Self.cases().filter { $0.name.hasPrefix("tegu/") }
        #expect(chains.count == 2)
        for item in chains {
            guard case .androidChain(let ders, _) = item.evidence, let time = item.time else { continue }
            let (leaf, description) = try await AndroidKeyAttestationVerifier.decode(chain: ders, at: time)
            let key = DevicePublicKey(try #require(P256.Signing.PublicKey(leaf.publicKey)))
            let application = try #require(description.softwareEnforced.applicationID)
            var requirements = AndroidKeyRequirements(
                packageNames: [application.packages[0].name], signingCertificateDigests: Set(application.signatureDigests))
            requirements.biometricOnEveryUse = false  // No vector has a biometric-only key.
            let challenge = description.attestationChallenge
            func verify(_ requirements: AndroidKeyRequirements, challenge: Data = challenge, key: DevicePublicKey = key) async
                -> AttestationError.Check?
            {
                await refusal {
                    _ = try await AndroidKeyAttestationVerifier(requirements: requirements, revocation: .unchecked).verify(
                        chain: ders, challenge: challenge, publicKey: key, at: time)
                }
            }
            #expect(await verify(requirements) == nil)
            let attested = try await AndroidKeyAttestationVerifier(requirements: requirements, revocation: .unchecked).verify(
                chain: ders, challenge: challenge, publicKey: key, at: time)
            #expect(attested.packageName == application.packages[0].name && attested.securityLevel >= .trustedEnvironment)
            #expect(await verify(requirements, challenge: challenge + Data([0])) == .challenge)
            #expect(await verify(requirements, key: DevicePublicKey(P256.Signing.PrivateKey().publicKey)) == .publicKey)
            var changed = requirements
            changed.packageNames = ["com.example.other"]
            #expect(await verify(changed) == .appIdentifier)
            changed = requirements
            changed.signingCertificateDigests = [Data(repeating: 7, count: 32)]
            #expect(await verify(changed) == .signingCertificate)
            changed = requirements
            changed.biometricOnEveryUse = true
            #expect(await verify(changed) == .userAuthentication)
            changed = requirements
            changed.requireUnlockedDevice = true
            #expect(await verify(changed) == .keyAuthorization)
            changed = requirements
            changed.minimumOSPatchLevel = 209_912
            #expect(await verify(changed) == .patchLevel)
            changed = requirements
            changed.minimumSecurityLevel = .strongBox
            #expect(await verify(changed) == (description.keyMintSecurityLevel == .strongBox ? nil : .securityLevel))
        }
    }

    /// Real keys that need a PIN or either factor (`_USERAUTH`, with an auth timeout) or no authentication
    /// are not biometric-only on every use; a device with an unlocked bootloader (Pixel 8a) is refused.
    @Test func realKeysThatAreNotBiometricOnlyOrOnAnUnlockedDeviceAreRefused() async throws {
        var checked = 0
        for item in try Self.cases() where item.shouldPass {
            guard case .androidChain(let ders, _) = item.evidence, let time = item.time else { continue }
            let (leaf, description) = try await AndroidKeyAttestationVerifier.decode(chain: ders, at: time)
            #expect(!description.hardwareEnforced.requiresBiometricOnEveryUse, "\(item.name)")
            checked += 1
            guard item.name.hasPrefix("akita/sdk34/TEE_EC"), let p256 = P256.Signing.PublicKey(leaf.publicKey) else { continue }
            let application = try #require(description.softwareEnforced.applicationID)
            var requirements = AndroidKeyRequirements(
                packageNames: Set(application.packages.map(\.name)), signingCertificateDigests: Set(application.signatureDigests))
            let verifier = AndroidKeyAttestationVerifier(requirements: requirements, revocation: .unchecked)
            let challenge = description.attestationChallenge
            #expect(
                await refusal {
                    _ = try await verifier.verify(chain: ders, challenge: challenge, publicKey: DevicePublicKey(p256), at: time)
                } == .userAuthentication)
            requirements.biometricOnEveryUse = false
            let lenient = AndroidKeyAttestationVerifier(requirements: requirements, revocation: .unchecked)
            #expect(
                await refusal {
                    _ = try await lenient.verify(chain: ders, challenge: challenge, publicKey: DevicePublicKey(p256), at: time)
                } == .verifiedBoot)
            checked += 1
        }
        #expect(checked == 13)  // 12 chains, one of them also through the verifier
    }

    /// The `invalid/` chains are refused at their chain already; their key descriptions are refused on their own too
    /// (tags out of order; a root of trust whose deviceLocked is not a DER BOOLEAN).
    @Test func theInvalidKeyDescriptionsAreRefusedByTheDecoder() throws {
        let folder = TestVectors.directory.appendingPathComponent("attestation/android-key/testdata/invalid")
        for name in ["tags_not_in_ascending_order.pem", "malformed_rot_device_locked.pem"] {
            let ders = AttestationFiles.pemBlocks(try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))
            let leaf = try Certificate(derEncoded: [UInt8](try #require(ders.first)))
            let value = try #require(leaf.extensions.first { $0.oid == KeyDescription.oid }?.value)
            #expect(
                throws: AttestationError(.malformed, "the key attestation extension does not follow the KeyDescription schema"), "\(name)"
            ) {
                try KeyDescription(derEncoded: value)
            }
        }
        // A valid chain's description decodes (so the refusal above is about the bytes, not the decoder).
        let valid = AttestationFiles.pemBlocks(
            try String(
                contentsOf: folder.deletingLastPathComponent().appendingPathComponent("tegu/sdk36/TEE_EC_2026_ROOT.pem"), encoding: .utf8))
        let leaf = try Certificate(derEncoded: [UInt8](try #require(valid.first)))
        #expect(throws: Never.self) {
            try KeyDescription(derEncoded: try #require(leaf.extensions.first { $0.oid == KeyDescription.oid }?.value))
        }
    }

    @Test func theEmbeddedRootsAreThePublishedOnes() throws {
        let folder = TestVectors.directory.appendingPathComponent("attestation/trust-anchors")
        func pem(_ name: String) throws -> Certificate {
            try Certificate(pemEncoded: try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))
        }
        #expect(try pem("Apple_App_Attestation_Root_CA.pem") == TrustAnchors.appleAppAttestationRoot)
        #expect(try pem("Apple_WebAuthn_Root_CA.pem") == TrustAnchors.appleWebAuthnRoot)
        #expect(try [pem("google-root-1-rsa4096.pem"), pem("google-root-2-ecp384.pem")] == TrustAnchors.googleHardwareAttestationRoots)
    }
}
