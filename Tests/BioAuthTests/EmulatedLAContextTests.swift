import BioAuth
import BioAuthCore
import BioAuthEmulator
import BioAuthTesting
import Foundation
import Testing

/// LAContext behaviour (LAContext.h, LAError.h, LAPublicDefines.h), one test per documented fact.
struct EmulatedLAContextTests {
    /// "set no matter what the [canEvaluatePolicy] call returns" ([doc] lacontext/biometrytype).
    @Test func biometryTypeIsNoneUntilCanEvaluatePolicyThenSetWhateverItReturns() {
        let device = EmulatedDevice(configuration: .init(biometry: .faceID), passcode: "123456", enrolled: false)
        let context = device.makeContext()
        #expect(context.biometryType == .none)
        #expect(preflight(context) == .biometryNotEnrolled)
        #expect(context.biometryType == .faceID)
    }

    /// Face ID denied for the app: -6 while the type is known (react-native-biometrics README, issue #285).
    @Test func faceIDDeniedForAppGivesBiometryNotAvailableWithTypeKnown() {
        let device = EmulatedDevice.faceID()
        device.biometryDeniedForApp = true
        let context = device.makeContext()
        #expect(preflight(context) == .biometryNotAvailable)
        #expect(context.biometryType == .faceID)
        #expect(BiometricStatus(contexts: device.platform.contexts) == .deniedForApp(.faceID))
    }

    @Test func noHardwareIsUnavailable() {
        let device = EmulatedDevice(configuration: .init(biometry: .none))
        #expect(preflight(device.makeContext()) == .biometryNotAvailable)
        #expect(BiometricStatus(contexts: device.platform.contexts) == .unavailable)
    }

    /// Raw values from `LAPublicDefines.h` / `LABiometryType.h`.
    /// Each mirrored Apple constant is compared with the SDK by `mirroredConstantsEqualTheSDK`
    /// (`SystemPlatformTests` in `BioAuthDeviceTests`, on a Mac or an iPhone), so a wrong bit fails there. This
    /// checks that the comparison leaves none out; private codes the SDK does not export are named.
    @Test func everyMirroredConstantIsComparedWithTheSDK() throws {
        let constants = try PackagePaths.text("Sources/BioAuth/AppleConstants.swift")
        let sdkTest = try PackagePaths.text("Tests/BioAuthDeviceTests/SystemPlatformTests.swift")
        let privateCodes: Set<String> = ["parameter", "aclOperationNotAllowed", "errSecInternal", "domain", "constraintFlags"]
        var names = constants.matches(of: #/static let ([A-Za-z]+) = /#).map { String($0.1) }
        names += KeychainAccessibility.allCases.map { "\($0)" } + ["none", "touchID", "faceID", "opticID"]
        var compared = 0
        for name in names where !privateCodes.contains(name) {
            compared += 1
            #expect(
                sdkTest.contains("(.\(name),") || sdkTest.contains("(CryptoTokenKitError.\(name),"), "\(name) is not compared with the SDK")
        }
        #expect(compared > 40)
    }

    /// `SecErrorGetOSStatus` (`OSX/sec/Security/SecItem.m` l.203–283).
    @Test(arguments: [
        (LAErrorCode.userCancel, SecStatus.errSecUserCanceled), (.notInteractive, .errSecInteractionNotAllowed),
        (.authenticationFailed, .errSecAuthFailed), (.biometryLockout, .errSecAuthFailed), (.systemCancel, .errSecAuthFailed),
        (.userFallback, .errSecAuthFailed), (.appCancel, .errSecAuthFailed), (.passcodeNotSet, .errSecAuthFailed),
        (.biometryNotEnrolled, .errSecAuthFailed), (.invalidContext, .errSecAuthFailed), (.parameter, .errSecParam),
    ])
    func laErrorMapsToKeychainStatus(laError: LAErrorCode, expected: SecStatus) {
        #expect(SecStatus(laError: laError) == expected)
    }

