import BioAuthCore
import Foundation

/// What a protected item or device key requires before its secret can be used.
public enum ProtectionPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// The biometry enrolled now; adding a finger or resetting Face ID destroys the item. The default.
    case biometryCurrentSet
    /// Any enrolled biometry; survives enrollment changes (weaker: a new finger reads it).
    case biometryAny
    /// Biometry or the device passcode (weaker: whoever knows the passcode reads it).
    case userPresence
    /// The device passcode only.
    case devicePasscode

    /// The `SecAccessControlCreateFlags` constraint.
    package var flags: AccessControlFlags {
        switch self {
        case .biometryCurrentSet: .biometryCurrentSet
        case .biometryAny: .biometryAny
        case .userPresence: .userPresence
        case .devicePasscode: .devicePasscode
        }
    }

    /// The policy evaluated before the read, so the prompt has the app's titles and the read
    /// that follows shows none. nil: let the keychain prompt (passcode-only items).
    var evaluationPolicy: AuthenticationPolicy? {
        switch self {
        case .biometryCurrentSet, .biometryAny: .deviceOwnerAuthenticationWithBiometrics
        case .userPresence: .deviceOwnerAuthentication
        case .devicePasscode: nil
        }
    }
}

/// Secrets in the keychain behind access control: the platform, not the app, decides who reads them.
///
/// Items are `WhenPasscodeSetThisDeviceOnly`: never backed up, and deleted by the system when the
/// device passcode is removed (`SecItem.h`). Writing never prompts; reading prompts exactly once.
public struct ProtectedItemStore: Sendable {
    public let platform: DevicePlatform
    public let service: ServiceName
    public let policy: ProtectionPolicy

    public init(platform: DevicePlatform, service: ServiceName, policy: ProtectionPolicy = .biometryCurrentSet) {
        self.platform = platform
        self.service = service
        self.policy = policy
    }

    /// Stores `secret` under `account`, replacing any previous value, without a prompt.
    ///
    /// Delete then add: `SecItemUpdate` on an access-controlled item would prompt (Valet
    /// `SecureEnclave.swift`).
    /// - Throws: ``BioAuthError`` `passcodeNotSet` when the device has no passcode (errSecAuthFailed
    ///   from `SecItemDb.c`), or another keychain failure.
    public func set(_ secret: SecretBytes, for account: AccountName) throws(BioAuthError) {
        let access: AccessControl
        do { access = try AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: policy.flags) } catch {
            throw BioAuthError(status: error)
        }
        try remove(account)
        do {
            try platform.keychain.add(
                KeychainItem(
                    service: service.rawValue, account: account.rawValue, accessibility: .whenPasscodeSetThisDeviceOnly,
                    accessControl: access),
                data: secret)
        } catch {
            if error == .errSecAuthFailed { throw BioAuthError(.passcodeNotSet, status: error) }
            throw BioAuthError(status: error)
        }
    }

    /// Reads the secret with one prompt on a fresh context. A policy without an evaluation
    /// (`.devicePasscode`) prompts inside the keychain read, which then runs off Swift
    /// concurrency's threads (`PromptingCall`).
    public func read(_ account: AccountName, prompt: Prompt) async throws(BioAuthError) -> SecretBytes {
        let context = try await platform.context(for: policy, prompt: prompt)
        defer { context.invalidate() }
        return try await PromptingCall.run { () throws(BioAuthError) in try self.read(account, context: context) }
    }

    /// Reads the secret with a context the caller already authenticated: no second prompt.
    package func read(_ account: AccountName, context: any AuthenticationContext) throws(BioAuthError) -> SecretBytes {
        do {
            return try platform.keychain.copyData(KeychainQuery(service: service.rawValue, account: account.rawValue, context: context))
        } catch {
            throw BioAuthError(status: error)
        }
    }

    /// Whether an item exists, without a prompt: a read that may not show UI answers
    /// errSecInteractionNotAllowed for an item that exists (Valet `containsObject`).
    public func contains(_ account: AccountName) -> Bool {
        let context = platform.contexts.makeContext()
        context.interactionNotAllowed = true
        defer { context.invalidate() }
        do {
            _ = try platform.keychain.copyData(KeychainQuery(service: service.rawValue, account: account.rawValue, context: context))
            return true
        } catch {
            return error == .errSecInteractionNotAllowed
        }
    }

    /// The accounts of the service's items that can be listed without a prompt; access-controlled
    /// items are skipped (`kSecUseAuthenticationUISkip`).
    public func unprotectedAccounts() -> [AccountName] {
        let query = KeychainQuery(service: service.rawValue, authenticationUI: .skip)
        return ((try? platform.keychain.copyAttributes(query)) ?? []).map(\.account).sorted().compactMap(AccountName.init(rawValue:))
    }

    /// Deletes the item if present. Needs no authentication.
    public func remove(_ account: AccountName) throws(BioAuthError) {
        try PlainRecords(keychain: platform.keychain, service: service.rawValue).remove(account.rawValue)  // delete ignores the ACL
    }
}

/// Small records without access control (`AfterFirstUnlockThisDeviceOnly` unless told otherwise,
/// never synchronized) that BioAuth keeps for itself: the enrollment baseline, the app-passcode
/// verifier, attempt counters, the client's registration and session.
package struct PlainRecords: Sendable {
    let keychain: any KeychainService
    let service: String
    let accessibility: KeychainAccessibility

    package init(keychain: any KeychainService, service: String, accessibility: KeychainAccessibility = .afterFirstUnlockThisDeviceOnly) {
        self.keychain = keychain
        self.service = service
        self.accessibility = accessibility
    }

    package func read(_ account: String) throws(BioAuthError) -> SecretBytes? {
        do { return try keychain.copyData(KeychainQuery(service: service, account: account)) } catch {
            if error == .errSecItemNotFound { return nil }
            throw BioAuthError(status: error)
        }
    }

    /// Replaces the value in place (`SecItemUpdate`; these items have no access control, so it
    /// never prompts), or adds it when there is none. Never delete-then-add: a failed add — the
    /// device locked, the keychain full — would lose the previous value.
    package func write(_ value: SecretBytes, _ account: String) throws(BioAuthError) {
        do {
            try keychain.update(KeychainQuery(service: service, account: account), data: value)
            return
        } catch  where error != .errSecItemNotFound { throw BioAuthError(status: error) } catch {}
        do {
            try keychain.add(KeychainItem(service: service, account: account, accessibility: accessibility), data: value)
        } catch { throw BioAuthError(status: error) }
    }

    package func remove(_ account: String) throws(BioAuthError) {
        do { try keychain.delete(KeychainQuery(service: service, account: account)) } catch {
            if error != .errSecItemNotFound { throw BioAuthError(status: error) }
        }
    }

    package func readJSON<T: Decodable>(_ type: T.Type, _ account: String) throws(BioAuthError) -> T? {
        guard let bytes = try read(account) else { return nil }
        do { return try JSONDecoder().decode(T.self, from: bytes.data) } catch {
            throw BioAuthError(.keychainFailure, status: .errSecDecode)
        }
    }

    package func writeJSON<T: Encodable>(_ value: T, _ account: String) throws(BioAuthError) {
        let data: Data
        do { data = try JSONEncoder().encode(value) } catch { throw BioAuthError(.keychainFailure, status: .errSecParam) }
        try write(SecretBytes(data), account)
    }
}
