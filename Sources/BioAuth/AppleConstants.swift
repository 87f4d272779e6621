import Foundation

// Mirrors of Apple's constants with their exact raw values. BioAuthApple converts them to the
// SDK types; the emulator uses them directly. Sources are cited per declaration.

/// `LAPolicy` (`LAPublicDefines.h`): the two policies this package evaluates. An enum, so the
/// Apple layer's conversion is exhaustive and has no value it must refuse.
package enum AuthenticationPolicy: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `.deviceOwnerAuthenticationWithBiometrics` = 1: biometry only; fallback ends the call with userFallback.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// `.deviceOwnerAuthentication` = 2: biometry, then the device passcode.
    case deviceOwnerAuthentication = 2

    package var isBiometricOnly: Bool { self == .deviceOwnerAuthenticationWithBiometrics }
    package var description: String {
        switch self {
        case .deviceOwnerAuthenticationWithBiometrics: "deviceOwnerAuthenticationWithBiometrics"
        case .deviceOwnerAuthentication: "deviceOwnerAuthentication"
        }
    }
}

/// `LABiometryType` (`LABiometryType.h`): none 0, touchID 1, faceID 2, opticID 4 (1<<2).
public enum BiometryKind: Int, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4

    /// The name to show a person ("Face ID").
    public var description: String {
        switch self {
        case .none: "none"
        case .touchID: "Touch ID"
        case .faceID: "Face ID"
        case .opticID: "Optic ID"
        }
    }
}

/// `LAError.Code` raw values, domain `com.apple.LocalAuthentication` (`LAPublicDefines.h`, `LAError.h`).
package struct LAErrorCode: Error, RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    package static let authenticationFailed = Self(rawValue: -1)
    package static let userCancel = Self(rawValue: -2)
    package static let userFallback = Self(rawValue: -3)
    package static let systemCancel = Self(rawValue: -4)
    package static let passcodeNotSet = Self(rawValue: -5)
    package static let biometryNotAvailable = Self(rawValue: -6)
    package static let biometryNotEnrolled = Self(rawValue: -7)
    package static let biometryLockout = Self(rawValue: -8)
    package static let appCancel = Self(rawValue: -9)
    package static let invalidContext = Self(rawValue: -10)
    /// macOS 15 / iOS 18: the policy needs a companion device (an Apple Watch, a Mac) and none is
    /// nearby (`LAError.h` `LAErrorCompanionNotAvailable`; `watchNotAvailable` before).
    package static let companionNotAvailable = Self(rawValue: -11)
    /// macOS 11.2+: the biometry is a removable accessory (a Magic Keyboard with Touch ID) that is
    /// not paired (`LAError.h` `LAErrorBiometryNotPaired`).
    package static let biometryNotPaired = Self(rawValue: -12)
    /// macOS 11.2+: the paired biometric accessory is not connected (`LAError.h` `LAErrorBiometryDisconnected`).
    package static let biometryDisconnected = Self(rawValue: -13)
    /// The dimensions of an embedded UI are invalid (`LAError.h` `LAErrorInvalidDimensions`).
    package static let invalidDimensions = Self(rawValue: -14)
    package static let notInteractive = Self(rawValue: -1004)
    /// Private `kLAErrorParameter`: a malformed request (a bad ACL). -1001 per a reconstruction of
    /// `LAPrivateDefines.h` — UNCONFIRMED; `SecItem.m` maps it to errSecParam by name.
    package static let parameter = Self(rawValue: -1001)
    /// Private code seen when a Secure Enclave key's ACL forbids the operation
    /// ("ACL operation is not allowed: 'ock'", flutter_secure_storage PR #989). [3p]
    package static let aclOperationNotAllowed = Self(rawValue: -1009)

    package var description: String {
        let names: [Int: String] = [
            -1: "authenticationFailed", -2: "userCancel", -3: "userFallback", -4: "systemCancel",
            -5: "passcodeNotSet", -6: "biometryNotAvailable", -7: "biometryNotEnrolled", -8: "biometryLockout",
            -9: "appCancel", -10: "invalidContext", -11: "companionNotAvailable", -12: "biometryNotPaired", -13: "biometryDisconnected",
            -14: "invalidDimensions", -1001: "parameter", -1004: "notInteractive", -1009: "aclOperationNotAllowed",
        ]
        return "LAError.\(names[rawValue] ?? String(rawValue))"
    }
}

