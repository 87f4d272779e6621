import BioAuth
import BioAuthCore
import Foundation
import Synchronization

/// An emulated iPhone: LocalAuthentication, the keychain with access control and the Secure
/// Enclave, with Apple's documented semantics, fully controlled by the test.
///
/// Like NIO's `EmbeddedEventLoop`, nothing happens on its own: the person at the prompt does what
/// the script says (``script(_:)``; ``unscriptedAction`` when the script is empty), time is an
/// injected `WallClock`, and the device's owner (or an attacker) changes its state with methods
/// such as ``enrollBiometry()``, ``removePasscode()`` or ``jailbreakHookEnabled``. Each behaviour
/// cites its source; `docs/EmulatorFidelity.md` lists what is emulated, approximated or absent.
///
/// It offers nothing a real device lacks: no private-key export, no reading of access-controlled
/// items without authentication.
public final class EmulatedDevice: Sendable {
    /// Fixed facts about the device and the behaviours Apple leaves unspecified.
    public struct Configuration: Sendable {
        public var biometry: BiometryKind
        public var hasSecureEnclave: Bool
        /// Consecutive failed matches before biometry locks out (5: iOS 9 `LAContext.h`;
        /// [doc] LAEnvironment.MechanismBiometry.isLockedOut).
        public var lockoutThreshold: Int
        /// Failed matches within one prompt before it ends with authenticationFailed (-1).
        /// UNCONFIRMED (3 reported for Touch ID, 2 for Face ID: flutter/flutter#148947, react-native-biometrics README).
        public var perPromptFailureLimit: Int
        /// What reading a `.biometryCurrentSet` item or key reports after an enrollment change.
        /// UNCONFIRMED (SecAccessControl.h says only "invalidated"; Valet and Bitwarden treat the item as gone): not found by default, an
        /// authentication failure also reported.
        public var invalidatedRead: InvalidatedRead
        /// Whether adding an item with a biometric ACL fails (errSecAuthFailed) when nothing is
        /// enrolled. UNCONFIRMED (react-native-keychain #752 reports it does); false: the add succeeds.
        public var biometricItemsNeedEnrollment: Bool
        /// `LATouchIDAuthenticationMaximumAllowableReuseDuration` (300 s, `LAContext.h`).
        public var maximumReuseDuration: TimeInterval
        /// Which domain-state API the app's OS offers. Default: `LAContext.domainState`, which every
        /// OS this package supports has (iOS 18, macOS 15, visionOS 2 — `LADomainState.h`); the live
        /// seam reads it. `evaluatedPolicyDomainState` is deprecated on all of them.
        public var domainStateAPI: DomainStateAPI
        /// Whether looking up a Secure Enclave key that an enrollment change invalidated (its
        /// public key, `kSecReturnRef`) still succeeds. UNCONFIRMED. Default `.succeeds`: for token
        /// (Secure Enclave) keys the keychain row carries no biometric ACL — `SecItem.m` removes
        /// `kSecAttrAccessControl` from token items and leaves enforcement to the token — so only
        /// the key operation (sign, decrypt) fails. `.fails` reports ``invalidatedRead`` on lookup too.
        public var invalidatedKeyLookup: InvalidatedKeyLookup
        /// The app's `DCAppAttestService`; nil: none (as in the Simulator), so enrolment is unattested.
        public var appAttest: EmulatedAppAttest?
        /// In which error domain a refused Secure Enclave key operation (sign, decrypt) reports the
        /// authentication outcome. UNCONFIRMED: `SecKey.h` says only that a CFError is returned,
        /// `SecCTKKey.m` passes the token operation's error through, and a field report
        /// (EllipticCurveKeyPair) shows the LAError itself (default); an enclave key is a token key, and
        /// `TKError` codes (canceledByUser, authenticationFailed, authenticationNeeded) are
        /// reported from token operations too.
        public var keyOperationErrors: KeyOperationErrors
        /// How a signature with a dead key (an enrollment change invalidated it) fails. Default
        /// `.osStatus` (UNCONFIRMED, ``DeadKeyErrors``).
        public var deadKeyErrors: DeadKeyErrors = .osStatus
        /// What turning the passcode off does to its Secure Enclave keys. Default
        /// `.foundButUnusable`, as a device was reported to do (UNCONFIRMED, ``PasscodeRemovalKeys``).
        public var passcodeRemovalKeys: PasscodeRemovalKeys = .foundButUnusable
        /// Failed matches before a prompt shows its fallback button: Touch ID after the first
        /// ("because the system doesn't recognize the presented finger"), Face ID and Optic ID
        /// after the second — the first failure offers "Try Face ID Again" ("after several failed
        /// attempts to recognize the user's face": `LAContext.localizedFallbackTitle`'s page).
        /// The exact count for a face is UNCONFIRMED; set it to model another.
        public var fallbackAfterFailures: Int {
            get { fallbackAfterFailuresSetting ?? (biometry == .touchID ? 1 : 2) }
            set { fallbackAfterFailuresSetting = newValue }
        }
        private var fallbackAfterFailuresSetting: Int?
        /// macOS: whether the biometry is built in or a Magic Keyboard with Touch ID that is not
        /// paired or not connected (`LAError.h`: biometryNotPaired -12, biometryDisconnected -13,
        /// macOS 11.2). Default `.builtIn`.
        public var biometricAccessory: BiometricAccessory
        public var clock: any WallClock

