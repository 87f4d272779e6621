import BioAuthCore
import BioAuthTesting
import Foundation
import Testing

/// The signature vectors through this platform's P-256: CryptoKit on an iPhone or a Mac, which the
/// Linux CI never runs, and BoringSSL on Linux. They are read from the test bundle
/// (`Bundle.module`, a copy of `Tests/BioAuthDeviceTests/Vectors`, which `Tests/Vectors` links to),
/// so they run on a device as they do here.
struct VectorTests {
    static let vectors = Bundle.module.url(forResource: "Vectors", withExtension: nil)

    func file(_ relativePath: String) throws -> SignatureVectorFile {
        let folder = try #require(Self.vectors)
        return try JSONDecoder().decode(SignatureVectorFile.self, from: Data(contentsOf: folder.appendingPathComponent(relativePath)))
    }

    @Test(.enabled(if: vectors != nil, "the test bundle has no Vectors folder (Tests/BioAuthDeviceTests/Vectors, a copied resource)"))
    func everyDERSignatureVector() throws {
        let (ran, disagreements) = try file("wycheproof/ecdsa_secp256r1_sha256_test.json").run { key, signature, message in
            key.isValidSignature(der: signature, for: message)
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
        #expect(ran == 484)
    }

    @Test(.enabled(if: vectors != nil, "the test bundle has no Vectors folder"))
    func everyP1363SignatureVector() throws {
        let (ran, disagreements) = try file("wycheproof/ecdsa_secp256r1_sha256_p1363_test.json").run { key, signature, message in
            key.isValidSignature(raw: signature, for: message)
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
        #expect(ran == 262)
    }

    /// Real Secure Enclave and Android TEE signatures, 5 with high S: every one verifies.
    @Test(.enabled(if: vectors != nil, "the test bundle has no Vectors folder"))
    func everyHardwareSignature() throws {
        let (ran, disagreements) = try file("hardware-ecdsa/hardware_ecdsa_secp256r1_sha256_test.json").run { key, signature, message in
            key.isValidSignature(der: signature, for: message)
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
        #expect(ran == 16)
    }
}
