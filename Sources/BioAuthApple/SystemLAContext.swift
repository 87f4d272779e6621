// LAContext is unavailable on tvOS even though the module imports there (LAContext.h:
// API_UNAVAILABLE(tvos)): BioAuthApple offers no live platform on tvOS.
#if canImport(LocalAuthentication) && !os(tvOS)
    import BioAuth
    import Foundation
    import LocalAuthentication

    /// `AuthenticationContext` over a real `LAContext`. Forwarding only: no decisions.
    ///
    /// `@unchecked Sendable`: `LAContext` is not Sendable. Property reads and writes and `invalidate()`
    /// go through `lock`; `evaluatePolicy` starts outside it, so `invalidate()` — from another thread,
    /// or from the cancellation of the task that asked — can end an evaluation in flight (LAContext.h:
    /// "invalidate … cancels any pending evaluation").
    package final class SystemLAContext: AuthenticationContext, @unchecked Sendable {
        /// The wrapped context, for `kSecUseAuthenticationContext`.
        let context = LAContext()
        private let lock = NSLock()

        package init() {}

        private func locked<T>(_ body: (LAContext) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(context)
        }

        // LAContext.h: `@property (nonatomic, readonly) LABiometryType biometryType`
        package var biometryType: BiometryKind { locked { BiometryKind(rawValue: $0.biometryType.rawValue) ?? .none } }

        // LAContext.h: localizedFallbackTitle, localizedCancelTitle and localizedReason are
        // API_UNAVAILABLE(watchos): there the system's defaults apply and these keep nothing.
        // LAContext.h: `@property (nonatomic, nullable, copy) NSString *localizedFallbackTitle`
        package var localizedFallbackTitle: String? {
            get {
                #if os(watchOS)
                    nil
                #else
                    locked { $0.localizedFallbackTitle }
                #endif
            }
            set {
                #if !os(watchOS)
                    locked { $0.localizedFallbackTitle = newValue }
                #endif
            }
        }
        // LAContext.h: `@property (nonatomic, nullable, copy) NSString *localizedCancelTitle`
        package var localizedCancelTitle: String? {
            get {
                #if os(watchOS)
                    nil
                #else
                    locked { $0.localizedCancelTitle }
                #endif
            }
            set {
                #if !os(watchOS)
                    locked { $0.localizedCancelTitle = newValue }
                #endif
            }
        }
        // LAContext.h: `@property (nonatomic, copy) NSString *localizedReason`
        package var localizedReason: String {
            get {
                #if os(watchOS)
                    ""
                #else
                    locked { $0.localizedReason }
                #endif
            }
            set {
                #if !os(watchOS)
                    locked { $0.localizedReason = newValue }
                #endif
            }
        }
        // LAContext.h: `@property (nonatomic) BOOL interactionNotAllowed`
        package var interactionNotAllowed: Bool {
            get { locked { $0.interactionNotAllowed } }
            set { locked { $0.interactionNotAllowed = newValue } }
        }
        // LAContext.h: `@property (nonatomic) NSTimeInterval touchIDAuthenticationAllowableReuseDuration` (not on watchOS)
        package var touchIDAuthenticationAllowableReuseDuration: TimeInterval {
            get {
                #if os(iOS) || os(macOS) || os(visionOS)
                    locked { $0.touchIDAuthenticationAllowableReuseDuration }
                #else
                    0
                #endif
            }
            set {
                #if os(iOS) || os(macOS) || os(visionOS)
                    locked { $0.touchIDAuthenticationAllowableReuseDuration = newValue }
                #endif
            }
        }
        // LADomainState.h (iOS 18, macOS 15, visionOS 2 — this package's minimums): `domainState.biometry.stateHash`,
        // nil only when nothing is enrolled. The deprecated `evaluatedPolicyDomainState` is not used.
        // Both are API_UNAVAILABLE(watchos): no domain state there.
        package var evaluatedPolicyDomainState: Data? {
            #if os(watchOS)
                nil
            #else
                locked { $0.domainState.biometry.stateHash }
            #endif
        }

        /// The SDK's policy (`LAPolicy`, the same raw values: `mirroredConstantsEqualTheSDK`). The
        /// biometric policy is not on watchOS (its page lists iOS, macOS and visionOS): there it
        /// is refused as biometry not available (LAError -6), as on a device without biometry.
        private func sdkPolicy(_ policy: AuthenticationPolicy) throws(LAErrorCode) -> LAPolicy {
            switch policy {
            case .deviceOwnerAuthenticationWithBiometrics:
                #if os(watchOS)
                    throw .biometryNotAvailable
                #else
                    return .deviceOwnerAuthenticationWithBiometrics
                #endif
            case .deviceOwnerAuthentication: return .deviceOwnerAuthentication
            }
        }

        // LAContext.h: `- (BOOL)canEvaluatePolicy:(LAPolicy)policy error:(NSError **)error`
        package func canEvaluatePolicy(_ policy: AuthenticationPolicy) throws(LAErrorCode) {
            let sdk = try sdkPolicy(policy)
            var error: NSError?
            let ok = locked { $0.canEvaluatePolicy(sdk, error: &error) }
            if !ok { throw LAErrorCode(rawValue: error?.code ?? LAErrorCode.authenticationFailed.rawValue) }
        }

        // LAContext.h: `- (void)evaluatePolicy:(LAPolicy)policy localizedReason:(NSString *)localizedReason reply:(void(^)(BOOL success,
        // NSError *error))reply`
        // A cancelled task invalidates the context, so the sheet goes away with the view that asked;
        // the reply then reports appCancel (-9).
        package func evaluatePolicy(_ policy: AuthenticationPolicy, localizedReason: String) async throws(LAErrorCode) {
            let sdk = try sdkPolicy(policy)
            let context = self.context
            let code: Int? = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    context.evaluatePolicy(sdk, localizedReason: localizedReason) { success, error in
                        continuation.resume(
                            returning: success ? nil : ((error as NSError?)?.code ?? LAErrorCode.authenticationFailed.rawValue))
                    }
                }
            } onCancel: {
                self.invalidate()
            }
            if let code { throw LAErrorCode(rawValue: code) }
        }

        // LAContext.h: `- (void)invalidate`
        package func invalidate() { locked { $0.invalidate() } }
    }

    /// Makes a fresh `SystemLAContext` per attempt.
    package struct SystemContextFactory: AuthenticationContextFactory {
        package init() {}
        package func makeContext() -> any AuthenticationContext { SystemLAContext() }
    }
#endif
