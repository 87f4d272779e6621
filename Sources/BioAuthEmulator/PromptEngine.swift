import BioAuth
import BioAuthCore
import Foundation
import Synchronization

/// How a prompt ended.
enum PromptOutcome {
    case success
    case failure(LAErrorCode)
    /// The person left the prompt open (`.hold`); it ends when the context is invalidated.
    case held
}

extension EmulatedDevice {
    /// Why `policy` cannot be evaluated now, checked without UI (LAContext.h `canEvaluatePolicy:error:`).
    /// Precedence between several causes is UNCONFIRMED: hardware, passcode, app permission,
    /// enrollment, lockout.
    func preflight(_ policy: AuthenticationPolicy, _ state: State) -> LAErrorCode? {
        if policy.isBiometricOnly {
            if configuration.biometry == .none { return .biometryNotAvailable }
            switch configuration.biometricAccessory {
            case .builtIn: break
            case .notPaired: return .biometryNotPaired
            case .disconnected: return .biometryDisconnected
            }
            // LAContext.h (deviceOwnerAuthenticationWithBiometrics): "If biometry is not available,
            // not enrolled or locked out, then the evaluation of this policy will fail with
            // LAErrorBiometryNotAvailable, LAErrorBiometryNotEnrolled or LAErrorBiometryLockout":
            // those come first; LAErrorPasscodeNotSet only for biometry that could otherwise be used.
            if state.deniedForApp { return .biometryNotAvailable }
            if state.enrolled.isEmpty { return .biometryNotEnrolled }
            if state.lockedOut { return .biometryLockout }
            if state.passcode == nil { return .passcodeNotSet }
            return nil
        }
        return state.passcode == nil ? .passcodeNotSet : nil
    }

    /// Whether biometry can be offered at a `.deviceOwnerAuthentication` prompt.
    private func biometryUsable(_ state: State) -> Bool {
        configuration.biometry != .none && configuration.biometricAccessory == .builtIn && !state.deniedForApp && !state.enrolled.isEmpty
            && !state.lockedOut
    }

    /// Shows a prompt for `policy` on context `id` and plays the script until it ends.
    ///
    /// Biometric phase: a match succeeds and resets the failure count; each failed match counts
    /// toward the lockout (`lockoutThreshold` consecutive → biometryLockout, -8) and toward the
    /// per-prompt limit (→ authenticationFailed, -1). The fallback button appears after
    /// ``EmulatedDevice/Configuration/fallbackAfterFailures`` failed matches unless its title is `""` (`LAContext.h`); with the biometrics-only policy
    /// tapping it ends the call with userFallback (-3), otherwise it opens the passcode screen.
    /// A correct device passcode succeeds and clears a lockout.
    func runPrompt(
        _ policy: AuthenticationPolicy, context id: Int, reason: String, source: PromptSource, state: inout State
    ) -> PromptOutcome {
        guard var record = state.contexts[id] else { return .failure(.invalidContext) }
        defer { state.contexts[id] = record }
        // keychain- and key-driven prompts ignore localizedFallbackTitle (Valet PR #269: evaluateAccessControl does).
        let requestedFallback = source == .evaluatePolicy ? record.fallbackTitle : nil
        let defaultFallback = policy.isBiometricOnly ? "Enter Password" : "Enter Passcode"
        let fallbackTitle = requestedFallback == "" ? nil : (requestedFallback ?? defaultFallback)
        let cancel = (record.cancelTitle?.isEmpty ?? true) ? "Cancel" : record.cancelTitle!
        state.prompts.append(
            PromptRecord(source: source, policy: policy, reason: reason, fallbackTitle: fallbackTitle, cancelTitle: cancel))

        var onPasscodeScreen = !policy.isBiometricOnly && !biometryUsable(state)
        var failuresThisPrompt = 0
        for _ in 0..<64 {
            let action = state.nextAction()
            if action == .hold { return .held }
            if action == .cancel { return .failure(.userCancel) }
            if action == .systemCancel { return .failure(.systemCancel) }
            if onPasscodeScreen {
                let entered: String? =
                    switch action {
                    case .match: state.passcode
                    case .passcode(let code): code
                    default: nil
                    }
                if action == .fallback { return .failure(.userCancel) }
                if let entered, entered == state.passcode {
                    state.lockedOut = false
                    state.consecutiveFailures = 0
                    record.authenticatedByPasscode = true
                    return .success
                }
                continue  // wrong passcode: the screen stays (device passcode delays are not emulated)
            }
            switch action {
            case .match:
                state.consecutiveFailures = 0
                record.authenticatedByBiometry = true
                record.domainState = state.domainState
                return .success
            case .noMatch:
                state.consecutiveFailures += 1
                failuresThisPrompt += 1
                if state.consecutiveFailures >= configuration.lockoutThreshold {
                    state.lockedOut = true
                    if policy.isBiometricOnly { return .failure(.biometryLockout) }
                    onPasscodeScreen = true
                } else if failuresThisPrompt >= configuration.perPromptFailureLimit {
                    if policy.isBiometricOnly { return .failure(.authenticationFailed) }
                    onPasscodeScreen = true
                }
            case .fallback:
                guard fallbackTitle != nil, failuresThisPrompt >= configuration.fallbackAfterFailures else { return .failure(.userCancel) }
                if policy.isBiometricOnly { return .failure(.userFallback) }
                onPasscodeScreen = true
            case .passcode:
                guard !policy.isBiometricOnly else { return .failure(.userCancel) }
                onPasscodeScreen = true
                state.script.insert(action, at: 0)
            case .cancel, .systemCancel, .hold:
                break
            }
        }
        return .failure(.authenticationFailed)
    }

    /// Decides whether context `id` (nil: a one-time context) may use something guarded by
    /// `access`, prompting if needed. Returns nil when allowed, `.skip` for UI-skip queries.
    func authorize(
        _ access: AccessControl, context id: Int?, skipUI: Bool, source: PromptSource, state: inout State
    ) -> Authorization {
        let contextID: Int
        if let id {
            contextID = id
        } else {
            state.nextContextID += 1
            contextID = state.nextContextID
            state.contexts[contextID] = ContextRecord()
        }
        guard let record = state.contexts[contextID], !record.invalidated else { return .denied(.invalidContext) }
        // An authenticated context is reused without UI (kSecUseAuthenticationContext, SecItem.h).
        if access.isSatisfied(biometry: record.authenticatedByBiometry, passcode: record.authenticatedByPasscode) { return .allowed }
        if skipUI { return .skip }
        if record.interactionNotAllowed { return .denied(.notInteractive) }
        let policy = access.promptPolicy
        if let failure = preflight(policy, state) { return .denied(failure) }
        switch runPrompt(policy, context: contextID, reason: record.reason, source: source, state: &state) {
        case .success:
            let after = state.contexts[contextID]!
            return access.isSatisfied(biometry: after.authenticatedByBiometry, passcode: after.authenticatedByPasscode)
                ? .allowed : .denied(.authenticationFailed)
        case .failure(let code): return .denied(code)
        case .held: return .denied(.systemCancel)
        }
    }

    enum Authorization {
        case allowed
        case skip
        case denied(LAErrorCode)
    }
}
