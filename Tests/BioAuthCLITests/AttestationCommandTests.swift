import BioAuthCLI
import BioAuthTesting
import Crypto
import Foundation
import Testing

@Suite
struct AttestationCommandTests {
    var folder: URL { get throws { TestVectors.directory.appendingPathComponent("attestation") } }

    @Test func checksEveryVectorAndPrintsWhatEachProves() async throws {
        let result = await CommandRunner.run(["attestation", "check", try folder.path])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(result.output.contains(" 0 not as expected"))
        #expect(result.output.contains("environment: development") && result.output.contains("verified boot: VERIFIED, locked true"))
        #expect(result.output.contains("tags_not_in_ascending_order.pem (must be refused): refused ("))
        #expect(!result.output.contains("FAIL"))
    }

    /// `status update` copies a checked list into the file a server reads; `status show` tells its
    /// age, its counts and whether serials are listed (exit 1 when one is).
    @Test func statusUpdateKeepsTheListFileAndShowLooksUpSerials() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-status-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("mirror.json").path, file = directory.appendingPathComponent("status.json").path
        try Data(
            #"{"entries": {"2C8CDDDFD5E03BFC": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}, "0c8966fcb2fbb0d7a": {"status": "SUSPENDED"}}}"#
                .utf8
        )
        .write(to: URL(fileURLWithPath: source))
        let update = await CommandRunner.run(["attestation", "status", "update", "--source", source, "--file", file])
        #expect(update.exitCode == 0 && update.output.contains("2 listed certificates"), "\(update.output)")

        let listed = await CommandRunner.run([
            "attestation", "status", "show", "--file", file, "--serial", "2c:8c:dd:df:d5:e0:3b:fc", "--serial", "00abcdef",
        ])
        #expect(listed.exitCode == 1, "\(listed.output)")
        #expect(listed.output.contains("REVOKED: 1") && listed.output.contains("SUSPENDED: 1"))
        #expect(listed.output.contains("2c8cdddfd5e03bfc: REVOKED (KEY_COMPROMISE)") && listed.output.contains("abcdef: not listed"))
        let unlisted = await CommandRunner.run(["attestation", "status", "show", "--file", file, "--serial", "abcdef"])
        #expect(unlisted.exitCode == 0 && unlisted.output.contains("(0 hours ago), 2 listed"), "\(unlisted.output)")

        // A source that is no list leaves the file as it was.
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        try Data("<html>".utf8).write(to: URL(fileURLWithPath: source))
        let refused = await CommandRunner.run(["attestation", "status", "update", "--source", source, "--file", file])
        #expect(refused.exitCode != 0 && refused.output.contains("left as it was"), "\(refused.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        let insecure = await CommandRunner.run([
            "attestation", "status", "update", "--source", "http://mirror.example.com/status", "--file", file,
        ])
        #expect(insecure.exitCode != 0 && insecure.output.contains("https"))
    }

    @Test func exitsOneWhenAPositiveCaseFails() async throws {
        // In 2100 every chain has expired.
        let result = await CommandRunner.run([
            "attestation", "check", try folder.appendingPathComponent("apple-app-attest").path, "--at", "2100-01-01T00:00:00Z",
        ])
        #expect(result.exitCode == 1)
        #expect(result.output.contains("FAIL") && result.output.contains("refused (certificateChain)"))
    }

    /// The user-facing use: one attestation given on the command line, as a server receives it.
    @Test func verifiesOneAttestationGivenOnTheCommandLine() async throws {
        let json =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: try folder.appendingPathComponent("apple-app-attest/node-app-attest-attestation-development.json")))
            as? [String: String]
        let challengeText = try #require(json?["challenge"])
        let challenge = try #require(Data(base64Encoded: challengeText))
        let object = try #require(json?["attestation"])
        let keyID = try #require(json?["keyId"])
        let arguments = [
            "attestation", "verify", "--attestation", object, "--key-id", keyID,
            "--client-data-hash", Data(SHA256.hash(data: challenge)).base64EncodedString(), "--app-id",
            "V8H6LQ9448.io.uebelacker.AppAttestExample",
            "--at", "2024-02-04T00:00:00Z",
        ]
        let development = await CommandRunner.run(arguments + ["--development"])
        #expect(development.exitCode == 0, "\(development.output)")
        #expect(development.output.contains("app: V8H6LQ9448.io.uebelacker.AppAttestExample"))
        let productionOnly = await CommandRunner.run(arguments)
        #expect(productionOnly.exitCode == 1)
        #expect(productionOnly.output.contains("refused (environment)"))
        let otherApp = await CommandRunner.run(
            arguments.dropLast(4) + ["--app-id", "ABCDE12345.com.example", "--at", "2024-02-04T00:00:00Z", "--development"])
        #expect(otherApp.exitCode == 1 && otherApp.output.contains("refused (appIdentifier)"))
    }
}
