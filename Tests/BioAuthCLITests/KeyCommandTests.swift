import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import Testing

struct KeyCommandTests {
    let key = P256.Signing.PrivateKey()

    @Test(arguments: ["x963", "spki", "pem", "jwk"])
    func convertsBetweenEveryPairOfFormats(from: String) async throws {
        let publicKey = DevicePublicKey(key.publicKey)
        let inputs = [
            "x963": publicKey.x963Representation.hexString, "spki": publicKey.spkiRepresentation.base64EncodedString(),
            "pem": publicKey.pemRepresentation, "jwk": publicKey.jwkRepresentation,
        ]
        let expected = [
            "x963": publicKey.x963Representation.hexString, "spki": publicKey.spkiRepresentation.hexString,
            "pem": publicKey.pemRepresentation.trimmingCharacters(in: .newlines), "jwk": publicKey.jwkRepresentation,
        ]
        for to in ["x963", "spki", "pem", "jwk"] {
            let result = await CommandRunner.run(
                ["key", "convert", "--to", to], input: inputs[from]!.split(separator: "\n").map(String.init))
            #expect(result.exitCode == 0)
            #expect(result.output.trimmingCharacters(in: .newlines) == expected[to], "\(from) → \(to)")
        }
    }

    @Test func rejectsANonP256KeyWithAHint() async {
        let result = await CommandRunner.run(["key", "convert", "--to", "pem"], input: [Data(repeating: 4, count: 65).hexString])
        #expect(result.exitCode == 1)
        #expect(result.output.contains("not a P-256 public key") && result.output.contains("→"))
    }

    @Test func verifiesDERAndRawSignatures() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let message = Data("hello".utf8)
        let signature = try key.signature(for: message)
        let files = [
            "key": Data(DevicePublicKey(key.publicKey).pemRepresentation.utf8), "message": message,
            "der": signature.derRepresentation, "raw": Data(signature.rawRepresentation.hexString.utf8), "other": Data("hellp".utf8),
        ]
        for (name, data) in files { try data.write(to: directory.appendingPathComponent(name)) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let valid = await CommandRunner.run([
            "key", "verify", "--key", path("key"), "--signature", path("der"), "--message", path("message"),
        ])
        #expect(valid.exitCode == 0 && valid.output.contains("valid signature"))
        let raw = await CommandRunner.run([
            "key", "verify", "--raw", "--key", path("key"), "--signature", path("raw"), "--message", path("message"),
        ])
        #expect(raw.exitCode == 0)
        let invalid = await CommandRunner.run([
            "key", "verify", "--key", path("key"), "--signature", path("der"), "--message", path("other"),
        ])
        #expect(invalid.exitCode == 1 && invalid.output.contains("INVALID"))
    }

    @Test func vectorsMatchTheProtocol() async throws {
        let result = await CommandRunner.run(["key", "vectors"])
        #expect(result.exitCode == 0)
        for vector in ProtocolVectors.all { #expect(result.output.contains(vector.message.encoded.hexString)) }
        let json = await CommandRunner.run(["key", "vectors", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let publicKey = try DevicePublicKey(spki: Data(hexString: object["publicKeySPKI"] as! String)!)
        for record in object["vectors"] as! [[String: String]] {
            #expect(publicKey.isValidSignature(der: Data(hexString: record["signature"]!)!, for: Data(hexString: record["message"]!)!))
        }
    }
}
