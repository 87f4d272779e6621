// LocalAuthentication as far as `BioAuthApple` and its macOS tests use it, written from
// https://developer.apple.com/documentation/localauthentication — each declaration with its page.
// A platform's stub set leaves out what that platform lacks (compile with one of -D STUB_IOS,
// STUB_MACOS, STUB_VISIONOS, STUB_WATCHOS, STUB_TVOS): using it there fails the check.
@_exported import AppleStubBase

/// https://developer.apple.com/documentation/localauthentication/lapolicy
public enum LAPolicy: Int, Sendable {
    #if !STUB_WATCHOS
        /// https://developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthenticationwithbiometrics
        /// (iOS 8, macOS 10.12.2, visionOS 1; watchOS is not listed — Xamarin's header-checked binding marks it [NoWatch])
        case deviceOwnerAuthenticationWithBiometrics = 1
    #endif
    /// https://developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthentication
    case deviceOwnerAuthentication = 2
    #if STUB_MACOS
        /// https://developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthenticationwithcompanion (macOS 15)
        case deviceOwnerAuthenticationWithCompanion = 3
        /// https://developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthenticationwithbiometricsorcompanion (macOS 15)
        case deviceOwnerAuthenticationWithBiometricsOrCompanion = 4
    #endif
    #if STUB_WATCHOS
        /// https://developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthenticationwithwristdetection (watchOS 9)
        case deviceOwnerAuthenticationWithWristDetection = 5
    #endif
}

/// https://developer.apple.com/documentation/localauthentication/labiometrytype
public enum LABiometryType: Int, Sendable {
    case none = 0
    case touchID = 1
    case faceID = 2
    /// https://developer.apple.com/documentation/localauthentication/labiometrytype/opticid (iOS 17, macOS 14, visionOS 1)
    case opticID = 4
}

/// https://developer.apple.com/documentation/localauthentication/laerrordomain
public let LAErrorDomain: String = "com.apple.LocalAuthentication"

/// https://developer.apple.com/documentation/localauthentication/laerror
public struct LAError: Error, Sendable {
    /// https://developer.apple.com/documentation/localauthentication/laerror/code
    public enum Code: Int, Sendable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        #if STUB_MACOS || STUB_IOS
            /// https://developer.apple.com/documentation/localauthentication/laerror/code/companionnotavailable (iOS 18, macOS 15)
            case companionNotAvailable = -11
        #endif
        #if STUB_MACOS
            /// https://developer.apple.com/documentation/localauthentication/laerror-swift.struct/code/invaliddimensions
            /// (availability "macOS: 12.0.0 -" only; LAError.h `API_AVAILABLE(macos(12.0)) API_UNAVAILABLE(ios, watchos, tvos)`)
            case invalidDimensions = -14
            /// https://developer.apple.com/documentation/localauthentication/laerror/code/biometrynotpaired (macOS 11.2 only)
            case biometryNotPaired = -12
            /// https://developer.apple.com/documentation/localauthentication/laerror/code/biometrydisconnected (macOS 11.2 only)
            case biometryDisconnected = -13
        #endif
        /// https://developer.apple.com/documentation/localauthentication/laerror/code/notinteractive
        case notInteractive = -1004
    }
    public let code: Code
}

#if !STUB_TVOS  // LAContext: iOS 8, macOS 10.10, visionOS 1, watchOS 3 — tvOS is not listed.
    #if !STUB_WATCHOS  // LADomainState: iOS 18, macOS 15, visionOS 2 — watchOS is not listed.
        /// https://developer.apple.com/documentation/localauthentication/ladomainstatebiometry
        open class LADomainStateBiometry: NSObject, @unchecked Sendable {
            /// https://developer.apple.com/documentation/localauthentication/ladomainstatebiometry/statehash
            open var stateHash: Data? { nil }
            /// https://developer.apple.com/documentation/localauthentication/ladomainstatebiometry/biometrytype
            open var biometryType: LABiometryType { .none }
        }
        /// https://developer.apple.com/documentation/localauthentication/ladomainstate
        open class LADomainState: NSObject, @unchecked Sendable {
            /// https://developer.apple.com/documentation/localauthentication/ladomainstate/biometry
            open var biometry: LADomainStateBiometry { LADomainStateBiometry() }
            /// https://developer.apple.com/documentation/localauthentication/ladomainstate/statehash
            open var stateHash: Data? { nil }
        }
    #endif

    /// https://developer.apple.com/documentation/localauthentication/lacontext — not Sendable.
    open class LAContext: NSObject {
        public override init() {}
        /// https://developer.apple.com/documentation/localauthentication/lacontext/canevaluatepolicy(_:error:)
        open func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool { false }
        /// https://developer.apple.com/documentation/localauthentication/lacontext/evaluatepolicy(_:localizedreason:reply:)
        open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String, reply: @escaping @Sendable (Bool, (any Error)?) -> Void) {}
        /// https://developer.apple.com/documentation/localauthentication/lacontext/invalidate()
        open func invalidate() {}
        /// https://developer.apple.com/documentation/localauthentication/lacontext/biometrytype
        open var biometryType: LABiometryType { .none }
        /// https://developer.apple.com/documentation/localauthentication/lacontext/interactionnotallowed
        open var interactionNotAllowed: Bool = false
        #if !STUB_WATCHOS
            /// https://developer.apple.com/documentation/localauthentication/lacontext/localizedfallbacktitle (not watchOS)
            open var localizedFallbackTitle: String?
            /// https://developer.apple.com/documentation/localauthentication/lacontext/localizedcanceltitle (not watchOS)
            open var localizedCancelTitle: String?
            /// https://developer.apple.com/documentation/localauthentication/lacontext/localizedreason (not watchOS)
            open var localizedReason: String = ""
            /// https://developer.apple.com/documentation/localauthentication/lacontext/touchidauthenticationallowablereuseduration (not watchOS)
            open var touchIDAuthenticationAllowableReuseDuration: TimeInterval = 0
            /// https://developer.apple.com/documentation/localauthentication/lacontext/domainstate (iOS 18, macOS 15, visionOS 2)
            open var domainState: LADomainState { LADomainState() }
            /// https://developer.apple.com/documentation/localauthentication/lacontext/evaluatedpolicydomainstate — deprecated for domainState.
            @available(*, deprecated, message: "Use domainState.biometry.stateHash")
            open var evaluatedPolicyDomainState: Data? { nil }
        #endif
    }
#endif
