import BioAuthCore
import Crypto
import Foundation

/// A P-256 key in the Secure Enclave that signs only after the user proves presence, once per signature.
///
/// The key is created with `.privateKeyUsage` and, by default, `.biometryCurrentSet`,
/// `WhenPasscodeSetThisDeviceOnly`: it cannot leave the enclave, cannot be used without a fresh
/// match, and dies when a finger or face is enrolled (SecAccessControl.h `biometryCurrentSet`: "When fingers are added or removed, the item
/// is invalidated").
public struct BiometricSigner: Sendable {
    public let platform: DevicePlatform
    public let tag: KeyTag
    public let policy: ProtectionPolicy

    public init(platform: DevicePlatform, tag: KeyTag, policy: ProtectionPolicy = .biometryCurrentSet) {
        self.platform = platform
        self.tag = tag
        self.policy = policy
    }

    /// Creates a new enclave key under `tag` and returns its public key. No prompt.
    ///
    /// - Throws: ``BioAuthError/Code/duplicateItem`` when a usable key is already there: that key
    ///   may be registered with a server, so replacing it is ``replaceKey()``, never a side effect.
    ///   A key the platform invalidated (an enrollment change) is not usable and is cleared first.
    @discardableResult
    public func createKey() throws(BioAuthError) -> DevicePublicKey {
        if hasKey { throw BioAuthError(.duplicateItem) }
        return try replaceKey()
    }

