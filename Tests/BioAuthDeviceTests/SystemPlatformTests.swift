#if canImport(LocalAuthentication) && canImport(Security) && canImport(CryptoKit) && !os(tvOS)
    import BioAuth
    import BioAuthApple
    import BioAuthTesting
    import Foundation
    import LocalAuthentication
    import Security
    import Testing
    #if canImport(CryptoTokenKit)
        import CryptoTokenKit
    #endif

    /// Apple-only: every mirrored constant equals the SDK's (`everyMirroredConstantIsComparedWithTheSDK`
    /// checks none is left out), and the live seams against the conformance suite the emulator passes.
    /// Run on a Mac by `.github/workflows/ci.yml` and on an iPhone from Xcode
    /// (`docs/DeviceChecklist.md` §0); type-checked on Linux by `.ci/apple-typecheck`.
    struct SystemPlatformTests {
        @Test func mirroredConstantsEqualTheSDK() {
            var laErrors: [(LAErrorCode, LAError.Code)] = [
                (.authenticationFailed, .authenticationFailed), (.userCancel, .userCancel), (.userFallback, .userFallback),
                (.systemCancel, .systemCancel), (.passcodeNotSet, .passcodeNotSet), (.appCancel, .appCancel),
                (.invalidContext, .invalidContext), (.notInteractive, .notInteractive),
            ]
            // The biometry codes' pages list iOS 11, macOS 10.13 and visionOS 1, not watchOS.
            #if !os(watchOS)
                laErrors += [
                    (.biometryNotAvailable, .biometryNotAvailable), (.biometryNotEnrolled, .biometryNotEnrolled),
                    (.biometryLockout, .biometryLockout),
                ]
            #endif
            for (mirrored, sdk) in laErrors { #expect(mirrored.rawValue == sdk.rawValue, "\(mirrored)") }
            // LAError.h: the Touch ID keyboard's codes and invalidDimensions (macOS 12) are macOS only,
            // the companion's iOS 18 / macOS 15.
            #if os(macOS)
                let macOnly: [(LAErrorCode, LAError.Code)] = [
                    (.biometryNotPaired, .biometryNotPaired), (.biometryDisconnected, .biometryDisconnected),
                    (.invalidDimensions, .invalidDimensions),
                ]
                for (mirrored, sdk) in macOnly { #expect(mirrored.rawValue == sdk.rawValue, "\(mirrored)") }
            #endif
            #if os(macOS) || os(iOS)
                let newer: [(LAErrorCode, LAError.Code)] = [(.companionNotAvailable, .companionNotAvailable)]
                for (mirrored, sdk) in newer { #expect(mirrored.rawValue == sdk.rawValue, "\(mirrored)") }
            #endif
            #expect(LAErrorDomain == "com.apple.LocalAuthentication")

            let kinds: [(BiometryKind, LABiometryType)] = [(.none, .none), (.touchID, .touchID), (.faceID, .faceID), (.opticID, .opticID)]
            for (mirrored, sdk) in kinds { #expect(mirrored.rawValue == sdk.rawValue, "\(mirrored)") }

            // The biometric policy is not on watchOS (its page lists iOS, macOS and visionOS).
            var policies: [(AuthenticationPolicy, LAPolicy)] = [(.deviceOwnerAuthentication, .deviceOwnerAuthentication)]
            #if !os(watchOS)
                policies.append((.deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthenticationWithBiometrics))
            #endif
            for (mirrored, sdk) in policies { #expect(mirrored.rawValue == sdk.rawValue, "\(mirrored)") }

            let flags: [(AccessControlFlags, SecAccessControlCreateFlags)] = [
                (.userPresence, .userPresence), (.biometryAny, .biometryAny), (.biometryCurrentSet, .biometryCurrentSet),
                (.devicePasscode, .devicePasscode), (.companion, .companion), (.or, .or), (.and, .and),
                (.privateKeyUsage, .privateKeyUsage), (.applicationPassword, .applicationPassword),
            ]
            for (mirrored, sdk) in flags { #expect(mirrored.rawValue == sdk.rawValue, "\(mirrored)") }

            let classes: [(KeychainAccessibility, CFString)] = [
                (.whenPasscodeSetThisDeviceOnly, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly),
                (.whenUnlockedThisDeviceOnly, kSecAttrAccessibleWhenUnlockedThisDeviceOnly),
                (.afterFirstUnlockThisDeviceOnly, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly),
                (.whenUnlocked, kSecAttrAccessibleWhenUnlocked), (.afterFirstUnlock, kSecAttrAccessibleAfterFirstUnlock),
            ]
            for (mirrored, sdk) in classes { #expect(mirrored.rawValue == sdk as String, "\(mirrored)") }

            let statuses: [(SecStatus, OSStatus)] = [
                (.success, errSecSuccess), (.errSecUnimplemented, errSecUnimplemented), (.errSecParam, errSecParam),
                (.errSecUserCanceled, errSecUserCanceled), (.errSecNotAvailable, errSecNotAvailable), (.errSecAuthFailed, errSecAuthFailed),
                (.errSecDuplicateItem, errSecDuplicateItem), (.errSecItemNotFound, errSecItemNotFound),
                (.errSecInteractionNotAllowed, errSecInteractionNotAllowed), (.errSecDecode, errSecDecode),
                (.errSecMissingEntitlement, errSecMissingEntitlement), (.errSecVerifyFailed, errSecVerifyFailed),
            ]
            for (mirrored, sdk) in statuses { #expect(mirrored.rawValue == sdk, "\(mirrored)") }

            #if canImport(CryptoTokenKit)
                let tokenErrors: [(Int, TKError.Code)] = [
                    (CryptoTokenKitError.notImplemented, .notImplemented), (CryptoTokenKitError.communicationError, .communicationError),
                    (CryptoTokenKitError.corruptedData, .corruptedData), (CryptoTokenKitError.canceledByUser, .canceledByUser),
                    (CryptoTokenKitError.authenticationFailed, .authenticationFailed),
                    (CryptoTokenKitError.objectNotFound, .objectNotFound),
                    (CryptoTokenKitError.tokenNotFound, .tokenNotFound), (CryptoTokenKitError.badParameter, .badParameter),
                    (CryptoTokenKitError.authenticationNeeded, .authenticationNeeded),
                ]
                for (mirrored, sdk) in tokenErrors { #expect(mirrored == sdk.rawValue, "TKError \(sdk)") }
                #expect(CryptoTokenKitError.domain == TKErrorDomain)
            #endif
        }

        /// Needs a device with a passcode and a keychain entitlement; skipped elsewhere.
        @Test(.enabled(if: LiveDevice.enabled, "needs a device with a passcode and BIOAUTH_LIVE_SEAMS=1"))
        func liveSeamsPassTheConformanceSuite() async throws {
            try await SeamConformance(platform: .system).run()
        }
    }
#endif