        public init(
            biometry: BiometryKind = .faceID, hasSecureEnclave: Bool = true, lockoutThreshold: Int = 5,
            perPromptFailureLimit: Int = 3, invalidatedRead: InvalidatedRead = .itemNotFound,
            biometricItemsNeedEnrollment: Bool = false, maximumReuseDuration: TimeInterval = 300,
            domainStateAPI: DomainStateAPI = .domainState, invalidatedKeyLookup: InvalidatedKeyLookup = .succeeds,
            appAttest: EmulatedAppAttest? = nil, keyOperationErrors: KeyOperationErrors = .localAuthentication,
            biometricAccessory: BiometricAccessory = .builtIn, clock: any WallClock = SystemWallClock()
        ) {
            self.keyOperationErrors = keyOperationErrors
            self.biometricAccessory = biometricAccessory
            self.appAttest = appAttest
            self.domainStateAPI = domainStateAPI
            self.invalidatedKeyLookup = invalidatedKeyLookup
            self.biometry = biometry
            self.hasSecureEnclave = hasSecureEnclave
            self.lockoutThreshold = lockoutThreshold
            self.perPromptFailureLimit = perPromptFailureLimit
            self.invalidatedRead = invalidatedRead
            self.biometricItemsNeedEnrollment = biometricItemsNeedEnrollment
            self.maximumReuseDuration = maximumReuseDuration
            self.clock = clock
        }
    }

    /// What turning the passcode off does to `WhenPasscodeSetThisDeviceOnly` Secure Enclave keys
    /// (``Configuration/passcodeRemovalKeys``). UNCONFIRMED: `SecItem.h` says the items are
    /// deleted; a device report shows such a private key still found afterwards, its use failing.
    public enum PasscodeRemovalKeys: Sendable, Hashable, CaseIterable {
        /// Still found (as ``Configuration/invalidatedKeyLookup`` says), unusable: signing fails as a dead key's.
        case foundButUnusable
        /// Deleted, like the keychain items.
        case deleted
    }

    /// How signing with a key an enrollment change invalidated fails (``Configuration/deadKeyErrors``).
    /// UNCONFIRMED: `SecKey.h` does not say; a developer-forum report shows a CryptoTokenKit error
    /// with no prompt after the key was found.
    public enum DeadKeyErrors: Sendable, Hashable, CaseIterable {
        /// An OSStatus: ``Configuration/invalidatedRead``'s status (item not found, or authentication failed).
        case osStatus
        /// `com.apple.LocalAuthentication` authenticationFailed (-1).
        case localAuthentication
        /// `CryptoTokenKit` authenticationFailed (-5), as `SecCTKKey.m` passes a token's error through.
        case cryptoTokenKit
    }

