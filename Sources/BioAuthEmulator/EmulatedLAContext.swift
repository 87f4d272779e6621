import BioAuth
import BioAuthCore
import Foundation
import Synchronization

/// An `LAContext` on an ``EmulatedDevice``.
package final class EmulatedLAContext: AuthenticationContext {
    package let device: EmulatedDevice
    let id: Int

    init(device: EmulatedDevice, id: Int) {
        self.device = device
        self.id = id
    }

    private func read<T>(_ body: (ContextRecord) -> T) -> T { device.state.withLock { body($0.contexts[id]!) } }
    private func write(_ body: (inout ContextRecord) -> Void) { device.state.withLock { body(&$0.contexts[id]!) } }

    package var biometryType: BiometryKind { read { $0.biometryRevealed ? device.configuration.biometry : .none } }
    package var localizedFallbackTitle: String? {
        get { read(\.fallbackTitle) }
        set { write { $0.fallbackTitle = newValue } }
    }
    package var localizedCancelTitle: String? {
        get { read(\.cancelTitle) }
        set { write { $0.cancelTitle = newValue } }
    }
    package var localizedReason: String {
        get { read(\.reason) }
        set { write { $0.reason = newValue } }
    }
    package var interactionNotAllowed: Bool {
        get { read(\.interactionNotAllowed) }
        set { write { $0.interactionNotAllowed = newValue } }
    }
    package var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
        get { read(\.reuseDuration) }
        set { write { $0.reuseDuration = max(0, newValue) } }
    }
    package var evaluatedPolicyDomainState: Data? {
        device.state.withLock { state in
            // An invalidated context answers nothing (UNCONFIRMED: LAContext.h says only that it
            // can no longer evaluate; the emulator gives no state that could be stale).
            guard !state.contexts[id]!.invalidated else { return nil }
            return switch device.configuration.domainStateAPI {
            case .evaluatedPolicyDomainState, .onlyAfterEvaluation: state.contexts[id]!.domainState
            case .domainState: state.domainState
            }
        }
    }

    /// Whether the platform (not the app) considers this context authenticated.
    package var isAuthenticated: Bool { read { $0.authenticatedByBiometry || $0.authenticatedByPasscode } }

    package func canEvaluatePolicy(_ policy: AuthenticationPolicy) throws(LAErrorCode) {
        let failure: LAErrorCode? = device.state.withLock { state in
            guard !state.contexts[id]!.invalidated else { return .invalidContext }
            // "set no matter what the call returns" ([doc] lacontext/biometrytype)
            state.contexts[id]!.biometryRevealed = true
            let failure = device.preflight(policy, state)
            // Non-nil after canEvaluatePolicy succeeds for a biometric policy (LAContext.h).
            if failure == nil && policy.isBiometricOnly && device.configuration.domainStateAPI != .onlyAfterEvaluation {
                state.contexts[id]!.domainState = state.domainState
            }
            return failure
        }
        if let failure { throw failure }
    }

    package func evaluatePolicy(_ policy: AuthenticationPolicy, localizedReason: String) async throws(LAErrorCode) {
        // An empty reason raises NSInvalidArgumentException on a device (LAContext.h).
        precondition(!localizedReason.isEmpty, "evaluatePolicy: localizedReason must not be empty")
        let outcome: PromptOutcome = device.state.withLock { state in
            guard let record = state.contexts[id], !record.invalidated else { return .failure(.invalidContext) }
            if state.jailbreakHook { return .success }  // the hooked reply: no match, context unchanged
            // A context that succeeded once stays authenticated (SecItem.h; Auth0.swift PR #1028).
            if record.authenticatedByBiometry || (!policy.isBiometricOnly && record.authenticatedByPasscode) { return .success }
            if let failure = device.preflight(policy, state) { return .failure(failure) }
            // Reuse of a recent device-unlock match, at most 300 s (LAContext.h).
            let window = min(record.reuseDuration, device.configuration.maximumReuseDuration)
            if window > 0, let unlocked = state.lastDeviceUnlockMatch,
                device.configuration.clock.now().timeIntervalSince(unlocked) <= window
            {
                state.contexts[id]!.authenticatedByBiometry = true
                state.contexts[id]!.domainState = state.domainState
                return .success
            }
            if record.interactionNotAllowed { return .failure(.notInteractive) }
            return device.runPrompt(policy, context: id, reason: localizedReason, source: .evaluatePolicy, state: &state)
        }
        switch outcome {
        case .success: return
        case .failure(let code): throw code
        case .held:
            // As the live seam: the cancellation of the task that asked invalidates the context,
            // which ends the prompt with appCancel (-9).
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let alreadyInvalidated = device.state.withLock { state in
                        if state.contexts[id]!.invalidated { return true }
                        state.contexts[id]!.held = continuation
                        return false
                    }
                    if alreadyInvalidated { continuation.resume() }
                }
            } onCancel: {
                self.invalidate()
            }
            throw LAErrorCode.appCancel
        }
    }

    /// Ends an evaluation in flight with appCancel (-9); later calls fail with invalidContext (-10). Idempotent.
    package func invalidate() {
        let held = device.state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.contexts[id]!.invalidated = true
            state.contexts[id]!.authenticatedByBiometry = false
            state.contexts[id]!.authenticatedByPasscode = false
            defer { state.contexts[id]!.held = nil }
            return state.contexts[id]!.held
        }
        held?.resume()
    }
}

/// Makes a fresh ``EmulatedLAContext`` per attempt.
package struct EmulatedContextFactory: AuthenticationContextFactory {
    package let device: EmulatedDevice
    package init(device: EmulatedDevice) { self.device = device }
    package func makeContext() -> any AuthenticationContext { device.makeContext() }
}
