import BioAuthCore
import BioAuthTesting
import Foundation
import Testing

/// Every Wycheproof P-256 vector, none skipped (C2SP/wycheproof `testvectors_v1`, Apache-2.0), from
/// `Tests/Vectors/wycheproof/`.
@Suite
struct WycheproofTests {
    struct ECDHFile: Decodable {
        let numberOfTests: Int
        let testGroups: [ECDHGroup]
    }
    struct ECDHGroup: Decodable {
        let curve: String
        let tests: [ECDHTest]
    }
    struct ECDHTest: Decodable {
        let tcId: Int
        let comment: String
        let `public`: String
        let result: String
        let flags: [String]
    }

    /// Runs one signature file; returns how many vectors ran.
    func run(_ name: String, verify: (DevicePublicKey, Data, Data) -> Bool) throws -> Int {
        let file = try SignatureVectorFile.load(name.contains("/") ? name : "wycheproof/" + name)
        // Each group's SPKI goes through the strict registration parser to the same key.
        for group in file.testGroups {
            #expect(
                try DevicePublicKey(spki: Data(hexString: group.publicKeyDer)!)
                    == DevicePublicKey(x963Representation: Data(hexString: group.publicKey.uncompressed)!))
        }
        let (ran, disagreements) = try file.run(verify: verify)
        #expect(disagreements.isEmpty, "\(disagreements)")
        #expect(ran == file.numberOfTests)
        return ran
    }

    @Test func everyDERSignatureVector() throws {
        let ran = try run("ecdsa_secp256r1_sha256_test.json") { key, signature, message in
            key.isValidSignature(der: signature, for: message)
        }
        #expect(ran == 484)
    }

    /// Signatures made inside real Secure Enclaves (App Attest assertions) and Android TEE/StrongBox
    /// keys, 5 of them high-S: the strict verifier accepts every one (a device's S is never normalised).
    @Test func everyHardwareSignature() throws {
        let ran = try run("hardware-ecdsa/hardware_ecdsa_secp256r1_sha256_test.json") { key, signature, message in
            key.isValidSignature(der: signature, for: message)
        }
        #expect(ran == 16)
    }

    @Test func everyP1363SignatureVector() throws {
        let ran = try run("ecdsa_secp256r1_sha256_p1363_test.json") { key, signature, message in
            key.isValidSignature(raw: signature, for: message)
        }
        #expect(ran == 262)
    }

    /// Every public key of the ECDH file through the registration parser: none marked invalid is
    /// accepted, nor any key not in the exact named-curve P-256 SPKI form.
    @Test func everyECDHPublicKeyThroughTheRegistrationParser() throws {
        let file = try JSONDecoder().decode(ECDHFile.self, from: TestVectors.load("wycheproof/ecdh_secp256r1_test.json"))
        var ran = 0, accepted = 0
        for group in file.testGroups {
            #expect(group.curve == "secp256r1")
            for test in group.tests {
                let bytes = try #require(Data(hexString: test.public))
                let parsed = try? DevicePublicKey(spki: bytes)
                let exactForm = bytes.count == 91 && bytes.prefix(26).elementsEqual(DevicePublicKey.spkiPrefix)
                if test.result == "invalid" { #expect(parsed == nil, "tcId \(test.tcId): \(test.comment)") }
                if !exactForm { #expect(parsed == nil, "tcId \(test.tcId) not exact P-256 SPKI: \(test.comment)") }
                if exactForm && test.result == "valid" { #expect(parsed != nil, "tcId \(test.tcId): \(test.comment)") }
                if parsed != nil { accepted += 1 }
                ran += 1
            }
        }
        #expect(ran == file.numberOfTests && ran == 612)
        #expect(accepted > 0)
    }
}