    /// The error domain of a refused key operation (``Configuration/keyOperationErrors``).
    public enum KeyOperationErrors: Sendable, Hashable, CaseIterable {
        /// `com.apple.LocalAuthentication`: the LAError of the prompt.
        case localAuthentication
        /// `CryptoTokenKit`: userCancel → canceledByUser (-4), notInteractive → authenticationNeeded
        /// (-9), any other refusal → authenticationFailed (-5).
        case cryptoTokenKit
    }

    /// Where the biometric sensor is (``Configuration/biometricAccessory``).
    public enum BiometricAccessory: Sendable, Hashable, CaseIterable {
        /// In the device (every iPhone, iPad and laptop Mac).
        case builtIn
        /// A Magic Keyboard with Touch ID, not paired with this Mac: biometryNotPaired (-12).
        case notPaired
        /// A paired Magic Keyboard with Touch ID that is not connected now: biometryDisconnected (-13).
        case disconnected
    }

    /// What an invalidated item or key reports when read (the two statuses reported in the field).
    public enum InvalidatedRead: Sendable, Hashable {
        /// errSecItemNotFound (-25300).
        case itemNotFound
        /// errSecAuthFailed (-25293).
        case authenticationFailed
    }

    /// What looking up an invalidated Secure Enclave key does (``Configuration/invalidatedKeyLookup``).
    public enum InvalidatedKeyLookup: Sendable, Hashable, CaseIterable {
        /// The key is found and its public key exported; signing and decrypting fail.
        case succeeds
        /// The lookup fails as reading an invalidated item does (``Configuration/invalidatedRead``).
        case fails
    }

    /// Where a context's domain state comes from.
    public enum DomainStateAPI: Sendable, Hashable {
        /// `evaluatedPolicyDomainState` (deprecated in iOS 18): nil until `canEvaluatePolicy`
        /// succeeds for a biometric policy or a biometric evaluation succeeds (`LAContext.h`).
        case evaluatedPolicyDomainState
        /// iOS 18 / macOS 15 / visionOS 2 `LAContext.domainState.biometry.stateHash`: available on a
        /// fresh context, nil only when nothing is enrolled (`LADomainState.h`). When it is populated
        /// relative to `canEvaluatePolicy` is UNCONFIRMED (LADomainState.h does not say); modelled as always.
        case domainState
        /// UNCONFIRMED, the most pessimistic reading: no domain state on a fresh context even after
        /// `canEvaluatePolicy`; only a successful biometric evaluation sets it on its context.
        /// Nothing can then be compared before a prompt, and a dead key is known only after a match.
        case onlyAfterEvaluation
    }

    /// What the person at a prompt does next. The description never shows a passcode.
    public enum PromptAction: Sendable, Hashable, Codable, CustomStringConvertible {
        /// Presents an enrolled face or finger. At a passcode screen: types the correct passcode.
        case match
        /// Presents a face or finger that is not enrolled. At a passcode screen: a wrong passcode.
        case noMatch
        /// Types this passcode (moves a `.deviceOwnerAuthentication` prompt to the passcode screen).
        case passcode(String)
        /// Taps Cancel (LAError -2).
        case cancel
        /// Taps the fallback button; with a hidden or not-yet-shown button it is treated as Cancel.
        case fallback
        /// The system interrupts, e.g. the app goes to the background (LAError -4).
        case systemCancel
        /// Leaves the prompt open until the app calls `invalidate()` (LAError -9).
        case hold

        public var description: String {
            switch self {
            case .match: "match"
            case .noMatch: "noMatch"
            case .passcode: "passcode(redacted)"
            case .cancel: "cancel"
            case .fallback: "fallback"
            case .systemCancel: "systemCancel"
            case .hold: "hold"
            }
        }
    }

    /// Where a prompt came from.
    public enum PromptSource: String, Sendable, Hashable { case evaluatePolicy, keychain, secureEnclave }

    /// A prompt the device showed.
    public struct PromptRecord: Sendable, Hashable {
        public var source: PromptSource
        package var policy: AuthenticationPolicy
        public var reason: String
        /// The fallback button's title, nil when hidden (`localizedFallbackTitle == ""`).
        public var fallbackTitle: String?
        public var cancelTitle: String
    }

