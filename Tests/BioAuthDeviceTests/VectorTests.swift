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

    /// A signature file, its encoding and how many cases it holds.
    enum SignatureSet: String, CaseIterable, Sendable {
        case wycheproofDER = "wycheproof/ecdsa_secp256r1_sha256_test.json"
        case wycheproofP1363 = "wycheproof/ecdsa_secp256r1_sha256_p1363_test.json"
        /// Real Secure Enclave and Android TEE signatures, 5 with high S: every one verifies.
        case hardware = "hardware-ecdsa/hardware_ecdsa_secp256r1_sha256_test.json"

        var count: Int {
            switch self {
            case .wycheproofDER: 484
            case .wycheproofP1363: 262
            case .hardware: 16
            }
        }

        func verify(_ key: DevicePublicKey, _ signature: Data, _ message: Data) -> Bool {
            self == .wycheproofP1363
                ? key.isValidSignature(raw: signature, for: message) : key.isValidSignature(der: signature, for: message)
        }
    }

    /// The bundle always holds the vectors: a missing folder is a failure, never a skip.
    @Test(arguments: SignatureSet.allCases)
    func everySignatureVector(_ set: SignatureSet) throws {
        let folder = try #require(
            Self.vectors, "the test bundle has no Vectors folder (Tests/BioAuthDeviceTests/Vectors, a copied resource)")
        let file = try JSONDecoder().decode(SignatureVectorFile.self, from: Data(contentsOf: folder.appendingPathComponent(set.rawValue)))
        let (ran, disagreements) = try file.run(verify: set.verify)
        #expect(disagreements.isEmpty, "\(disagreements)")
        #expect(ran == set.count)
    }
}
