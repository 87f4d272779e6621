import BioAuthEmulator
import BioAuthTesting
import Testing

struct SeamConformanceTests {
    /// The shipped conformance suite passes on the emulator (and on a device with BioAuthApple).
    @Test func emulatorPassesTheSeamConformanceSuite() async throws {
        let device = EmulatedDevice()
        device.unscriptedAction = .cancel  // the suite must never need a person
        try await SeamConformance(platform: device.platform).run()
        #expect(device.promptCount == 0)
    }
}
