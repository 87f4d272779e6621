#if canImport(LocalAuthentication) && canImport(CryptoKit) && !os(tvOS) && !os(watchOS)
    import CryptoKit
    import Foundation
    import LocalAuthentication
    import Testing

    /// What BioAuth's dead-key detection relies on, checked on the device that runs it, each
    /// printing what it saw for `docs/DeviceChecklist.md` (rows 5 and 25). They need Face ID,
    /// Touch ID or Optic ID set up, so they run only on a device with `BIOAUTH_LIVE_SEAMS=1`.
    struct DeviceObservationTests {
        /// Enrolment records, and every login compares, the domain state read after
        /// `canEvaluatePolicy` on a fresh context: it must be there, and the same on another context.
        @Test(.enabled(if: LiveDevice.enabled, "needs biometry set up and BIOAUTH_LIVE_SEAMS=1"))
        func aFreshContextHasADomainStateAfterThePreflight() throws {
            let context = LAContext()
            let before = context.domainState.biometry.stateHash
            var error: NSError?
            let canEvaluate = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
            let after = context.domainState.biometry.stateHash
            print(
                "BIOAUTH-OBSERVATION row 25: fresh context stateHash before canEvaluatePolicy \(before == nil ? "nil" : "present"),"
                    + " after \(after == nil ? "nil" : "present"); canEvaluatePolicy \(canEvaluate)"
                    + (error.map { " (\($0.domain) \($0.code))" } ?? ""))
            try #require(canEvaluate, "biometry is not available or not set up on this device")
            #expect(after != nil)

            let another = LAContext()
            _ = another.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
            #expect(another.domainState.biometry.stateHash == after)
        }

        @Test(.enabled(if: LiveDevice.enabled, "needs a device with a Secure Enclave and BIOAUTH_LIVE_SEAMS=1"))
        func theSecureEnclaveIsAvailable() {
            print("BIOAUTH-OBSERVATION SecureEnclave.isAvailable \(SecureEnclave.isAvailable)")
            #expect(SecureEnclave.isAvailable)
        }
    }
#endif
