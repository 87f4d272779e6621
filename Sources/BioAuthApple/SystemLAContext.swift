#if canImport(LocalAuthentication)
import BioAuth
import Foundation
import LocalAuthentication

/// `AuthenticationContext` over a real `LAContext`. Forwarding only: no decisions.
///
/// `@unchecked Sendable`: `LAContext` is not Sendable; every access goes through `lock`.
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
    // LAContext.h: `@property (nonatomic, nullable, copy) NSString *localizedFallbackTitle`
    package var localizedFallbackTitle: String? {
        get { locked { $0.localizedFallbackTitle } }
        set { locked { $0.localizedFallbackTitle = newValue } }
    }
    // LAContext.h: `@property (nonatomic, nullable, copy) NSString *localizedCancelTitle`
    package var localizedCancelTitle: String? {
        get { locked { $0.localizedCancelTitle } }
        set { locked { $0.localizedCancelTitle = newValue } }
    }
    // LAContext.h: `@property (nonatomic, copy) NSString *localizedReason`
    package var localizedReason: String {
        get { locked { $0.localizedReason } }
        set { locked { $0.localizedReason = newValue } }
    }
    // LAContext.h: `@property (nonatomic) BOOL interactionNotAllowed`
    package var interactionNotAllowed: Bool {
        get { locked { $0.interactionNotAllowed } }
        set { locked { $0.interactionNotAllowed = newValue } }
    }
    // LAContext.h: `@property (nonatomic) NSTimeInterval touchIDAuthenticationAllowableReuseDuration` (not on watchOS/tvOS)
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
    // LAContext.h: `@property (nonatomic, nullable, readonly) NSData *evaluatedPolicyDomainState` (deprecated iOS 18)
    package var evaluatedPolicyDomainState: Data? {
        locked { context in
            if #available(iOS 18.0, macOS 15.0, visionOS 2.0, *), let hash = context.domainState.biometry.stateHash { return hash }
            return context.evaluatedPolicyDomainState
        }
    }

    // LAContext.h: `- (BOOL)canEvaluatePolicy:(LAPolicy)policy error:(NSError **)error`
    package func canEvaluatePolicy(_ policy: AuthenticationPolicy) throws(LAErrorCode) {
        var error: NSError?
        let ok = locked { $0.canEvaluatePolicy(LAPolicy(rawValue: policy.rawValue)!, error: &error) }
        if !ok { throw LAErrorCode(rawValue: error?.code ?? LAErrorCode.authenticationFailed.rawValue) }
    }

    // LAContext.h: `- (void)evaluatePolicy:(LAPolicy)policy localizedReason:(NSString *)localizedReason reply:(void(^)(BOOL success, NSError *error))reply`
    package func evaluatePolicy(_ policy: AuthenticationPolicy, localizedReason: String) async throws(LAErrorCode) {
        let code: Int? = await withCheckedContinuation { continuation in
            context.evaluatePolicy(LAPolicy(rawValue: policy.rawValue)!, localizedReason: localizedReason) { success, error in
                continuation.resume(returning: success ? nil : ((error as NSError?)?.code ?? LAErrorCode.authenticationFailed.rawValue))
            }
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
