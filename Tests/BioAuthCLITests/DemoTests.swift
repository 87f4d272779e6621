import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import Testing

struct DemoTests {
    @Test func demoTellsTheWholeStoryAndExitsZero() async {
        let result = await CommandRunner.run(["demo"])
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(result.output.contains("All 20 steps behaved as expected."))
        for title in [
            "Primary login", "Device-key enrolment", "Biometric login", "Step-up approval", "A passkey on the laptop",
            "Approve on my phone", "Stolen DPoP-bound token", "Wrong number", "Hooked evaluatePolicy",
            "Tampered challenge", "knows the device passcode", "Replayed signature", "Stolen public key", "Re-signed app",
            "Expired challenge", "Brute-force burst",
        ] {
            #expect(result.output.contains(title), "missing step: \(title)")
        }
        #expect(!result.output.contains("✘"))
    }

    @Test func demoJSONIsOneRecordPerStep() async throws {
        let result = await CommandRunner.run(["demo", "--json"])
        #expect(result.exitCode == 0)
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == 21)
        for line in lines.dropLast() {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(record["ok"] as? Bool == true && record["title"] is String && record["step"] is Int)
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as? [String: Any])
        #expect(summary["passed"] as? Bool == true && summary["steps"] as? Int == 20)
    }

    @Test func repliesDescribeThemselvesWithoutTheirBody() {
        let reply = ServerClient.Reply(status: 200, text: #"{"token":"c2VjcmV0LXRva2VuLXZhbHVl"}"#, retryAfter: nil)
        #expect("\(reply)" == "Reply(HTTP 200, \(reply.text.utf8.count) bytes)")
        #expect(!"\(reply)".contains("c2VjcmV0"))
    }

    @Test func helpListsTheCommands() async {
        let result = await CommandRunner.run(["--help"])
        #expect(result.output.contains("USAGE: bioauth <subcommand>"))
        for command in ["demo", "device", "key", "attestation"] { #expect(result.output.contains(command)) }
        let device = await CommandRunner.run(["device", "--help"])
        for command in ["create", "register", "login", "step-up", "enroll", "remove-passcode", "lock-out", "status"] {
            #expect(device.output.contains(command), "device --help lacks \(command)")
        }
    }
}
