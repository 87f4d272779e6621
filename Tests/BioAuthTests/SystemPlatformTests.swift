#if canImport(LocalAuthentication) && canImport(Security) && canImport(CryptoKit)
import BioAuth
import BioAuthApple
import BioAuthTesting
import Foundation
import LocalAuthentication
import Security
import Testing

/// Apple-only: the mirrored constants equal the SDK's, and the live seams pass the same
/// conformance suite as the emulator. Not run by this repository's Linux CI.
struct SystemPlatformTests {
    @Test func mirroredConstantsEqualTheSDK() {
        #expect(LAErrorCode.biometryLockout.rawValue == LAError.Code.biometryLockout.rawValue)
        #expect(LAErrorCode.notInteractive.rawValue == LAError.Code.notInteractive.rawValue)
        #expect(SecStatus.errSecInteractionNotAllowed.rawValue == errSecInteractionNotAllowed)
        #expect(SecStatus.errSecAuthFailed.rawValue == errSecAuthFailed)
        #expect(AccessControlFlags.biometryCurrentSet.rawValue == SecAccessControlCreateFlags.biometryCurrentSet.rawValue)
        #expect(AccessControlFlags.privateKeyUsage.rawValue == SecAccessControlCreateFlags.privateKeyUsage.rawValue)
        #expect(KeychainAccessibility.whenPasscodeSetThisDeviceOnly.rawValue == kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String)
        #expect(BiometryKind.opticID.rawValue == LABiometryType.opticID.rawValue)
    }

    /// Needs a device with a passcode and a keychain entitlement; skipped elsewhere.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["BIOAUTH_LIVE_SEAMS"] == "1"))
    func liveSeamsPassTheConformanceSuite() async throws {
        try await SeamConformance(platform: .system).run()
    }
}
#endif
