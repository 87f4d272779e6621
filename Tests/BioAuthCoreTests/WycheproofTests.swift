import BioAuthCore
import BioAuthTesting
import Foundation
import Testing

/// Every Wycheproof P-256 vector, none skipped (C2SP/wycheproof `testvectors_v1`, Apache-2.0), from
/// `Tests/Vectors/wycheproof/`.
@Suite
struct WycheproofTests {
    struct File<Group: Decodable>: Decodable {
        let numberOfTests: Int
        let testGroups: [Group]
    }
    struct SignatureGroup: Decodable {
        struct Key: Decodable { let uncompressed: String }
        let publicKey: Key
        let publicKeyDer: String
        let tests: [SignatureTest]
    }
    struct SignatureTest: Decodable {
        let tcId: Int
        let comment: String
        let msg: String
        let sig: String
        let result: String
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

    func load<Group: Decodable>(_ name: String, as: Group.Type) throws -> File<Group> {
        try JSONDecoder().decode(File<Group>.self, from: TestVectors.load(name.contains("/") ? name : "wycheproof/" + name))
    }

    /// Runs one signature file; returns how many vectors ran.
    func run(_ name: String, verify: (DevicePublicKey, Data, Data) -> Bool) throws -> Int {
        let file = try load(name, as: SignatureGroup.self)
        var ran = 0
        for group in file.testGroups {
            let key = try DevicePublicKey(x963Representation: Data(hexString: group.publicKey.uncompressed)!)
            // The group's SPKI goes through the strict registration parser to the same key.
            #expect(try DevicePublicKey(spki: Data(hexString: group.publicKeyDer)!) == key)
            for test in group.tests {
                let valid = verify(key, Data(hexString: test.sig)!, Data(hexString: test.msg)!)
                switch test.result {
                case "valid": #expect(valid, "tcId \(test.tcId): \(test.comment)")
                case "invalid": #expect(!valid, "tcId \(test.tcId): \(test.comment)")
                default: break  // acceptable: either outcome
                }
                ran += 1
            }
        }
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
        let file = try load("ecdh_secp256r1_test.json", as: ECDHGroup.self)
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
