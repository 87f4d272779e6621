import Foundation

/// What biometric authentication can do on this device now, with the biometry type known even
/// when it cannot be used, so the UI never says Touch ID on a Face ID phone.
public enum BiometricStatus: Sendable, Hashable, CustomStringConvertible {
    case available(BiometryKind)
    case notEnrolled(BiometryKind)
    case lockedOut(BiometryKind)
    /// The user turned Face ID off for this app (LAError -6 while the type is known).
    case deniedForApp(BiometryKind)
    /// No device passcode: biometry cannot be used and passcode-class items are gone.
    case noPasscode(BiometryKind)
    /// macOS: the biometry is an accessory (a Magic Keyboard with Touch ID) that is not paired or
    /// not connected now (LAError -12, -13).
    case accessoryNotConnected(BiometryKind)
    /// No biometric hardware.
    case unavailable

    /// Reads the status with one pre-flight on a fresh context. No UI.
    ///
    /// Mapping (LAError.h codes; a derived rule, not an Apple spec — expo/expo PR #30565 also reads -8 as enrolled): success → available;
    /// -7 → notEnrolled; -8 → lockedOut;
    /// -5 → noPasscode; -6 with a known type → deniedForApp; -6 with none → unavailable;
    /// -12 and -13 (macOS) → accessoryNotConnected.
    public init(platform: DevicePlatform) { self.init(contexts: platform.contexts) }

    package init(contexts: any AuthenticationContextFactory) {
        let context = contexts.makeContext()
        defer { context.invalidate() }
        var failure: LAErrorCode?
        do { try context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics) } catch { failure = error }
        let kind = context.biometryType  // read after canEvaluatePolicy: set whatever it returned
        switch failure {
        case nil: self = .available(kind)
        case .biometryNotEnrolled?: self = kind == .none ? .unavailable : .notEnrolled(kind)
        case .biometryLockout?: self = .lockedOut(kind)
        case .passcodeNotSet?: self = .noPasscode(kind)
        case .biometryNotAvailable?: self = kind == .none ? .unavailable : .deniedForApp(kind)
        case .biometryNotPaired?, .biometryDisconnected?: self = .accessoryNotConnected(kind)
        default: self = .unavailable
        }
    }

    /// The biometry type, `.none` when there is no hardware.
    public var biometryKind: BiometryKind {
        switch self {
        case .available(let k), .notEnrolled(let k), .lockedOut(let k), .deniedForApp(let k), .noPasscode(let k),
            .accessoryNotConnected(let k):
            k
        case .unavailable: .none
        }
    }

    public var isAvailable: Bool { if case .available = self { true } else { false } }

    public var description: String {
        switch self {
        case .available(let k): "\(k) is available"
        case .notEnrolled(let k): "\(k) is not set up"
        case .lockedOut(let k): "\(k) is locked after too many attempts; the passcode unlocks it"
        case .deniedForApp(let k): "\(k) is turned off for this app in Settings"
        case .noPasscode(let k): "no device passcode is set, so \(k) cannot be used"
        case .accessoryNotConnected(let k): "the keyboard with \(k) is not paired or not connected"
        case .unavailable: "this device has no biometry"
        }
    }
}

/// The text of a system prompt.
public struct Prompt: Sendable, Hashable {
    /// Why the app asks (required, non-empty: an empty reason crashes `evaluatePolicy`).
    public var reason: String
    /// nil: the system's default; `""` hides the fallback button.
    public var fallbackTitle: String?
    /// nil: the system's default "Cancel".
    public var cancelTitle: String?

    public init(reason: String, fallbackTitle: String? = nil, cancelTitle: String? = nil) {
        self.reason = reason.isEmpty ? "Authenticate" : reason
        self.fallbackTitle = fallbackTitle
        self.cancelTitle = cancelTitle
    }
}

extension DevicePlatform {
    /// Evaluates `policy` on a fresh context with `prompt`'s text and returns that context, so the
    /// keychain or key operation that follows uses it and shows no second prompt.
    ///
    /// The evaluation's success is never trusted on its own: callers must go on to an operation
    /// the platform enforces (an ACL item read, an enclave signature), which fails on a context
    /// that was not really authenticated (a hooked `evaluatePolicy`).
    package func authenticatedContext(
        policy: AuthenticationPolicy, prompt: Prompt
    ) async throws(BioAuthError) -> any AuthenticationContext {
        let context = contexts.makeContext()
        context.localizedFallbackTitle = prompt.fallbackTitle
        context.localizedCancelTitle = prompt.cancelTitle
        context.localizedReason = prompt.reason
        do { try await context.evaluatePolicy(policy, localizedReason: prompt.reason) } catch {
            context.invalidate()
            throw BioAuthError(laError: error)
        }
        return context
    }
}

extension DevicePlatform {
    /// The context for using something protected by `policy`: evaluated with `prompt` when the
    /// policy has an evaluation (one prompt with the app's titles), else a fresh context carrying
    /// the reason, for the keychain or enclave to prompt with.
    package func context(for policy: ProtectionPolicy, prompt: Prompt) async throws(BioAuthError) -> any AuthenticationContext {
        guard let evaluation = policy.evaluationPolicy else {
            let context = contexts.makeContext()
            context.localizedReason = prompt.reason
            return context
        }
        return try await authenticatedContext(policy: evaluation, prompt: prompt)
    }

    /// The enrolled biometry's domain state, read without a prompt on a fresh context after
    /// `canEvaluatePolicy` for the biometric policy (`LAContext.domainState.biometry.stateHash`,
    /// `LADomainState.h`; the pre-iOS 18 `evaluatedPolicyDomainState` is set by that call, LAContext.h):
    /// nil when nothing is enrolled, or where the platform gives none before an evaluation
    /// (UNCONFIRMED for the iOS 18 property; the client then compares after a match instead).
    package var currentDomainState: Data? {
        let context = contexts.makeContext()
        defer { context.invalidate() }
        try? context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics)
        return context.evaluatedPolicyDomainState
    }
}
