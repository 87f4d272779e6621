import BioAuth
import BioAuthCore
import Foundation
import Synchronization

/// The keychain of an ``EmulatedDevice``: generic-password items with access control, following
/// Apple's regression test `keychain/securityd/Regressions/secd-81-item-acl-stress.m` and
/// `apple-platform.md` §3.7.
package struct EmulatedKeychain: KeychainService {
    package let device: EmulatedDevice
    package init(device: EmulatedDevice) { self.device = device }

    private func contextID(_ query: KeychainQuery) -> Int? { (query.context as? EmulatedLAContext)?.id }

    package func add(_ item: KeychainItem, data: SecretBytes) throws(SecStatus) {
        let status: SecStatus = device.state.withLock { state in
            // Synchronizable + ACL → errSecParam (secd-81; KeychainAccess #53).
            if item.accessControl != nil && item.synchronizable { return .errSecParam }
            // pdmn=akpu without a passcode → errSecAuthFailed (SecItemDb.c ~l.349).
            if item.accessibility == .whenPasscodeSetThisDeviceOnly && state.passcode == nil { return .errSecAuthFailed }
            if !state.classKeyAvailable(item.accessibility) { return .errSecInteractionNotAllowed }
            if state.items.contains(where: { $0.item.service == item.service && $0.item.account == item.account && $0.item.synchronizable == item.synchronizable }) {
                return .errSecDuplicateItem
            }
            if let status = device.configuration.bioACLAddWithoutEnrollmentStatus, state.enrolled.isEmpty,
                let flags = item.accessControl?.flags, !flags.intersection([.biometryAny, .biometryCurrentSet]).isEmpty
            {
                return status
            }
            // Adding never prompts, whatever the ACL (secd-81; KeychainAccess #551).
            state.items.append(StoredItem(item: item, data: data))
            return .success
        }
        if status != .success { throw status }
    }

    package func copyData(_ query: KeychainQuery) throws(SecStatus) -> SecretBytes {
        guard let account = query.account else { throw .errSecParam }
        let result: Result<SecretBytes, SecStatus> = device.state.withLock { state in
            guard let index = state.items.firstIndex(where: { $0.item.service == query.service && $0.item.account == account }) else {
                return .failure(.errSecItemNotFound)
            }
            let stored = state.items[index]
            if stored.invalidated { return .failure(device.configuration.invalidatedItemStatus) }
            if !state.classKeyAvailable(stored.item.accessibility) { return .failure(.errSecInteractionNotAllowed) }
            guard let access = stored.item.accessControl, access.guardsItemRead else { return .success(stored.data) }
            switch device.authorize(access, context: contextID(query), skipUI: query.authenticationUI == .skip, source: .keychain, state: &state) {
            case .allowed: return .success(stored.data)
            case .skip: return .failure(.errSecItemNotFound)  // kSecUseAuthenticationUISkip: the item is skipped
            case .denied(let code): return .failure(SecStatus(laError: code))
            }
        }
        return try result.get()
    }

    package func copyAttributes(_ query: KeychainQuery) throws(SecStatus) -> [KeychainRecord] {
        let records: [KeychainRecord] = device.state.withLock { state in
            state.items.filter { stored in
                stored.item.service == query.service && (query.account.map { $0 == stored.item.account } ?? true) && !stored.invalidated
                    && !(query.authenticationUI == .skip && stored.item.accessControl?.guardsItemRead == true)
            }.map { KeychainRecord(account: $0.item.account, accessibility: $0.item.accessibility, isAccessControlled: $0.item.accessControl != nil) }
        }
        if records.isEmpty { throw .errSecItemNotFound }
        return records
    }

    package func update(_ query: KeychainQuery, data: SecretBytes) throws(SecStatus) {
        guard let account = query.account else { throw .errSecParam }
        let status: SecStatus = device.state.withLock { state in
            guard let index = state.items.firstIndex(where: { $0.item.service == query.service && $0.item.account == account }) else {
                return .errSecItemNotFound
            }
            if state.items[index].invalidated { return device.configuration.invalidatedItemStatus }
            if !state.classKeyAvailable(state.items[index].item.accessibility) { return .errSecInteractionNotAllowed }
            // Updating an access-controlled item requires authentication (Valet SecureEnclave.swift).
            if let access = state.items[index].item.accessControl, access.guardsItemRead {
                switch device.authorize(access, context: contextID(query), skipUI: query.authenticationUI == .skip, source: .keychain, state: &state) {
                case .allowed: break
                case .skip: return .errSecItemNotFound
                case .denied(let code): return SecStatus(laError: code)
                }
            }
            state.items[index].data = data
            return .success
        }
        if status != .success { throw status }
    }

    package func delete(_ query: KeychainQuery) throws(SecStatus) {
        // Delete is always allowed by ACLs from SecAccessControlCreateWithFlags (SecAccessControl.m).
        let removed: Int = device.state.withLock { state in
            let before = state.items.count
            state.items.removeAll { $0.item.service == query.service && (query.account == nil || $0.item.account == query.account) }
            return before - state.items.count
        }
        if removed == 0 { throw .errSecItemNotFound }
    }
}
