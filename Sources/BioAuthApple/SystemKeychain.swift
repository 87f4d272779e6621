#if canImport(LocalAuthentication) && canImport(Security) && !os(tvOS)
    import BioAuth
    import BioAuthCore
    import Foundation
    import LocalAuthentication
    import Security

    /// `KeychainService` over `SecItem*`. Forwarding only: BioAuth builds the queries' meaning.
    package struct SystemKeychain: KeychainService {
        package init() {}

        private func base(_ service: String, _ account: String?) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecUseDataProtectionKeychain as String: true,
            ]
            if let account { query[kSecAttrAccount as String] = account }
            return query
        }

        /// A context from anywhere else cannot authorize a real keychain call: errSecParam, never a
        /// silently dropped context (which would mean a second prompt).
        private func apply(_ query: KeychainQuery, to dictionary: inout [String: Any]) throws(SecStatus) {
            if let context = query.context {
                guard let live = context as? SystemLAContext else { throw .errSecParam }
                dictionary[kSecUseAuthenticationContext as String] = live.context
            }
        }

        /// A read's query: ``apply(_:to:)``, and ``AuthenticationUI/skip`` as
        /// `kSecUseAuthenticationUISkip` — SecItem.h: still supported, for `SecItemCopyMatching`
        /// only (the other values are deprecated since iOS 14), so never on a write.
        private func applyToRead(_ query: KeychainQuery, to dictionary: inout [String: Any]) throws(SecStatus) {
            try apply(query, to: &dictionary)
            if query.authenticationUI == .skip { dictionary[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUISkip }
        }

        private func check(_ status: OSStatus) throws(SecStatus) {
            if status != errSecSuccess { throw SecStatus(rawValue: status) }
        }

        // SecItem.h: `OSStatus SecItemAdd(CFDictionaryRef attributes, CFTypeRef *result)`
        package func add(_ item: KeychainItem, data: SecretBytes) throws(SecStatus) {
            var attributes = base(item.service, item.account)
            attributes[kSecValueData as String] = data.data
            attributes[kSecAttrSynchronizable as String] = item.synchronizable
            if let access = item.accessControl {
                // SecAccessControl.h: `SecAccessControlCreateWithFlags(allocator, protection, flags, error)`
                guard
                    let ref = SecAccessControlCreateWithFlags(
                        nil, item.accessibility.secValue, SecAccessControlCreateFlags(rawValue: access.flags.rawValue), nil)
                else {
                    throw .errSecParam
                }
                attributes[kSecAttrAccessControl as String] = ref
            } else {
                attributes[kSecAttrAccessible as String] = item.accessibility.secValue
            }
            try check(SecItemAdd(attributes as CFDictionary, nil))
        }

        // SecItem.h: `OSStatus SecItemCopyMatching(CFDictionaryRef query, CFTypeRef *result)`
        package func copyData(_ query: KeychainQuery) throws(SecStatus) -> SecretBytes {
            var dictionary = base(query.service, query.account)
            dictionary[kSecReturnData as String] = true
            dictionary[kSecMatchLimit as String] = kSecMatchLimitOne
            try applyToRead(query, to: &dictionary)
            var result: CFTypeRef?
            try check(SecItemCopyMatching(dictionary as CFDictionary, &result))
            guard let data = result as? Data else { throw .errSecDecode }
            return SecretBytes(data)
        }

        package func copyAttributes(_ query: KeychainQuery) throws(SecStatus) -> [KeychainRecord] {
            var dictionary = base(query.service, query.account)
            dictionary[kSecReturnAttributes as String] = true
            dictionary[kSecMatchLimit as String] = kSecMatchLimitAll
            try applyToRead(query, to: &dictionary)
            var result: CFTypeRef?
            try check(SecItemCopyMatching(dictionary as CFDictionary, &result))
            return (result as? [[String: Any]] ?? []).map { attributes in
                KeychainRecord(
                    account: attributes[kSecAttrAccount as String] as? String ?? "",
                    accessibility: KeychainAccessibility(rawValue: attributes[kSecAttrAccessible as String] as? String ?? "")
                        ?? .whenUnlocked)
            }
        }

        // SecItem.h: `OSStatus SecItemUpdate(CFDictionaryRef query, CFDictionaryRef attributesToUpdate)`
        package func update(_ query: KeychainQuery, data: SecretBytes) throws(SecStatus) {
            var dictionary = base(query.service, query.account)
            try apply(query, to: &dictionary)
            try check(SecItemUpdate(dictionary as CFDictionary, [kSecValueData as String: data.data] as CFDictionary))
        }

        // SecItem.h: `OSStatus SecItemDelete(CFDictionaryRef query)`
        package func delete(_ query: KeychainQuery) throws(SecStatus) {
            try check(SecItemDelete(base(query.service, query.account) as CFDictionary))
        }
    }

    extension KeychainAccessibility {
        /// The SDK constant (SecItem.h `kSecAttrAccessible…`).
        var secValue: CFString {
            switch self {
            case .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
            case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
            case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
            case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
            }
        }
    }
#endif
