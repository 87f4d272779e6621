import BioAuthCore
import Foundation

// The three seams BioAuth is written against. BioAuthApple forwards them to LocalAuthentication,
// Security and the Secure Enclave; BioAuthEmulator implements them on every platform.
// Conformances make no decisions of their own: every policy lives in this module. The seams are
// `package`: an app sees `DevicePlatform` (`.system`, or `EmulatedDevice.platform`) and the APIs
// built on it, never the queries and statuses underneath.

/// An authentication context: what `LAContext` offers (`LAContext.h`).
///
/// A context that evaluated successfully stays authenticated; create a fresh one per attempt
/// (``AuthenticationContextFactory``) to make the user prove presence again.
package protocol AuthenticationContext: AnyObject, Sendable {
    /// `.none` until ``canEvaluatePolicy(_:)`` has been called, then the hardware's type
    /// whatever that call returned ([doc] lacontext/biometrytype).
    var biometryType: BiometryKind { get }
    /// nil: the system's default; `""` hides the fallback button.
    var localizedFallbackTitle: String? { get set }
    /// nil or `""`: the system's default "Cancel".
    var localizedCancelTitle: String? { get set }
    /// The reason shown for keychain and key operations that use this context.
    var localizedReason: String { get set }
    /// When true, anything that needs UI fails instead (LAError -1004, errSecInteractionNotAllowed).
    var interactionNotAllowed: Bool { get set }
    /// Accept a device-unlock biometric match from the last N seconds (at most 300).
    var touchIDAuthenticationAllowableReuseDuration: TimeInterval { get set }
    /// Opaque state of the enrolled biometry. iOS 18+ (`domainState.biometry.stateHash`): set on a
    /// fresh context, nil only when nothing is enrolled; before iOS 18 (`evaluatedPolicyDomainState`):
    /// nil until a biometric pre-flight or evaluation succeeds. Never read nil as "not evaluated".
    var evaluatedPolicyDomainState: Data? { get }

    /// Pre-flight, no UI. Throws the reason the policy cannot be evaluated.
    func canEvaluatePolicy(_ policy: AuthenticationPolicy) throws(LAErrorCode)
    /// Shows the system prompt. Returning normally means the policy was satisfied.
    func evaluatePolicy(_ policy: AuthenticationPolicy, localizedReason: String) async throws(LAErrorCode)
    /// Ends an evaluation in flight (appCancel) and makes later use fail (invalidContext).
    func invalidate()
}

/// Makes a fresh ``AuthenticationContext`` for each attempt.
package protocol AuthenticationContextFactory: Sendable {
    func makeContext() -> any AuthenticationContext
}

/// What to do when an item's ACL needs the user and the context is not yet authenticated (`SecItem.h`).
package enum AuthenticationUI: Sendable, Hashable {
    /// Show the prompt (unless the context has `interactionNotAllowed`).
    case allow
    /// `kSecUseAuthenticationUISkip`: silently leave out items that would need the user.
    case skip
}

/// Attributes of a generic-password item.
package struct KeychainItem: Sendable {
    package var service: String
    package var account: String
    package var accessibility: KeychainAccessibility
    package var accessControl: AccessControl?
    package var synchronizable: Bool

    package init(
        service: String, account: String, accessibility: KeychainAccessibility,
        accessControl: AccessControl? = nil, synchronizable: Bool = false
    ) {
        self.service = service
        self.account = account
        self.accessibility = accessControl?.accessibility ?? accessibility
        self.accessControl = accessControl
        self.synchronizable = synchronizable
    }
}

/// A query for generic-password items of one service.
package struct KeychainQuery: Sendable {
    package var service: String
    /// nil matches every account of the service.
    package var account: String?
    /// `kSecUseAuthenticationContext`: nil means a new context is used once.
    package var context: (any AuthenticationContext)?
    package var authenticationUI: AuthenticationUI

    package init(
        service: String, account: String? = nil, context: (any AuthenticationContext)? = nil, authenticationUI: AuthenticationUI = .allow
    ) {
        self.service = service
        self.account = account
        self.context = context
        self.authenticationUI = authenticationUI
    }
}

