import BioAuth
import BioAuthCore
import Crypto
import Foundation
import Synchronization

/// The Secure Enclave of an ``EmulatedDevice``: P-256 keys that never leave it
/// (SecItem.h `kSecAttrTokenIDSecureEnclave`, SecKey.h). Keys are software keys held inside the emulator; there is no API
/// that returns private-key bytes.
package struct EmulatedSecureEnclave: EnclaveKeyStore {
    package let device: EmulatedDevice
    package init(device: EmulatedDevice) { self.device = device }

    package var isAvailable: Bool { device.configuration.hasSecureEnclave }

    package func createKey(_ parameters: EnclaveKeyParameters) throws(EnclaveFailure) -> Data {
        // No enclave (simulator, old device) → -25293 (EllipticCurveKeyPair #19, #25).
        guard device.configuration.hasSecureEnclave else { throw .status(.errSecAuthFailed) }
        // Only 256-bit EC keys (kSecAttrTokenIDSecureEnclave, SecItem.h). The exact status is approximated.
        guard parameters.keyType == .ecSECPrimeRandom, parameters.sizeInBits == 256 else { throw .status(.errSecParam) }
        let result: Result<Data, EnclaveFailure> = device.state.withLock { state in
            if parameters.accessControl.accessibility == .whenPasscodeSetThisDeviceOnly && state.passcode == nil {
                return .failure(.status(.errSecAuthFailed))
            }
            if state.keys.contains(where: { $0.tag == parameters.tag }) { return .failure(.status(.errSecDuplicateItem)) }
            let key = P256.Signing.PrivateKey()
            state.keys.append(StoredKey(tag: parameters.tag, privateKey: key, accessControl: parameters.accessControl))
            return .success(key.publicKey.x963Representation)
        }
        return try result.get()
    }

    package func publicKey(tag: String) throws(EnclaveFailure) -> Data {
        try withKey(tag, lookupOnly: true) { key, _ in .success(key.privateKey.publicKey.x963Representation) }
    }

    package func sign(tag: String, message: Data, context: (any AuthenticationContext)?) throws(EnclaveFailure) -> Data {
        try withKey(tag) { key, state in
            if let failure = authorizeKeyOperation(key, context, &state) { return .failure(failure) }
            guard let signature = try? key.privateKey.signature(for: message) else { return .failure(.status(.errSecParam)) }
            return .success(signature.derRepresentation)
        }
    }

    package func decrypt(tag: String, ciphertext: Data, context: (any AuthenticationContext)?) throws(EnclaveFailure) -> SecretBytes {
        try withKey(tag) { key, state in
            if let failure = authorizeKeyOperation(key, context, &state) { return .failure(failure) }
            guard let agreementKey = try? P256.KeyAgreement.PrivateKey(rawRepresentation: key.privateKey.rawRepresentation),
                let plaintext = try? ECIES.decrypt(ciphertext, with: agreementKey)
            else { return .failure(.status(.errSecParam)) }  // "Failed to aes-gcm decrypt" → errSecParam (SecKeyAdaptors.m)
            return .success(SecretBytes(plaintext))
        }
    }

    /// Enclave private keys are not exportable (`SecKey.h`); the exact status is approximated.
    package func copyPrivateKeyRepresentation(tag: String) throws(EnclaveFailure) -> Data {
        _ = try publicKey(tag: tag)
        throw .status(.errSecUnimplemented)
    }

    package func deleteKey(tag: String) throws(EnclaveFailure) {
        let removed = device.state.withLock { state in
            let before = state.keys.count
            state.keys.removeAll { $0.tag == tag }
            return before != state.keys.count
        }
        if !removed { throw .status(.errSecItemNotFound) }
    }

    /// Finds the key. A lookup of an invalidated key follows ``EmulatedDevice/Configuration/invalidatedKeyLookup``;
    /// a key operation on one always fails. A key operation while the device is locked fails with
    /// errSecInteractionNotAllowed when the key's data-protection class is unavailable
    /// (`WhenPasscodeSetThisDeviceOnly`: usable only while unlocked, `SecItem.h`).
    private func withKey<T>(_ tag: String, lookupOnly: Bool = false, _ body: (StoredKey, inout State) -> Result<T, EnclaveFailure>)
        throws(EnclaveFailure) -> T
    {
        let result: Result<T, EnclaveFailure> = device.state.withLock { state in
            guard let key = state.keys.first(where: { $0.tag == tag }) else { return .failure(.status(.errSecItemNotFound)) }
            if key.invalidated && (!lookupOnly || device.configuration.invalidatedKeyLookup == .fails) {
                guard !lookupOnly else { return .failure(.status(device.configuration.invalidatedItemStatus)) }
                switch device.configuration.deadKeyErrors {
                case .osStatus: return .failure(.status(device.configuration.invalidatedItemStatus))
                case .localAuthentication: return .failure(.authentication(.authenticationFailed))
                case .cryptoTokenKit:
                    return .failure(EnclaveFailure(domain: CryptoTokenKitError.domain, code: CryptoTokenKitError.authenticationFailed))
                }
            }
            if !lookupOnly && !state.classKeyAvailable(key.accessControl.accessibility) {
                return .failure(.status(.errSecInteractionNotAllowed))
            }
            return body(key, &state)
        }
        return try result.get()
    }

    /// With `.privateKeyUsage` the constraints guard sign and compute-key; with constraints and
    /// no `.privateKeyUsage` the operation is not in the ACL at all (`SecAccessControl.m`; LAError -1009).
    /// Key operations surface the LAError itself, not an OSStatus (SecKey.h: the CFError-returning SecKey APIs pass the LAError through).
    private func authorizeKeyOperation(_ key: StoredKey, _ context: (any AuthenticationContext)?, _ state: inout State) -> EnclaveFailure? {
        guard key.accessControl.permitsKeyOperations else { return .authentication(.aclOperationNotAllowed) }
        guard key.accessControl.guardsKeyOperations else { return nil }
        switch device.authorize(
            key.accessControl, context: (context as? EmulatedLAContext)?.id, skipUI: false, source: .secureEnclave, state: &state)
        {
        case .allowed: return nil
        case .skip: return .status(.errSecItemNotFound)
        case .denied(let code):
            switch device.configuration.keyOperationErrors {
            case .localAuthentication: return .authentication(code)
            case .cryptoTokenKit: return EnclaveFailure(domain: CryptoTokenKitError.domain, code: Self.tokenError(for: code))
            }
        }
    }

    /// The `TKError` code a token reports for a refused authentication (``EmulatedDevice/KeyOperationErrors/cryptoTokenKit``).
    private static func tokenError(for code: LAErrorCode) -> Int {
        switch code {
        case .userCancel: CryptoTokenKitError.canceledByUser
        case .notInteractive: CryptoTokenKitError.authenticationNeeded
        default: CryptoTokenKitError.authenticationFailed
        }
    }
}