    /// `osstatus_for_ctk_error` and `SecErrorGetOSStatus` (`OSX/sec/Security/SecItem.m`): a SecKey
    /// error is classified by its domain, never its raw code read as an OSStatus; `TKError.h`'s
    /// authentication outcomes of a token key stay authentication outcomes.
    @Test func secKeyErrorsAreMappedByDomain() {
        let ctk: [(Int, SecStatus)] = [
            (CryptoTokenKitError.badParameter, .errSecParam), (CryptoTokenKitError.notImplemented, .errSecUnimplemented),
            (CryptoTokenKitError.canceledByUser, .errSecUserCanceled), (CryptoTokenKitError.corruptedData, .errSecDecode),
            (CryptoTokenKitError.tokenNotFound, .errSecItemNotFound), (CryptoTokenKitError.objectNotFound, .errSecItemNotFound),
            (CryptoTokenKitError.authenticationFailed, .errSecInternal), (CryptoTokenKitError.communicationError, .errSecInternal),
        ]
        for (code, status) in ctk { #expect(SecStatus(cryptoTokenKitError: code) == status, "TKError \(code)") }
        // A token key's operation keeps the authentication outcomes TKError.h names; the rest map as SecItem.m does.
        let authentication: [(Int, LAErrorCode)] = [
            (CryptoTokenKitError.canceledByUser, .userCancel), (CryptoTokenKitError.authenticationFailed, .authenticationFailed),
            (CryptoTokenKitError.authenticationNeeded, .notInteractive),
        ]
        for (code, laError) in authentication {
            #expect(EnclaveFailure(domain: CryptoTokenKitError.domain, code: code) == .authentication(laError), "TKError \(code)")
        }
        for (code, status) in ctk where !authentication.contains(where: { $0.0 == code }) {
            #expect(EnclaveFailure(domain: CryptoTokenKitError.domain, code: code) == .status(status), "TKError \(code)")
        }
        #expect(EnclaveFailure(domain: "com.apple.LocalAuthentication", code: -2) == .authentication(.userCancel))
        #expect(EnclaveFailure(domain: "NSOSStatusErrorDomain", code: -25300) == .status(.errSecItemNotFound))
        #expect(EnclaveFailure(domain: "NSOSStatusErrorDomain", code: Int(Int32.max) + 1) == .status(.errSecInternal))
        #expect(EnclaveFailure(domain: "NSCocoaErrorDomain", code: -25300) == .status(.errSecInternal))
        // A key the token no longer has reads as a key that is gone.
        #expect(
            BioAuthError(enclave: EnclaveFailure(domain: CryptoTokenKitError.domain, code: CryptoTokenKitError.objectNotFound)).code
                == .keyUnavailable)
    }

    /// A context that succeeded once authenticates again silently (SecItem.h; Auth0.swift PR #1028).
    @Test func succeededContextAuthenticatesAgainSilently() async {
        let device = EmulatedDevice.faceID()
        let context = device.makeContext()
        #expect(await evaluate(context) == nil)
        device.script(.cancel)
        #expect(await evaluate(context) == nil)
        #expect(device.promptCount == 1)
        #expect(device.pendingActions == [.cancel])
        // A fresh context prompts again.
        #expect(await evaluate(device.makeContext()) == .userCancel)
        #expect(device.promptCount == 2)
    }

    /// `invalidate()` ends an evaluation in flight with appCancel and later use with invalidContext (LAContext.h).
    @Test func invalidateGivesAppCancelThenInvalidContext() async {
        let device = EmulatedDevice.faceID()
        let context = device.makeContext()
        device.script(.hold)
        async let result = evaluate(context)
        while device.pendingActions.count > 0 || device.promptCount == 0 { await Task.yield() }
        context.invalidate()
        #expect(await result == .appCancel)
        #expect(await evaluate(context) == .invalidContext)
        #expect(preflight(context) == .invalidContext)
        context.invalidate()  // idempotent
    }

    /// A cancelled task invalidates its context, so the prompt goes away with the view that asked
    /// (as `SystemLAContext` does with `withTaskCancellationHandler`): appCancel, then invalidContext.
    @Test func cancellingTheTaskEndsThePromptWithAppCancel() async {
        let device = EmulatedDevice.faceID()
        let context = device.makeContext()
        device.script(.hold)
        let task = Task { await evaluate(context) }
        while device.pendingActions.count > 0 || device.promptCount == 0 { await Task.yield() }
        task.cancel()
        #expect(await task.value == .appCancel)
        #expect(await evaluate(context) == .invalidContext)
    }

