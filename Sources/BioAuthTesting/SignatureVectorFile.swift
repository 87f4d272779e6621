import BioAuthCore
import Foundation

/// A Wycheproof ECDSA P-256 verification file (`ecdsa_verify_schema_v1` and its P1363 twin):
/// groups of one public key and cases, each `valid`, `invalid` or `acceptable` (either outcome).
public struct SignatureVectorFile: Decodable, Sendable {
    public struct Group: Decodable, Sendable {
        public struct Key: Decodable, Sendable { public let uncompressed: String }
        public let publicKey: Key
        public let publicKeyDer: String
        public let tests: [Case]
    }
    public struct Case: Decodable, Sendable {
        public let tcId: Int
        public let comment: String
        public let msg: String
        public let sig: String
        public let result: String
    }

    public let numberOfTests: Int
    public let testGroups: [Group]

    /// The file at `relativePath` under ``TestVectors/directory``.
    public static func load(_ relativePath: String) throws -> Self {
        try JSONDecoder().decode(Self.self, from: TestVectors.load(relativePath))
    }

    /// Every case through `verify(key, signature, message)`: how many ran, and one line per case
    /// whose outcome differs from the file's verdict.
    public func run(verify: (DevicePublicKey, Data, Data) -> Bool) throws -> (ran: Int, disagreements: [String]) {
        var ran = 0
        var disagreements: [String] = []
        for group in testGroups {
            let key = try DevicePublicKey(x963Representation: Self.bytes(group.publicKey.uncompressed))
            for test in group.tests {
                let valid = verify(key, try Self.bytes(test.sig), try Self.bytes(test.msg))
                if (test.result == "valid" && !valid) || (test.result == "invalid" && valid) {
                    disagreements.append("tcId \(test.tcId) (\(test.result)) verified \(valid): \(test.comment)")
                }
                ran += 1
            }
        }
        return (ran, disagreements)
    }

    struct NotHex: Error {}

    static func bytes(_ hex: String) throws -> Data {
        guard let data = Data(hexString: hex) else { throw NotHex() }
        return data
    }
}