    /// Deletes any key under `tag`, usable or not, and creates a new one. No prompt. A server that
    /// knew the old key must be told (re-enrolment), or this device can no longer sign in to it.
    @discardableResult
    public func replaceKey() throws(BioAuthError) -> DevicePublicKey {
        guard platform.enclave.isAvailable else { throw BioAuthError(.secureEnclaveUnavailable) }
        let access: AccessControl
        do {
            access = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: [.privateKeyUsage, policy.flags])
        } catch { throw BioAuthError(status: error) }
        deleteKey()
        do {
            let x963 = try platform.enclave.createKey(EnclaveKeyParameters(tag: tag.rawValue, accessControl: access))
            return try DevicePublicKey(x963Representation: x963)
        } catch let failure as EnclaveFailure {
            if failure == .status(.errSecAuthFailed) { throw BioAuthError(.passcodeNotSet, status: .errSecAuthFailed) }
            throw BioAuthError(enclave: failure)
        } catch { throw BioAuthError(.cryptographyFailure) }
    }

    /// The public key. No prompt.
    public func publicKey() throws(BioAuthError) -> DevicePublicKey {
        do {
            return try DevicePublicKey(x963Representation: try platform.enclave.publicKey(tag: tag.rawValue))
        } catch let failure as EnclaveFailure { throw BioAuthError(enclave: failure) } catch { throw BioAuthError(.cryptographyFailure) }
    }

    /// Whether a key is found under the tag. Not proof that it still signs: on a device an
    /// enrollment change most likely leaves a `.biometryCurrentSet` enclave key findable and
    /// only its use fails (the keychain row of a token key carries no biometric ACL: `SecItem.m`).
    public var hasKey: Bool { (try? platform.enclave.publicKey(tag: tag.rawValue)) != nil }

    /// Signs `message` (ECDSA P-256, SHA-256 applied by the enclave) after one prompt.
    ///
    /// - Throws: ``BioAuthError/Code/keyUnavailable`` when the key is missing, or when the user
    ///   matched and the enclave still refused the key: the enrollment change invalidated it.
    public func sign(_ message: Data, prompt: Prompt) async throws(BioAuthError) -> P256.Signing.ECDSASignature {
        try await sign(message, prompt: prompt, enrolledDomainState: nil).signature
    }

    /// ``sign(_:prompt:)``, telling a dead key by `enrolledDomainState` too
    /// (``signAfterEvaluation(_:context:enrolledDomainState:)``), and returning the domain state of
    /// the context that was evaluated for it (nil where the platform gives none).
    package func sign(_ message: Data, prompt: Prompt, enrolledDomainState: Data?) async throws(BioAuthError) -> (
        signature: P256.Signing.ECDSASignature, domainState: Data?
    ) {
        let context = try await platform.context(for: policy, prompt: prompt)
        defer { context.invalidate() }
        let evaluated = context.evaluatedPolicyDomainState
        // The key operation prompts itself for a policy without an evaluation: off the cooperative threads.
        let signature = try await PromptingCall.run { () throws(BioAuthError) in
            try self.signAfterEvaluation(message, context: context, enrolledDomainState: enrolledDomainState)
        }
        return (signature, evaluated)
    }

    /// Signs with a context that was just evaluated for ``policy``. A refusal of the key itself
    /// after a successful match cannot be the user's doing; it reads as
    /// ``BioAuthError/Code/keyUnavailable`` (the key's invalidation) when either
    /// - it is an OSStatus (authentication failed, not found), or
    /// - in any domain — OSStatus, LAError or CryptoTokenKit, whichever a device uses (UNCONFIRMED) —
    ///   the evaluated context's domain state is not `enrolledDomainState`, the one the key was
    ///   registered with: the biometry changed, and a `.biometryCurrentSet` key dies with exactly
    ///   that (SecAccessControl.h).
    ///
    /// Otherwise an LAError from the key operation stays what it is: the context was not really
    /// authenticated (a hooked `evaluatePolicy` reports a match the enclave never saw, and leaves
    /// the domain state unchanged). A policy without its own evaluation (`.devicePasscode`)
    /// prompts inside the key operation, so its refusal stays what it is.
    package func signAfterEvaluation(_ message: Data, context: any AuthenticationContext, enrolledDomainState: Data? = nil)
        throws(BioAuthError) -> P256.Signing.ECDSASignature
    {
        do { return try sign(message, context: context) } catch {
            guard policy.evaluationPolicy != nil, error.code != .userCancelled else { throw error }
            // errSecItemNotFound already reads as keyUnavailable (``BioAuthError/init(enclave:)``);
            // errSecAuthFailed after a match is the other status reported for a dead key (UNCONFIRMED).
            if error.laError == nil, error.code == .authenticationFailed { throw BioAuthError(.keyUnavailable, status: error.status) }
            if let enrolledDomainState, let evaluated = context.evaluatedPolicyDomainState, evaluated != enrolledDomainState {
                throw BioAuthError(.keyUnavailable, status: error.status)
            }
            throw error
        }
    }

    /// Signs the protocol-v1 message of a server challenge after one prompt. Send
    /// `derRepresentation`, base64url-encoded, as the finish request's `signature`.
    public func sign(_ challenge: ChallengeEnvelope, prompt: Prompt) async throws(BioAuthError) -> P256.Signing.ECDSASignature {
        let message: SignedMessage
        do { message = try challenge.message() } catch { throw BioAuthError(.invalidParameters) }
        return try await sign(message.encoded, prompt: prompt)
    }

    /// Signs with a context the caller already authenticated.
    package func sign(_ message: Data, context: any AuthenticationContext) throws(BioAuthError) -> P256.Signing.ECDSASignature {
        let der: Data
        do { der = try platform.enclave.sign(tag: tag.rawValue, message: message, context: context) } catch {
            throw BioAuthError(enclave: error)
        }
        do { return try P256.Signing.ECDSASignature(derRepresentation: der) } catch { throw BioAuthError(.cryptographyFailure) }
    }

    /// Decrypts an `eciesEncryptionCofactorVariableIVX963SHA256AESGCM` ciphertext after one prompt.
    public func decrypt(_ ciphertext: Data, prompt: Prompt) async throws(BioAuthError) -> SecretBytes {
        let context = try await platform.context(for: policy, prompt: prompt)
        defer { context.invalidate() }
        return try await PromptingCall.run { () throws(BioAuthError) in
            do throws(EnclaveFailure) {
                return try self.platform.enclave.decrypt(tag: self.tag.rawValue, ciphertext: ciphertext, context: context)
            } catch {
                throw BioAuthError(enclave: error)
            }
        }
    }

    /// Encrypts to this key's public key. Public-key operation: no prompt.
    public func encrypt(_ plaintext: SecretBytes) throws(BioAuthError) -> Data {
        let key = try publicKey()
        do {
            let recipient = try P256.KeyAgreement.PublicKey(x963Representation: key.x963Representation)
            return try ECIES.encrypt(plaintext.data, to: recipient)
        } catch { throw BioAuthError(.cryptographyFailure) }
    }

    /// Deletes the key if present. No prompt.
    public func deleteKey() {
        try? platform.enclave.deleteKey(tag: tag.rawValue)
    }
}
