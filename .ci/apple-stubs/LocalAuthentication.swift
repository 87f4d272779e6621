// LocalAuthentication as far as `BioAuthApple` and its macOS tests use it, written from
// https://developer.apple.com/documentation/localauthentication — each declaration with its page.
// A platform's stub set leaves out what that platform lacks (compile with one of -D STUB_IOS,
// STUB_MACOS, STUB_VISIONOS, STUB_WATCHOS, STUB_TVOS): using it there fails the check.
@_exported import AppleStubBase

// No LocalAuthentication page lists tvOS: on tvOS this module declares nothing.
#if !STUB_TVOS

/// https://developer.apple.com/documentation/localauthentication/lapolicy
@available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 3.0, *)
public enum LAPolicy: Int, Sendable {
    #if !STUB_WATCHOS
        /// https://developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthenticationwithbiometrics
        /// (iOS 8, macOS 10.12.2, visionOS 1; watchOS is not listed — Xamarin's header-checked binding marks it [NoWatch])
        @available(iOS 8.0, macOS 10.12.2, visionOS 1.0, *)
        case deviceOwnerAuthenticationWithBiometrics = 1
    #endif
    /// https://developer.apple.com/documentation/localauthentication/lapolicy/deviceownerauthentication
    @available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 3.0, *)
    case deviceOwnerAuthentication = 2
}

/// https://developer.apple.com/documentation/localauthentication/labiometrytype
@available(iOS 11.0, macOS 10.13.2, visionOS 1.0, watchOS 11.0, *)
public enum LABiometryType: Int, Sendable {
    /// https://developer.apple.com/documentation/localauthentication/labiometrytype/none (its page: iOS 11.2, watchOS 4.2)
    @available(iOS 11.2, macOS 10.13.2, visionOS 1.0, watchOS 4.2, *)
    case none = 0
    case touchID = 1
    case faceID = 2
    /// https://developer.apple.com/documentation/localauthentication/labiometrytype/opticid (iOS 17, macOS 14, visionOS 1)
    @available(iOS 17.0, macOS 14.0, visionOS 1.0, watchOS 10.0, *)
    case opticID = 4
}

/// https://developer.apple.com/documentation/localauthentication/laerrordomain
@available(iOS 8.3, macOS 10.11, visionOS 1.0, watchOS 3.0, *)
public let LAErrorDomain: String = "com.apple.LocalAuthentication"