    /// `localizedFallbackTitle = ""` hides the button; tapping fallback with the biometrics-only
    /// policy gives userFallback (-3); the button appears after the first failed match (LAContext.h).
    @Test func emptyFallbackTitleHidesTheButton() async {
        let device = EmulatedDevice.faceID()
        let hidden = device.makeContext()
        hidden.localizedFallbackTitle = ""
        device.script(.noMatch, .fallback)
        #expect(await evaluate(hidden) == .userCancel)  // no button to tap: only Cancel remained
        #expect(device.prompts.last?.fallbackTitle == nil)

        let shown = device.makeContext()
        shown.localizedFallbackTitle = "Use App Passcode"
        device.script(.noMatch, .noMatch, .fallback)  // Face ID: "Try Face ID Again" first
        #expect(await evaluate(shown) == .userFallback)
        #expect(device.prompts.last?.fallbackTitle == "Use App Passcode")
        #expect(device.prompts.last?.cancelTitle == "Cancel")
    }

    @Test func fallbackWithDeviceOwnerAuthenticationOpensThePasscodeScreen() async {
        let device = EmulatedDevice.faceID()
        device.script(.noMatch, .noMatch, .fallback, .passcode("123456"))
        #expect(await evaluate(device.makeContext(), .deviceOwnerAuthentication) == nil)
        #expect(device.promptCount == 1)
    }

    /// "Biometric authentication will get locked after 5 unsuccessful attempts. After that, users
    /// have to unlock it by entering passcode." (iOS 9 LAContext.h; [doc] isLockedOut)
    @Test func fiveConsecutiveFailedMatchesLockBiometryOutUntilThePasscode() async {
        let device = EmulatedDevice.faceID()
        device.script(.noMatch, .noMatch, .noMatch)
        #expect(await evaluate(device.makeContext()) == .authenticationFailed)  // per-prompt limit
        device.script(.noMatch, .noMatch)
        #expect(await evaluate(device.makeContext()) == .biometryLockout)
        #expect(device.isLockedOut)
        #expect(preflight(device.makeContext()) == .biometryLockout)
        #expect(await evaluate(device.makeContext()) == .biometryLockout)
        #expect(BiometricStatus(contexts: device.platform.contexts) == .lockedOut(.faceID))
        // deviceOwnerAuthentication goes straight to the passcode, which clears the lockout.
        device.script(.passcode("000000"), .passcode("123456"))
        #expect(await evaluate(device.makeContext(), .deviceOwnerAuthentication) == nil)
        #expect(!device.isLockedOut)
        #expect(await evaluate(device.makeContext()) == nil)
    }

    @Test func successResetsTheConsecutiveFailureCount() async {
        let device = EmulatedDevice.faceID()
        for _ in 0..<3 {
            device.script(.noMatch, .noMatch, .match)
            #expect(await evaluate(device.makeContext()) == nil)
        }
        #expect(!device.isLockedOut)
    }

    /// Reuse duration: at most 300 s, only a device-unlock match counts, injected clock (LAContext.h).
    @Test func reuseDurationIsCappedAt300SecondsAndCountsOnlyDeviceUnlock() async {
        let clock = ManualClock()
        let device = EmulatedDevice.faceID(clock: clock)
        device.unscriptedAction = .cancel

        // An in-app match does not open a window.
        device.script(.match)
        #expect(await evaluate(device.makeContext()) == nil)
        let afterInApp = device.makeContext()
        afterInApp.touchIDAuthenticationAllowableReuseDuration = 60
        #expect(await evaluate(afterInApp) == .userCancel)

        device.unlockDeviceWithBiometry()
        clock.advance(by: 200)
        let within = device.makeContext()
        within.touchIDAuthenticationAllowableReuseDuration = 600
        let prompts = device.promptCount
        #expect(await evaluate(within) == nil)
        #expect(device.promptCount == prompts)  // no prompt

        clock.advance(by: 200)  // 400 s after unlock: beyond the 300 s maximum even though 600 was asked
        let beyond = device.makeContext()
        beyond.touchIDAuthenticationAllowableReuseDuration = 600
        #expect(await evaluate(beyond) == .userCancel)

        let zero = device.makeContext()  // default 0: no reuse
        device.unlockDeviceWithBiometry()
        #expect(await evaluate(zero) == .userCancel)
    }

