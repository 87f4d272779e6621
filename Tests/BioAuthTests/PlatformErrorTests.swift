import BioAuth
import BioAuthCore
import BioAuthEmulator
import Foundation
import Testing

/// Errors a real device reports that the emulator did not play before (issue 24 item 3): a Secure
/// Enclave key operation refused in the CryptoTokenKit domain (`TKError.h`), and macOS's Touch ID
/// keyboard that is not paired or not connected (`LAError.h` -12, -13). Each becomes the typed
/// error it means, never a generic keychain failure.
struct PlatformErrorTests {
    /// `TKError` codes of a token key's operation, classified as `EnclaveFailure` does for the
    /// live layer: the three authentication outcomes keep their meaning, the rest map as
    /// `SecItem.m`'s `osstatus_for_ctk_error` does.
    @Test func cryptoTokenKitErrorsBecomeTheTypedErrorsTheyMean() {
        let cases: [(Int, BioAuthError.Code)] = [
            // canceledByUser, authenticationFailed, authenticationNeeded
            (-4, .userCancelled), (-5, .authenticationFailed), (-9, .interactionNotAllowed),
            (-8, .invalidParameters), (-6, .keyUnavailable), (-7, .keyUnavailable),  // badParameter, objectNotFound, tokenNotFound
            (-2, .keychainFailure), (-1, .keychainFailure),  // communicationError, notImplemented
        ]
        for (code, expected) in cases {
            let error = BioAuthError(enclave: EnclaveFailure(domain: "CryptoTokenKit", code: code))
            #expect(error.code == expected, "TKError \(code) → \(error.code)")
        }
    }

    /// A cancelled Secure Enclave signature is the user's cancel whether the enclave reports the
    /// LAError (default) or a `TKError` (``EmulatedDevice/KeyOperationErrors``).
    @Test(arguments: EmulatedDevice.KeyOperationErrors.allCases)
    func aCancelledSignatureIsTheUsersCancelInEitherDomain(_ domain: EmulatedDevice.KeyOperationErrors) async throws {
        let device = EmulatedDevice.faceID { $0.keyOperationErrors = domain }
        let signer = BiometricSigner(platform: device.platform, tag: "login", policy: .devicePasscode)
        _ = try signer.createKey()
        device.script(.cancel)
        #expect(await bioAuthError { _ = try await signer.sign(Data("m".utf8), prompt: Prompt(reason: "Sign")) }?.code == .userCancelled)
        device.script(.passcode("123456"))
        _ = try await signer.sign(Data("m".utf8), prompt: Prompt(reason: "Sign"))
        // A device-passcode key prompts inside the key operation, so the enclave reports the cancel.
        #expect(device.prompts.last?.source == .secureEnclave)
    }

    /// A hooked `evaluatePolicy` says yes and the enclave refuses the stranger: in either domain
    /// that stays an authentication failure — the key is not declared dead, nothing is signed.
    @Test(arguments: EmulatedDevice.KeyOperationErrors.allCases)
    func aHookedEvaluationIsNotMistakenForADeadKeyInEitherDomain(_ domain: EmulatedDevice.KeyOperationErrors) async throws {
        let device = EmulatedDevice.faceID { $0.keyOperationErrors = domain }
        let signer = BiometricSigner(platform: device.platform, tag: "login")
        _ = try signer.createKey()
        device.jailbreakHookEnabled = true
        device.unscriptedAction = .noMatch
        let refusal = await bioAuthError { _ = try await signer.sign(Data("m".utf8), prompt: Prompt(reason: "Sign")) }
        #expect(refusal?.code == .authenticationFailed, "\(String(describing: refusal))")
        #expect(signer.hasKey)
    }

    /// macOS with a Magic Keyboard with Touch ID that is not paired, or paired and not connected:
    /// the status says so (not "no biometry", not "turned off for this app"), a biometric prompt
    /// is refused as biometry not available, and the passcode policy still works.
    @Test(arguments: [EmulatedDevice.BiometricAccessory.notPaired, .disconnected])
    func aTouchIDKeyboardThatIsNotConnectedIsReportedAsSuch(_ accessory: EmulatedDevice.BiometricAccessory) async throws {
        let device = EmulatedDevice(configuration: .init(biometry: .touchID, biometricAccessory: accessory))
        #expect(BiometricStatus(platform: device.platform) == .accessoryNotConnected(.touchID))
        #expect("\(BiometricStatus(platform: device.platform))".contains("not paired or not connected"))
        let context = device.platform.contexts.makeContext()
        var refusal: LAErrorCode?
        do { try context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics) } catch { refusal = error }
        #expect(refusal == (accessory == .notPaired ? .biometryNotPaired : .biometryDisconnected))
        #expect(BioAuthError(laError: refusal ?? .authenticationFailed).code == .biometryNotAvailable)
        let signer = BiometricSigner(platform: device.platform, tag: "login")
        _ = try signer.createKey()
        #expect(
            await bioAuthError { _ = try await signer.sign(Data("m".utf8), prompt: Prompt(reason: "Sign")) }?.code == .biometryNotAvailable)
        #expect(throws: Never.self) { try context.canEvaluatePolicy(.deviceOwnerAuthentication) }
    }
}