    /// An item a jailbreak keychain dump recovers: only items without access control.
    public struct DumpedItem: Sendable, Hashable {
        public var service: String
        public var account: String
        public var data: SecretBytes
    }

    public let configuration: Configuration
    let state: Mutex<State>

    /// A device with a passcode and one enrolled face or finger, unless told otherwise.
    public init(configuration: Configuration = Configuration(), passcode: String? = "123456", enrolled: Bool = true) {
        self.configuration = configuration
        var initial = State()
        initial.passcode = passcode
        if enrolled && configuration.biometry != .none { initial.enrolled = [Self.newIdentity()] }
        state = Mutex(initial)
    }

    public convenience init(biometry: BiometryKind, clock: any WallClock = SystemWallClock()) {
        self.init(configuration: Configuration(biometry: biometry, clock: clock))
    }

    /// The three seams, for the client API.
    public var platform: DevicePlatform {
        DevicePlatform(
            contexts: EmulatedContextFactory(device: self), keychain: EmulatedKeychain(device: self),
            enclave: EmulatedSecureEnclave(device: self),
            appAttest: configuration.appAttest.map(EmulatedAppAttestService.init))
    }

    /// A fresh context, as `LAContext()`.
    package func makeContext() -> EmulatedLAContext {
        let id = state.withLock { state in
            state.nextContextID += 1
            state.contexts[state.nextContextID] = ContextRecord()
            return state.nextContextID
        }
        return EmulatedLAContext(device: self, id: id)
    }

    /// What a reinstall leaves of the app's keychain. **Unknown, configurable:** Apple documents
    /// neither that keychain items outlive the app nor whether Secure Enclave keys do
    /// (`docs/EmulatorFidelity.md`; `docs/DeviceChecklist.md` row 16 records a real device).
    public enum ReinstallKeychain: Sendable, Hashable {
        /// Every item stays, the Secure Enclave device key with the saved registration.
        case kept
        /// The items stay, the Secure Enclave keys do not: the app must enrol again.
        case secureEnclaveKeysLost
        /// Nothing stays.
        case erased
    }

    /// The app deleted and installed again: its App Attest keys are gone
    /// (``EmulatedAppAttest/reinstall()``; "Establishing your app's integrity": they do not survive
    /// a reinstall), and of its keychain what `keychain` says.
    public func reinstallApp(keychain: ReinstallKeychain = .kept) {
        configuration.appAttest?.reinstall()
        state.withLock { state in
            switch keychain {
            case .kept: break
            case .secureEnclaveKeysLost: state.keys.removeAll()
            case .erased:
                state.keys.removeAll()
                state.items.removeAll()
            }
        }
    }

    // MARK: - Scripting the person

    /// Appends actions the person will take at the next prompts, in order.
    public func script(_ actions: PromptAction...) { state.withLock { $0.script.append(contentsOf: actions) } }

    /// Actions scripted but not yet taken.
    public var pendingActions: [PromptAction] { state.withLock { $0.script } }

    /// What the person does when the script is empty (default: `.match`, the owner is present).
    public var unscriptedAction: PromptAction {
        get { state.withLock { $0.unscripted } }
        set { state.withLock { $0.unscripted = newValue } }
    }

    /// Prompts shown so far.
    public var promptCount: Int { state.withLock { $0.prompts.count } }
    public var prompts: [PromptRecord] { state.withLock { $0.prompts } }
}

extension EmulatedDevice {
    /// A major OS update changes the domain state without any enrollment change ("can change
    /// exceptionally between major OS versions", LAContext.h; forums thread 802782). Items stay valid.
    public func changeDomainStateAsAfterOSUpdate() {
        state.withLock { $0.osDomainSalt += 1 }
    }
}

extension EmulatedDevice.Configuration {
    /// The status of reading an invalidated item or key.
    package var invalidatedItemStatus: SecStatus {
        switch invalidatedRead {
        case .itemNotFound: .errSecItemNotFound
        case .authenticationFailed: .errSecAuthFailed
        }
    }

    /// The status of adding a biometric-ACL item with nothing enrolled, if it fails.
    package var bioACLAddWithoutEnrollmentStatus: SecStatus? { biometricItemsNeedEnrollment ? .errSecAuthFailed : nil }
}
