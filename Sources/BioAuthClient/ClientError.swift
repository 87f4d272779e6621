import BioAuth
import Foundation

/// Every failure of ``BioAuthClient``, saying what the app should do next — never a raw status
/// code to interpret.
///
/// A struct with an extensible ``Code``. It never carries a token, nonce, signature or password.
public struct ClientError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        /// This phone has no registration with the server: enrol it (after a primary login).
        public static let notEnrolled = Code("notEnrolled")
        /// This phone is already enrolled; re-keying is ``BioAuthClient/reenrol(_:deviceName:)``.
        public static let alreadyEnrolled = Code("alreadyEnrolled")
        /// The device key is gone (a face or finger was enrolled, biometry reset, or the passcode
        /// removed): prove who you are with a primary login and re-enrol.
        public static let reenrolmentRequired = Code("reenrolmentRequired")
        /// Biometry is locked out or the device has no passcode: the device passcode is needed
        /// (``ClientError/device`` says which).
        public static let passcodeRequired = Code("passcodeRequired")
        /// Face ID / Touch ID is not set up, turned off for this app, or absent.
        public static let biometryUnavailable = Code("biometryUnavailable")
        /// The face or finger was not recognised.
        public static let notRecognised = Code("notRecognised")
        /// The user, the system or the app (task cancellation) cancelled.
        public static let cancelled = Code("cancelled")
        /// The server refused the credentials, signature or approval.
        public static let authenticationFailed = Code("authenticationFailed")
        /// There is no device session, or the server no longer accepts it: log in again.
        public static let sessionExpired = Code("sessionExpired")
        /// Too many attempts: ``ClientError/retryAfter`` says when to try again.
        public static let rateLimited = Code("rateLimited")
        /// The server could not be reached (network, timeout, TLS).
        public static let serverUnreachable = Code("serverUnreachable")
        /// The server is up but cannot serve now (503): ``ClientError/retryAfter`` says when to retry.
        public static let serverUnavailable = Code("serverUnavailable")
        /// The server failed (5xx).
        public static let serverError = Code("serverError")
        /// The server's challenge is not what this client asked for (``ClientError/field`` names
        /// what differs). Nothing was signed and no prompt was shown.
        public static let challengeMismatch = Code("challengeMismatch")
        /// The server answered something that is not in the protocol.
        public static let protocolViolation = Code("protocolViolation")
        /// Stored credentials cannot be read now — the device is locked or the app was prewarmed
        /// before the first unlock. The user is not logged out: try again once the device is unlocked.
        public static let credentialsUnavailable = Code("credentialsUnavailable")
        /// The server rejected a request field (``ClientError/field``): a value the app passed, such as a device name.
        public static let invalidRequest = Code("invalidRequest")
        /// This session may not do that; ``ClientError/reason`` says what would: `deviceRequired`
        /// (a password session cannot rename or revoke a device — sign in on an enrolled phone),
        /// `settledDeviceRequired` (a device out of its first day), `enrolmentSessionRequired`,
        /// `accountSessionRequired`, or `coolingDown` (this device is in its first day).
        public static let forbidden = Code("forbidden")
        /// This is not the user's first device, or it replaces a key: the server needs an approval
        /// from another of the user's devices or a recovery code
        /// (``BioAuthClient/requestEnrolment(_:deviceName:)``).
        public static let approvalRequired = Code("approvalRequired")
        /// The server does not know the device, user or route (``ClientError/field`` names which).
        public static let notFound = Code("notFound")
        /// The server already has it (for example, a user name).
        public static let conflict = Code("conflict")
        /// The enrolment request has ended — five wrong recovery codes, or the owner cancelled it
        /// from an enrolled device (``PendingEnrolment/ending``). Make a new request.
        public static let requestEnded = Code("requestEnded")
        /// The server requires an attestation this app could not give (App Attest unsupported here
        /// — the Simulator, some Macs — or it failed), or the attestation failed a check
        /// (``ClientError/field`` names the attestation field). Nothing was enrolled.
        public static let attestationRejected = Code("attestationRejected")
        /// A keychain or Secure Enclave failure on this device (``ClientError/device`` has it).
        public static let deviceFailure = Code("deviceFailure")

        /// Every code defined by this version.
        public static let all: [Code] = [
            .notEnrolled, .alreadyEnrolled, .reenrolmentRequired, .passcodeRequired, .biometryUnavailable, .notRecognised, .cancelled,
            .authenticationFailed, .sessionExpired, .rateLimited, .serverUnreachable, .serverUnavailable, .serverError,
            .challengeMismatch, .protocolViolation, .credentialsUnavailable, .invalidRequest, .forbidden, .notFound, .conflict,
            .deviceFailure, .approvalRequired, .requestEnded, .attestationRejected,
        ]
    }

    public let code: Code
    /// The field a 400 or 404 named, or the challenge field that did not match.
    public let field: String?
    /// For ``Code/rateLimited`` and ``Code/serverUnavailable``: seconds to wait.
    public let retryAfter: TimeInterval?
    /// The device-side failure behind this one, if any.
    public let device: BioAuthError?
    /// For ``Code/forbidden``: the server's reason (`docs/Protocol.md` §4, the authority table);
    /// for ``Code/attestationRejected``: the check that failed (`missing`, `signature`, …).
    public let reason: String?

    public init(_ code: Code, field: String? = nil, retryAfter: TimeInterval? = nil, device: BioAuthError? = nil, reason: String? = nil) {
        self.code = code
        self.field = field
        self.retryAfter = retryAfter
        self.device = device
        self.reason = reason
    }

    /// What a device-side failure means for the flow.
    public init(device error: BioAuthError) {
        let code: Code =
            switch error.code {
            case .keyUnavailable, .enrollmentChanged: .reenrolmentRequired
            case .biometryLockedOut, .passcodeNotSet: .passcodeRequired
            case .biometryNotAvailable, .biometryNotEnrolled: .biometryUnavailable
            case .authenticationFailed: .notRecognised
            case .userCancelled, .systemCancelled, .appCancelled, .fallbackRequested: .cancelled
            case .interactionNotAllowed: .credentialsUnavailable
            default: .deviceFailure
            }
        self.init(code, device: error)
    }

    public var description: String {
        var parts = ["ClientError.\(code)"]
        if let field { parts.append("field \(field)") }
        if let reason { parts.append("reason \(reason)") }
        if let retryAfter { parts.append("retry after \(Int(retryAfter.rounded(.up))) s") }
        if let device { parts.append("\(device)") }
        return parts.joined(separator: ", ")
    }

    public var debugDescription: String { description }
}
