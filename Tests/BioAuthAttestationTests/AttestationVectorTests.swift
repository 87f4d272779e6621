import BioAuthAttestation
import BioAuthTesting
import Foundation
import Testing

@Suite
struct AttestationVectorTests {
    @Test func everyVectorHasItsVerdict() async throws {
        let folder = TestVectors.directory.appendingPathComponent("attestation")
        let cases = try AttestationFiles.cases(at: folder)
        for item in cases {
            let verdict = await AttestationChecker.check(item, appIDs: AttestationFiles.appIDs(in: cases))
            print(item.name, item.shouldPass, verdict.passed, verdict.error.map(String.init(describing:)) ?? "", verdict.facts)
            #expect(verdict.passed == item.shouldPass, "\(item.name): \(verdict.error.map(String.init(describing:)) ?? "passed")")
        }
    }
}