/// What an attributes query returns for one item: never its data.
///
/// Deliberately no "is access-controlled" flag: securityd attaches an access-control object to
/// every modern item (`SecDbKeychainItem.m`, `s3dl_item_from_data`: `if (version > 3) …
/// kSecAttrAccessControl`), so the attribute is present whether or not the item needs the user.
/// What does tell is a probe: a UI-skip query leaves out exactly the items that would need
/// authentication (`ProtectedItemStore.unprotectedAccounts()`, `contains(_:)`).
package struct KeychainRecord: Sendable, Hashable {
    package var account: String
    package var accessibility: KeychainAccessibility

    package init(account: String, accessibility: KeychainAccessibility) {
        self.account = account
        self.accessibility = accessibility
    }
}

/// The keychain: `SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate`, `SecItemDelete` for
/// generic passwords, failing with Apple's `OSStatus` codes. Calls are synchronous: they may
/// block while a prompt is shown, so keep them off the main actor.
package protocol KeychainService: Sendable {
    /// Adds an item. Never prompts, whatever its ACL.
    func add(_ item: KeychainItem, data: SecretBytes) throws(SecStatus)
    /// The data of the one item `query` names (`account` must be set).
    func copyData(_ query: KeychainQuery) throws(SecStatus) -> SecretBytes
    /// The attributes of every matching item. Items whose ACL guards reading need authentication
    /// for their attributes too (`SecDbKeychainItem.m`, `ks_decrypt_data`: "Should also try and
    /// decrypt if there are ACL constraints"); with ``AuthenticationUI/skip`` they are left out.
    func copyAttributes(_ query: KeychainQuery) throws(SecStatus) -> [KeychainRecord]
    /// Replaces the data of the one item `query` names. Prompts for access-controlled items.
    func update(_ query: KeychainQuery, data: SecretBytes) throws(SecStatus)
    /// Deletes every matching item. Needs no authentication.
    func delete(_ query: KeychainQuery) throws(SecStatus)
}

/// How a Secure Enclave operation failed: the CFError-returning SecKey APIs surface the LAError
/// itself for authentication failures, and an OSStatus otherwise (Security `OSX/sec/Security/SecItem.m`, `SecErrorGetOSStatus`).
package enum EnclaveFailure: Error, Sendable, Hashable {
    case status(SecStatus)
    case authentication(LAErrorCode)

    /// Classifies a SecKey `CFError` by its domain, as Apple does (`SecErrorGetOSStatus`,
    /// `SecItem.m`): LocalAuthentication errors stay LAErrors (§3.8); `NSOSStatusErrorDomain`
    /// codes are OSStatus; any other domain is errSecInternal — never a foreign code read as an
    /// OSStatus. A Secure Enclave key is a CryptoTokenKit token key, so its operations can fail in
    /// that domain: the authentication outcomes `TKError.h` names keep their meaning —
    /// canceledByUser is the user's cancel, authenticationFailed a failed authentication,
    /// authenticationNeeded an operation that needed a prompt it could not show — and every other
    /// code maps through ``SecStatus/init(cryptoTokenKitError:)`` as `SecItem.m` maps it. Which
    /// code a device reports for which situation is UNCONFIRMED (the emulator's
    /// `keyOperationErrors` plays both domains).
    package init(domain: String, code: Int) {
        switch domain {
        case "com.apple.LocalAuthentication": self = .authentication(LAErrorCode(rawValue: code))
        case CryptoTokenKitError.domain:
            switch code {
            case CryptoTokenKitError.canceledByUser: self = .authentication(.userCancel)
            case CryptoTokenKitError.authenticationFailed: self = .authentication(.authenticationFailed)
            case CryptoTokenKitError.authenticationNeeded: self = .authentication(.notInteractive)
            default: self = .status(SecStatus(cryptoTokenKitError: code))
            }
        case "NSOSStatusErrorDomain": self = .status(Int32(exactly: code).map(SecStatus.init(rawValue:)) ?? .errSecInternal)
        default: self = .status(.errSecInternal)
        }
    }
}

