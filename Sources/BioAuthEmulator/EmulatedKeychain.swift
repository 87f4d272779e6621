import BioAuth
import BioAuthCore
import Foundation
import Synchronization

/// The keychain of an ``EmulatedDevice``: generic-password items with access control, following
/// Apple's regression test `keychain/securityd/Regressions/secd-81-item-acl-stress.m` and
/// apple-oss-distributions/Security `keychain/securityd/Regressions/secd-81-item-acl-stress.m` and SecItem.h.
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
            if state.items.contains(where: {
                $0.item.service == item.service && $0.item.account == item.account && $0.item.synchronizable == item.synchronizable
            }) {
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
            switch device.authorize(
                access, context: contextID(query), skipUI: query.authenticationUI == .skip, source: .keychain, state: &state)
            {
            case .allowed: return .success(stored.data)
            case .skip: return .failure(.errSecItemNotFound)  // kSecUseAuthenticationUISkip: the item is skipped
            case .denied(let code): return .failure(SecStatus(laError: code))
            }
        }
        return try result.get()
    }

    /// Reading an access-controlled item's attributes authenticates like reading its data; the
    /// UI-skip path leaves it out (`SecDbKeychainItem.m`, `ks_decrypt_data`). Several such items
    /// in one query share the context: one prompt, then the authenticated context reads the rest.
    package func copyAttributes(_ query: KeychainQuery) throws(SecStatus) -> [KeychainRecord] {
        let result: Result<[KeychainRecord], SecStatus> = device.state.withLock { state in
            var records: [KeychainRecord] = []
            // One query, one context: without the app's, a fresh one serves the whole call.
            var queryContext = contextID(query)
            if queryContext == nil {
                state.nextContextID += 1
                queryContext = state.nextContextID
                state.contexts[state.nextContextID] = ContextRecord()
            }
            defer { if query.context == nil, let queryContext { state.contexts[queryContext] = nil } }
            let matching = state.items.filter { stored in
                stored.item.service == query.service && (query.account.map { $0 == stored.item.account } ?? true) && !stored.invalidated
            }
            for stored in matching {
                if let access = stored.item.accessControl, access.guardsItemRead {
                    switch device.authorize(
                        access, context: queryContext, skipUI: query.authenticationUI == .skip, source: .keychain, state: &state)
                    {
                    case .allowed: break
                    case .skip: continue
                    case .denied(let code): return .failure(SecStatus(laError: code))
                    }
                }
                records.append(KeychainRecord(account: stored.item.account, accessibility: stored.item.accessibility))
            }
            return records.isEmpty ? .failure(.errSecItemNotFound) : .success(records)
        }
        return try result.get()
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
                switch device.authorize(
                    access, context: contextID(query), skipUI: query.authenticationUI == .skip, source: .keychain, state: &state)
                {
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