/// https://developer.apple.com/documentation/localauthentication/laerror
@available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 3.0, *)
public struct LAError: Error, Sendable {
    /// https://developer.apple.com/documentation/localauthentication/laerror/code
    public enum Code: Int, Sendable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        #if !STUB_WATCHOS  // their pages list iOS 11, macOS 10.13 and visionOS 1; the C enum's says watchOS: unavailable
            @available(iOS 11.0, macOS 10.13, visionOS 1.0, *)
            case biometryNotAvailable = -6
            @available(iOS 11.0, macOS 10.13, visionOS 1.0, *)
            case biometryNotEnrolled = -7
            @available(iOS 11.0, macOS 10.13, visionOS 1.0, *)
            case biometryLockout = -8
        #endif
        @available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 2.0, *)
        case appCancel = -9
        @available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 2.0, *)
        case invalidContext = -10
        #if STUB_MACOS || STUB_IOS
            /// https://developer.apple.com/documentation/localauthentication/laerror/code/companionnotavailable (iOS 18, macOS 15)
            @available(iOS 18.0, macOS 15.0, *)
            case companionNotAvailable = -11
        #endif
        #if STUB_MACOS
            /// https://developer.apple.com/documentation/localauthentication/laerror-swift.struct/code/invaliddimensions
            /// (availability "macOS: 12.0.0 -" only; LAError.h `API_AVAILABLE(macos(12.0)) API_UNAVAILABLE(ios, watchos, tvos)`)
            @available(macOS 12.0, *)
            case invalidDimensions = -14
            /// https://developer.apple.com/documentation/localauthentication/laerror/code/biometrynotpaired (macOS 11.2 only)
            @available(macOS 11.2, *)
            case biometryNotPaired = -12
            /// https://developer.apple.com/documentation/localauthentication/laerror/code/biometrydisconnected (macOS 11.2 only)
            @available(macOS 11.2, *)
            case biometryDisconnected = -13
        #endif
        /// https://developer.apple.com/documentation/localauthentication/laerror/code/notinteractive
        case notInteractive = -1004
    }
    public let code: Code
}

    #if !STUB_WATCHOS  // LADomainState: iOS 18, macOS 15, visionOS 2 — watchOS is not listed.
        /// https://developer.apple.com/documentation/localauthentication/ladomainstatebiometry
        @available(iOS 18.0, macOS 15.0, visionOS 2.0, *)
        open class LADomainStateBiometry: NSObject, @unchecked Sendable {
            /// https://developer.apple.com/documentation/localauthentication/ladomainstatebiometry/statehash
            open var stateHash: Data? { nil }
            /// https://developer.apple.com/documentation/localauthentication/ladomainstatebiometry/biometrytype
            open var biometryType: LABiometryType { .none }
        }
        /// https://developer.apple.com/documentation/localauthentication/ladomainstate
        @available(iOS 18.0, macOS 15.0, visionOS 2.0, *)
        open class LADomainState: NSObject, @unchecked Sendable {
            /// https://developer.apple.com/documentation/localauthentication/ladomainstate/biometry
            open var biometry: LADomainStateBiometry { LADomainStateBiometry() }
            /// https://developer.apple.com/documentation/localauthentication/ladomainstate/statehash
            open var stateHash: Data? { nil }
        }
    #endif

    /// https://developer.apple.com/documentation/localauthentication/lacontext — not Sendable.
    @available(iOS 8.0, macOS 10.10, visionOS 1.0, watchOS 3.0, *)
    open class LAContext: NSObject {
        public override init() {}
        /// https://developer.apple.com/documentation/localauthentication/lacontext/canevaluatepolicy(_:error:)
        open func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool { false }
        /// https://developer.apple.com/documentation/localauthentication/lacontext/evaluatepolicy(_:localizedreason:reply:)
        open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String, reply: @escaping @Sendable (Bool, (any Error)?) -> Void) {}
        /// https://developer.apple.com/documentation/localauthentication/lacontext/invalidate()
        @available(iOS 9.0, macOS 10.11, visionOS 1.0, watchOS 3.0, *)
        open func invalidate() {}
        /// https://developer.apple.com/documentation/localauthentication/lacontext/biometrytype
        @available(iOS 11.0, macOS 10.13.2, visionOS 1.0, watchOS 11.0, *)
        open var biometryType: LABiometryType { .none }
        /// https://developer.apple.com/documentation/localauthentication/lacontext/interactionnotallowed
        @available(iOS 11.0, macOS 10.13, visionOS 1.0, watchOS 4.0, *)
        open var interactionNotAllowed: Bool = false
        #if !STUB_WATCHOS
            /// https://developer.apple.com/documentation/localauthentication/lacontext/localizedfallbacktitle (not watchOS)
            open var localizedFallbackTitle: String?
            /// https://developer.apple.com/documentation/localauthentication/lacontext/localizedcanceltitle (not watchOS)
            @available(iOS 10.0, macOS 10.12, visionOS 1.0, *)
            open var localizedCancelTitle: String?
            /// https://developer.apple.com/documentation/localauthentication/lacontext/localizedreason (not watchOS)
            @available(iOS 11.0, macOS 10.13, visionOS 1.0, *)
            open var localizedReason: String = ""
            /// https://developer.apple.com/documentation/localauthentication/lacontext/touchidauthenticationallowablereuseduration (not watchOS)
            @available(iOS 9.0, macOS 10.12, visionOS 1.0, *)
            open var touchIDAuthenticationAllowableReuseDuration: TimeInterval = 0
            /// https://developer.apple.com/documentation/localauthentication/lacontext/domainstate (iOS 18, macOS 15, visionOS 2)
            @available(iOS 18.0, macOS 15.0, visionOS 2.0, *)
            open var domainState: LADomainState { LADomainState() }
            /// https://developer.apple.com/documentation/localauthentication/lacontext/evaluatedpolicydomainstate — deprecated for domainState.
            @available(iOS, introduced: 9.0, deprecated: 18.0, message: "Use domainState.biometry.stateHash")
            @available(macOS, introduced: 10.11, deprecated: 15.0, message: "Use domainState.biometry.stateHash")
            @available(visionOS, introduced: 1.0, deprecated: 2.0, message: "Use domainState.biometry.stateHash")
            open var evaluatedPolicyDomainState: Data? { nil }
        #endif
    }
#endif  // !STUB_TVOS