/// Key parameters for `SecKeyCreateRandomKey` with `kSecAttrTokenIDSecureEnclave`.
package struct EnclaveKeyParameters: Sendable, Hashable {
    package enum KeyType: Sendable, Hashable { case ecSECPrimeRandom, rsa }
    package var tag: String
    package var keyType: KeyType
    package var sizeInBits: Int
    package var accessControl: AccessControl

    package init(tag: String, keyType: KeyType = .ecSECPrimeRandom, sizeInBits: Int = 256, accessControl: AccessControl) {
        self.tag = tag
        self.keyType = keyType
        self.sizeInBits = sizeInBits
        self.accessControl = accessControl
    }
}

/// Permanent Secure Enclave keys, addressed by application tag.
package protocol EnclaveKeyStore: Sendable {
    /// Whether the device has a Secure Enclave.
    var isAvailable: Bool { get }
    /// Generates a key inside the enclave; returns its package key, X9.63 (65 bytes).
    func createKey(_ parameters: EnclaveKeyParameters) throws(EnclaveFailure) -> Data
    /// The package key, X9.63. Needs no authentication.
    func publicKey(tag: String) throws(EnclaveFailure) -> Data
    /// `ecdsaSignatureMessageX962SHA256`: SHA-256 of `message`, signature in DER.
    func sign(tag: String, message: Data, context: (any AuthenticationContext)?) throws(EnclaveFailure) -> Data
    /// `eciesEncryptionCofactorVariableIVX963SHA256AESGCM` decryption with the enclave key.
    func decrypt(tag: String, ciphertext: Data, context: (any AuthenticationContext)?) throws(EnclaveFailure) -> SecretBytes
    /// `SecKeyCopyExternalRepresentation` of the private key: always fails for enclave keys.
    func copyPrivateKeyRepresentation(tag: String) throws(EnclaveFailure) -> Data
    /// Deletes the key. Needs no authentication.
    func deleteKey(tag: String) throws(EnclaveFailure)
}

/// One device's LocalAuthentication, keychain and Secure Enclave: `DevicePlatform.system` from
/// `BioAuthApple` on a device, `EmulatedDevice.platform` in tests.
public struct DevicePlatform: Sendable {
    package var contexts: any AuthenticationContextFactory
    package var keychain: any KeychainService
    package var enclave: any EnclaveKeyStore
    /// App Attest; nil where the platform has none to offer (an emulated device without it).
    package var appAttest: (any AppAttestService)?

    package init(
        contexts: any AuthenticationContextFactory, keychain: any KeychainService, enclave: any EnclaveKeyStore,
        appAttest: (any AppAttestService)? = nil
    ) {
        self.contexts = contexts
        self.keychain = keychain
        self.enclave = enclave
        self.appAttest = appAttest
    }
}

/// What `DCAppAttestService` reports (`DCError.Code`, DeviceCheck `DCError.h`).
package enum AppAttestFailure: Error, Sendable, Hashable {
    /// `DCErrorFeatureUnsupported`: the Simulator, a Mac without App Attest, an old OS.
    case featureUnsupported
    /// `DCErrorInvalidKey`: an unknown key id, or a key attested before.
    case invalidKey
    /// `DCErrorInvalidInput`.
    case invalidInput
    /// `DCErrorServerUnavailable`: Apple's attestation service could not be reached; retry later.
    case serverUnavailable
    /// `DCErrorUnknownSystemFailure`, or a code this package does not know.
    case unknownSystemFailure
}

/// `DCAppAttestService.shared` (DeviceCheck, iOS 14+): a key in the Secure Enclave that Apple
/// attests belongs to this genuine app on a genuine device.
package protocol AppAttestService: Sendable {
    /// `isSupported`.
    var isSupported: Bool { get }
    /// `generateKey(completionHandler:)`: the new key's id (Apple hands it out base64-encoded; here the 32 bytes).
    func generateKey() async throws(AppAttestFailure) -> Data
    /// `attestKey(_:clientDataHash:completionHandler:)`: the attestation object (CBOR).
    func attestKey(_ keyID: Data, clientDataHash: Data) async throws(AppAttestFailure) -> Data
    /// `generateAssertion(_:clientDataHash:completionHandler:)`: the assertion object (CBOR).
    func generateAssertion(_ keyID: Data, clientDataHash: Data) async throws(AppAttestFailure) -> Data
}
