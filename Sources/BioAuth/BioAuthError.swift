import Foundation

/// Every failure of the client API.
///
/// A struct with an extensible ``Code``: new codes may be added without breaking callers. It
/// carries the platform's numeric status for diagnostics and never a secret, key, nonce or signature.
public struct BioAuthError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        // Prompt outcomes.
        public static let userCancelled = Code("userCancelled")
        public static let systemCancelled = Code("systemCancelled")
        public static let appCancelled = Code("appCancelled")
        public static let fallbackRequested = Code("fallbackRequested")
        public static let authenticationFailed = Code("authenticationFailed")
        public static let interactionNotAllowed = Code("interactionNotAllowed")
        // Biometry and device state.
        public static let biometryLockedOut = Code("biometryLockedOut")
        public static let biometryNotAvailable = Code("biometryNotAvailable")
        public static let biometryNotEnrolled = Code("biometryNotEnrolled")
        public static let passcodeNotSet = Code("passcodeNotSet")
        public static let enrollmentChanged = Code("enrollmentChanged")
        // Keychain and keys.
        public static let itemNotFound = Code("itemNotFound")
        public static let duplicateItem = Code("duplicateItem")
        public static let invalidParameters = Code("invalidParameters")
        public static let keyUnavailable = Code("keyUnavailable")
        public static let keyOperationNotAllowed = Code("keyOperationNotAllowed")
        public static let secureEnclaveUnavailable = Code("secureEnclaveUnavailable")
        public static let keychainFailure = Code("keychainFailure")
        public static let cryptographyFailure = Code("cryptographyFailure")
        // App passcode and app lock.
        public static let passcodeIncorrect = Code("passcodeIncorrect")
        public static let passcodeTemporarilyLocked = Code("passcodeTemporarilyLocked")
        public static let passcodeTooShort = Code("passcodeTooShort")
        public static let appPasscodeNotSet = Code("appPasscodeNotSet")
        public static let wiped = Code("wiped")
        public static let passcodeRequired = Code("passcodeRequired")
        public static let biometricUnlockNotEnabled = Code("biometricUnlockNotEnabled")
        public static let notConfigured = Code("notConfigured")
        public static let alreadyConfigured = Code("alreadyConfigured")

        /// Every code defined by this version.
        public static let all: [Code] = [
            .userCancelled, .systemCancelled, .appCancelled, .fallbackRequested, .authenticationFailed, .interactionNotAllowed,
            .biometryLockedOut, .biometryNotAvailable, .biometryNotEnrolled, .passcodeNotSet, .enrollmentChanged, .itemNotFound,
            .duplicateItem, .invalidParameters, .keyUnavailable, .keyOperationNotAllowed, .secureEnclaveUnavailable,
            .keychainFailure, .cryptographyFailure, .passcodeIncorrect, .passcodeTemporarilyLocked, .passcodeTooShort,
            .appPasscodeNotSet, .wiped, .passcodeRequired, .biometricUnlockNotEnabled, .notConfigured, .alreadyConfigured,
        ]
    }

    public let code: Code
    /// The `LAError` code behind the failure, if any.
    package let laError: LAErrorCode?
    /// The keychain `OSStatus` behind the failure, if any.
    package let status: SecStatus?
    /// The raw `LAError.Code` behind the failure, for diagnostics.
    public var laErrorCode: Int? { laError?.rawValue }
    /// The raw keychain `OSStatus` behind the failure, for diagnostics.
    public var osStatus: Int32? { status?.rawValue }
    /// For ``Code/passcodeTemporarilyLocked``: seconds until the next attempt is allowed.
    public let retryAfter: TimeInterval?
    /// For ``Code/passcodeIncorrect``: attempts left before the wipe, when a wipe is configured.
    public let attemptsBeforeWipe: Int?

    public init(_ code: Code, retryAfter: TimeInterval? = nil, attemptsBeforeWipe: Int? = nil) {
        self.init(code, laError: nil, status: nil, retryAfter: retryAfter, attemptsBeforeWipe: attemptsBeforeWipe)
    }

    package init(
        _ code: Code, laError: LAErrorCode? = nil, status: SecStatus?, retryAfter: TimeInterval? = nil,
        attemptsBeforeWipe: Int? = nil
    ) {
        self.code = code
        self.laError = laError
        self.status = status
        self.retryAfter = retryAfter
        self.attemptsBeforeWipe = attemptsBeforeWipe
    }

    /// Maps an `LAError` from an evaluation or a Secure Enclave operation.
    package init(laError: LAErrorCode) {
        let code: Code =
            switch laError {
            case .authenticationFailed: .authenticationFailed
            case .userCancel: .userCancelled
            case .userFallback: .fallbackRequested
            case .systemCancel: .systemCancelled
            case .passcodeNotSet: .passcodeNotSet
            // macOS: a Touch ID keyboard that is not paired or not connected, no companion nearby.
            case .biometryNotAvailable, .biometryNotPaired, .biometryDisconnected, .companionNotAvailable: .biometryNotAvailable
            case .biometryNotEnrolled: .biometryNotEnrolled
            case .biometryLockout: .biometryLockedOut
            case .appCancel, .invalidContext: .appCancelled
            case .notInteractive: .interactionNotAllowed
            case .aclOperationNotAllowed: .keyOperationNotAllowed
            default: .authenticationFailed
            }
        self.init(code, laError: laError, status: nil)
    }

    /// Maps a keychain `OSStatus`. errSecAuthFailed stays an authentication failure (it covers
    /// failed match, lockout, fallback and system cancel: `SecItem.m`), never a cancel.
    package init(status: SecStatus) {
        let code: Code =
            switch status {
            case .errSecUserCanceled: .userCancelled
            case .errSecAuthFailed: .authenticationFailed
            case .errSecInteractionNotAllowed: .interactionNotAllowed
            case .errSecItemNotFound: .itemNotFound
            case .errSecDuplicateItem: .duplicateItem
            case .errSecParam: .invalidParameters
            default: .keychainFailure
            }
        self.init(code, status: status)
    }

    /// Maps a Secure Enclave failure; a missing key reads as ``Code/keyUnavailable``.
    package init(enclave failure: EnclaveFailure) {
        switch failure {
        case .authentication(let laError): self.init(laError: laError)
        case .status(.errSecItemNotFound): self.init(.keyUnavailable, status: .errSecItemNotFound)
        case .status(let status): self.init(status: status)
        }
    }

    public var description: String {
        var parts = ["BioAuthError.\(code)"]
        if let laError { parts.append("\(laError)") }
        if let status { parts.append("\(status)") }
        if let retryAfter { parts.append("retry after \(Int(retryAfter.rounded(.up))) s") }
        if let attemptsBeforeWipe { parts.append("\(attemptsBeforeWipe) attempts before wipe") }
        return parts.joined(separator: ", ")
    }

    public var debugDescription: String { description }
}