    /// Domain state: nil on a fresh context and after a passcode-only success; set after a
    /// biometric success; changes with enrollment; stable otherwise (LAContext.h; [doc]).
    @Test func domainStateFollowsEnrollment() async {
        let device = EmulatedDevice.faceID { $0.domainStateAPI = .evaluatedPolicyDomainState }
        let fresh = device.makeContext()
        #expect(fresh.evaluatedPolicyDomainState == nil)

        device.script(.passcode("123456"))
        let passcodeOnly = device.makeContext()
        #expect(await evaluate(passcodeOnly, .deviceOwnerAuthentication) == nil)
        #expect(passcodeOnly.evaluatedPolicyDomainState == nil)

        let first = device.makeContext()
        #expect(await evaluate(first) == nil)
        let baseline = try! #require(first.evaluatedPolicyDomainState)
        #expect(baseline.count == 32)

        let again = device.makeContext()
        #expect(await evaluate(again) == nil)
        #expect(again.evaluatedPolicyDomainState == baseline)

        let added = device.enrollBiometry()
        let afterAdd = device.makeContext()
        #expect(await evaluate(afterAdd) == nil)
        #expect(afterAdd.evaluatedPolicyDomainState != baseline)

        device.removeBiometry(added)
        device.resetBiometry()
        device.enrollBiometry()
        let afterReset = device.makeContext()
        #expect(await evaluate(afterReset) == nil)
        #expect(afterReset.evaluatedPolicyDomainState != baseline)
        #expect(afterReset.evaluatedPolicyDomainState != afterAdd.evaluatedPolicyDomainState)
    }

    /// With the hook on, `evaluatePolicy` reports success without a match (objection
    /// `ios ui biometrics_bypass`, MASTG-TECH-0135); the platform still sees no authentication.
    @Test func jailbreakHookReportsSuccessWithoutAMatch() async {
        let device = EmulatedDevice.faceID { $0.domainStateAPI = .evaluatedPolicyDomainState }
        device.jailbreakHookEnabled = true
        device.unscriptedAction = .noMatch
        let context = device.makeContext()
        #expect(await evaluate(context) == nil)
        #expect(device.promptCount == 0)
        #expect(!context.isAuthenticated)
        #expect(context.evaluatedPolicyDomainState == nil)
    }

    @Test func interactionNotAllowedGivesNotInteractive() async {
        let device = EmulatedDevice.faceID()
        let context = device.makeContext()
        context.interactionNotAllowed = true
        #expect(await evaluate(context) == .notInteractive)
        #expect(device.promptCount == 0)
    }

    @Test func noPasscodeMeansBiometryCannotBeUsed() {
        let device = EmulatedDevice.faceID()
        device.removePasscode()
        #expect(preflight(device.makeContext()) == .passcodeNotSet)
        #expect(preflight(device.makeContext(), .deviceOwnerAuthentication) == .passcodeNotSet)
        #expect(BiometricStatus(contexts: device.platform.contexts) == .noPasscode(.faceID))
    }

    @Test func systemCancelAndCancel() async {
        let device = EmulatedDevice.faceID()
        device.script(.systemCancel)
        #expect(await evaluate(device.makeContext()) == .systemCancel)
        device.script(.cancel)
        #expect(await evaluate(device.makeContext()) == .userCancel)
    }
}

/// iOS 18's `LAContext.domainState`: the state is there before any evaluation, and BioAuth's
/// enrollment detection and the seam contract hold with either API.
struct DomainStateAPITests {
    @Test func iOS18DomainStateIsSetOnAFreshContextAndFollowsEnrollment() async {
        let device = EmulatedDevice.faceID { $0.domainStateAPI = .domainState }
        let fresh = device.makeContext()
        let before = fresh.evaluatedPolicyDomainState
        #expect(before != nil && before == device.currentDomainState)
        device.enrollBiometry()
        #expect(device.makeContext().evaluatedPolicyDomainState != before)
        device.resetBiometry()
        #expect(device.makeContext().evaluatedPolicyDomainState == nil, "nil only when nothing is enrolled")
    }

