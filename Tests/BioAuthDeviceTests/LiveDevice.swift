import Foundation

/// Whether the tests that touch the real keychain, Secure Enclave and biometry run:
/// `BIOAUTH_LIVE_SEAMS=1` (the `BioAuthDeviceTests` scheme sets it) on a device — never in the
/// Simulator, which has no Secure Enclave access control, nor on Linux.
enum LiveDevice {
    static var enabled: Bool {
        #if targetEnvironment(simulator)
            false
        #else
            ProcessInfo.processInfo.environment["BIOAUTH_LIVE_SEAMS"] == "1"
        #endif
    }
}