/// Keychain `OSStatus` values (`base/SecBase.h` in apple-oss-distributions/Security).
package struct SecStatus: Error, RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }

    package static let success = Self(rawValue: 0)
    package static let errSecUnimplemented = Self(rawValue: -4)
    package static let errSecParam = Self(rawValue: -50)
    package static let errSecUserCanceled = Self(rawValue: -128)
    package static let errSecNotAvailable = Self(rawValue: -25291)
    package static let errSecAuthFailed = Self(rawValue: -25293)
    package static let errSecDuplicateItem = Self(rawValue: -25299)
    package static let errSecItemNotFound = Self(rawValue: -25300)
    package static let errSecInteractionNotAllowed = Self(rawValue: -25308)
    package static let errSecDecode = Self(rawValue: -26275)
    /// Private (`SecBasePriv.h`, not in the SDK): what Apple's error mapping returns for an
    /// unknown error domain or CryptoTokenKit code.
    package static let errSecInternal = Self(rawValue: -26276)
    package static let errSecMissingEntitlement = Self(rawValue: -34018)
    package static let errSecVerifyFailed = Self(rawValue: -67808)

    /// The OSStatus a keychain call reports for an `LAError` (`SecErrorGetOSStatus`,
    /// `osstatus_for_localauthentication_error`, `OSX/sec/Security/SecItem.m`): userCancel → -128,
    /// parameter → -50, notInteractive → -25308, every other LAError → errSecAuthFailed (-25293).
    package init(laError: LAErrorCode) {
        switch laError {
        case .userCancel: self = .errSecUserCanceled
        case .parameter: self = .errSecParam
        case .notInteractive: self = .errSecInteractionNotAllowed
        default: self = .errSecAuthFailed
        }
    }

    /// The OSStatus for a CryptoTokenKit error (`TKError.Code`, domain `CryptoTokenKit`), as
    /// Apple's own `osstatus_for_ctk_error` in `SecItem.m` maps it — never the raw code
    /// reinterpreted: badParameter → -50, notImplemented → -4, canceledByUser → -128,
    /// corruptedData → -26275, tokenNotFound and objectNotFound → -25300, anything else → -26276.
    package init(cryptoTokenKitError code: Int) {
        switch code {
        case CryptoTokenKitError.badParameter: self = .errSecParam
        case CryptoTokenKitError.notImplemented: self = .errSecUnimplemented
        case CryptoTokenKitError.canceledByUser: self = .errSecUserCanceled
        case CryptoTokenKitError.corruptedData: self = .errSecDecode
        case CryptoTokenKitError.tokenNotFound, CryptoTokenKitError.objectNotFound: self = .errSecItemNotFound
        default: self = .errSecInternal
        }
    }

    package var description: String {
        let names: [Int32: String] = [
            0: "errSecSuccess", -4: "errSecUnimplemented", -50: "errSecParam", -128: "errSecUserCanceled",
            -25291: "errSecNotAvailable", -25293: "errSecAuthFailed", -25299: "errSecDuplicateItem",
            -25300: "errSecItemNotFound", -25308: "errSecInteractionNotAllowed", -26275: "errSecDecode", -26276: "errSecInternal",
            -34018: "errSecMissingEntitlement", -67808: "errSecVerifyFailed",
        ]
        return "\(names[rawValue] ?? "OSStatus") (\(rawValue))"
    }
}

/// `TKError.Code` raw values (CryptoTokenKit `TKError.h`; `BioAuthDeviceTests` compares them with the SDK).
package enum CryptoTokenKitError {
    /// `TKErrorDomain`.
    package static let domain = "CryptoTokenKit"
    package static let notImplemented = -1
    package static let communicationError = -2
    package static let corruptedData = -3
    package static let canceledByUser = -4
    package static let authenticationFailed = -5
    package static let objectNotFound = -6
    package static let tokenNotFound = -7
    package static let badParameter = -8
    package static let authenticationNeeded = -9
}

/// `SecAccessControlCreateFlags` (`keychain/headers/SecAccessControl.h`).
package struct AccessControlFlags: OptionSet, Sendable, Hashable, Codable {
    package let rawValue: UInt
    package init(rawValue: UInt) { self.rawValue = rawValue }

    /// Biometry or passcode; survives enrollment changes.
    package static let userPresence = Self(rawValue: 1 << 0)
    /// Any enrolled biometry; survives enrollment changes.
    package static let biometryAny = Self(rawValue: 1 << 1)
    /// The biometry enrolled now: "When fingers are added or removed, the item is invalidated."
    package static let biometryCurrentSet = Self(rawValue: 1 << 3)
    /// The device passcode only.
    package static let devicePasscode = Self(rawValue: 1 << 4)
    /// A paired companion (Apple Watch); macOS.
    package static let companion = Self(rawValue: 1 << 5)
    /// Any one constraint suffices.
    package static let or = Self(rawValue: 1 << 14)
    /// Every constraint is required (the default with two or more).
    package static let and = Self(rawValue: 1 << 15)
    /// The constraints guard the private key's operations (sign, key agreement, ECIES decrypt).
    package static let privateKeyUsage = Self(rawValue: 1 << 30)
    /// An application-supplied password is an extra encryption secret.
    package static let applicationPassword = Self(rawValue: 1 << 31)

    /// The flags that are user-authentication constraints.
    package static let constraintFlags: Self = [.userPresence, .biometryAny, .biometryCurrentSet, .devicePasscode, .companion]
}

/// `kSecAttrAccessible…` classes, with the `pdmn` strings Security uses for them (`SecItem.h`).
package enum KeychainAccessibility: String, Sendable, Hashable, CaseIterable, Codable {
    case whenPasscodeSetThisDeviceOnly = "akpu"
    case whenUnlockedThisDeviceOnly = "aku"
    case afterFirstUnlockThisDeviceOnly = "cku"
    case whenUnlocked = "ak"
    case afterFirstUnlock = "ck"

    /// Whether items of this class never leave the device (no backup, no iCloud).
    package var isThisDeviceOnly: Bool { rawValue.hasSuffix("u") }
}
