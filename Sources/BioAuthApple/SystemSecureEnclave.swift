#if canImport(LocalAuthentication) && canImport(Security) && canImport(CryptoKit) && !os(tvOS)
    import BioAuth
    import BioAuthCore
    import CryptoKit
    import Foundation
    import LocalAuthentication
    import Security

    /// `EnclaveKeyStore` over `SecKey` with `kSecAttrTokenIDSecureEnclave`. Forwarding only.
    package struct SystemSecureEnclave: EnclaveKeyStore {
        package init() {}

        // CryptoKit: `SecureEnclave.isAvailable`
        package var isAvailable: Bool { SecureEnclave.isAvailable }

        private func tagData(_ tag: String) -> Data { Data(tag.utf8) }

        private func failure(_ error: Unmanaged<CFError>?) -> EnclaveFailure {
            guard let error = error?.takeRetainedValue() else { return .status(.errSecParam) }
            let nsError = error as any Error as NSError
            return EnclaveFailure(domain: nsError.domain, code: nsError.code)  // BioAuth classifies the domain
        }

        /// The query that names this package's enclave key and nothing else: the data-protection
        /// keychain (so macOS never falls back to the file-based keychain and its different statuses,
        /// `SecItem.cpp` `SecItemCategorizeQuery` / `SecItemMergeResults`), the private key, the
        /// Secure Enclave token.
        private func keyQuery(_ tag: String) -> [String: Any] {
            [
                kSecClass as String: kSecClassKey,
                kSecAttrApplicationTag as String: tagData(tag),
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                kSecUseDataProtectionKeychain as String: true,
            ]
        }

        private func privateKey(_ tag: String, _ context: (any AuthenticationContext)?) throws(EnclaveFailure) -> SecKey {
            var query = keyQuery(tag)
            query[kSecReturnRef as String] = true
            if let context {
                // A context from elsewhere cannot authorize the key: errSecParam, never silently dropped.
                guard let live = context as? SystemLAContext else { throw .status(.errSecParam) }
                query[kSecUseAuthenticationContext as String] = live.context
            }
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            guard status == errSecSuccess, let result else { throw .status(SecStatus(rawValue: status)) }
            return result as! SecKey  // SecItem.h: kSecReturnRef on kSecClassKey returns a SecKeyRef
        }

        // SecKey.h: `SecKeyCreateRandomKey(CFDictionaryRef parameters, CFErrorRef *error)`
        package func createKey(_ parameters: EnclaveKeyParameters) throws(EnclaveFailure) -> Data {
            guard
                let access = SecAccessControlCreateWithFlags(
                    nil, parameters.accessControl.accessibility.secValue,
                    SecAccessControlCreateFlags(rawValue: parameters.accessControl.flags.rawValue), nil)
            else { throw .status(.errSecParam) }
            let attributes: [String: Any] = [
                kSecAttrKeyType as String: parameters.keyType == .ecSECPrimeRandom ? kSecAttrKeyTypeECSECPrimeRandom : kSecAttrKeyTypeRSA,
                kSecAttrKeySizeInBits as String: parameters.sizeInBits,
                kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
                kSecUseDataProtectionKeychain as String: true,
                kSecPrivateKeyAttrs as String: [
                    kSecAttrIsPermanent as String: true,
                    kSecAttrApplicationTag as String: tagData(parameters.tag),
                    kSecAttrAccessControl as String: access,
                ],
            ]
            var error: Unmanaged<CFError>?
            guard let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else { throw failure(error) }
            return try external(SecKeyCopyPublicKey(key))
        }

        // SecKey.h: `SecKeyCopyExternalRepresentation` of the package key: X9.63 `04‖X‖Y`
        private func external(_ key: SecKey?) throws(EnclaveFailure) -> Data {
            guard let key else { throw .status(.errSecItemNotFound) }
            var error: Unmanaged<CFError>?
            guard let data = SecKeyCopyExternalRepresentation(key, &error) as Data? else { throw failure(error) }
            return data
        }

        package func publicKey(tag: String) throws(EnclaveFailure) -> Data {
            try external(SecKeyCopyPublicKey(try privateKey(tag, nil)))
        }

        // SecKey.h: `SecKeyCreateSignature(key, kSecKeyAlgorithmECDSASignatureMessageX962SHA256, data, error)`
        package func sign(tag: String, message: Data, context: (any AuthenticationContext)?) throws(EnclaveFailure) -> Data {
            let key = try privateKey(tag, context)
            var error: Unmanaged<CFError>?
            guard let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error) as Data? else {
                throw failure(error)
            }
            return signature
        }

        // SecKey.h: `SecKeyCreateDecryptedData(key, kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM, data, error)`
        package func decrypt(tag: String, ciphertext: Data, context: (any AuthenticationContext)?) throws(EnclaveFailure) -> SecretBytes {
            let key = try privateKey(tag, context)
            var error: Unmanaged<CFError>?
            guard
                let plaintext = SecKeyCreateDecryptedData(
                    key, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, ciphertext as CFData, &error) as Data?
            else {
                throw failure(error)
            }
            return SecretBytes(plaintext)
        }

        package func copyPrivateKeyRepresentation(tag: String) throws(EnclaveFailure) -> Data {
            try external(try privateKey(tag, nil))
        }

        // SecItem.h: `SecItemDelete` on kSecClassKey
        package func deleteKey(tag: String) throws(EnclaveFailure) {
            let status = SecItemDelete(keyQuery(tag) as CFDictionary)
            if status != errSecSuccess { throw .status(SecStatus(rawValue: status)) }
        }
    }

    extension DevicePlatform {
        /// The live platform: LocalAuthentication, the data-protection keychain, the Secure Enclave
        /// and, on iOS, App Attest.
        public static var system: DevicePlatform {
            #if canImport(DeviceCheck) && os(iOS)
                DevicePlatform(
                    contexts: SystemContextFactory(), keychain: SystemKeychain(), enclave: SystemSecureEnclave(),
                    appAttest: SystemAppAttest())
            #else
                DevicePlatform(contexts: SystemContextFactory(), keychain: SystemKeychain(), enclave: SystemSecureEnclave())
            #endif
        }
    }
#endif