    @Test(arguments: [EmulatedDevice.DomainStateAPI.evaluatedPolicyDomainState, .domainState])
    func aNewFaceDemandsTheAppPasscodeWithEitherAPI(_ api: EmulatedDevice.DomainStateAPI) async throws {
        let device = EmulatedDevice.faceID { $0.domainStateAPI = api }
        let lock = AppLock(platform: device.platform, passcodePolicy: AppPasscodePolicy(rounds: 1_000))
        try await lock.configure(passcode: "246810")
        try await lock.enableBiometricUnlock(passcode: "246810")
        await lock.lock()
        _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock"))
        await lock.lock()
        device.enrollBiometry()
        await #expect(throws: BioAuthError.self) { _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock")) }
        let state = await lock.state
        #expect(state == .lockedPasscodeRequired(.enrollmentChanged) || state == .lockedPasscodeRequired(.biometricSecretInvalidated))
    }

    @Test(arguments: [EmulatedDevice.DomainStateAPI.evaluatedPolicyDomainState, .domainState])
    func theSeamContractHoldsWithEitherAPI(_ api: EmulatedDevice.DomainStateAPI) throws {
        try SeamConformance(platform: EmulatedDevice.faceID { $0.domainStateAPI = api }.platform).contextChecks()
    }
}

extension EmulatedLAContextTests {
    /// LAContext.h: the biometric policy fails with not available, not enrolled or lockout; a
    /// missing passcode is reported only for biometry that could otherwise be used.
    @Test func biometryErrorsComeBeforeAMissingPasscode() {
        let device = EmulatedDevice.faceID()
        device.lockOutBiometry()
        device.removePasscode()
        #expect(preflight(device.makeContext()) == .biometryLockout)
        #expect(preflight(device.makeContext(), .deviceOwnerAuthentication) == .passcodeNotSet)
        let bare = EmulatedDevice(configuration: .init(biometry: .faceID), passcode: nil, enrolled: false)
        #expect(preflight(bare.makeContext()) == .biometryNotEnrolled)
    }

    @Test(arguments: [EmulatedDevice.DomainStateAPI.domainState, .evaluatedPolicyDomainState, .onlyAfterEvaluation])
    func anInvalidatedContextGivesNoDomainState(_ api: EmulatedDevice.DomainStateAPI) async throws {
        let device = EmulatedDevice.faceID { $0.domainStateAPI = api }
        let context = device.makeContext()
        device.script(.match)
        try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: "test")
        #expect(context.evaluatedPolicyDomainState != nil)
        context.invalidate()
        #expect(context.evaluatedPolicyDomainState == nil)
    }
}

extension EmulatedLAContextTests {
    /// Touch ID shows the fallback button after the first unrecognised finger; Face ID offers
    /// "Try Face ID Again" first and the fallback after the second failure
    /// (`LAContext.localizedFallbackTitle`: "after several failed attempts to recognize the user's face").
    @Test func faceIDOffersTheFallbackAfterTheSecondFailureTouchIDAfterTheFirst() async {
        let touch = EmulatedDevice(configuration: .init(biometry: .touchID))
        touch.script(.noMatch, .fallback)
        #expect(await evaluate(touch.makeContext()) == .userFallback)

        let face = EmulatedDevice.faceID()
        face.script(.noMatch, .fallback)
        #expect(await evaluate(face.makeContext()) == .userCancel, "no fallback button after one failure")
        face.script(.noMatch, .noMatch, .fallback)
        #expect(await evaluate(face.makeContext()) == .userFallback)

        let configured = EmulatedDevice.faceID { $0.fallbackAfterFailures = 1 }
        configured.script(.noMatch, .fallback)
        #expect(await evaluate(configured.makeContext()) == .userFallback)
    }
}
