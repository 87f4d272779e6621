import BioAuth
import BioAuthCore
import BioAuthEmulator
import Foundation

/// The LAError an evaluation ended with, nil on success.
func evaluate(_ context: any AuthenticationContext, _ policy: AuthenticationPolicy = .deviceOwnerAuthenticationWithBiometrics) async
    -> LAErrorCode?
{
    do {
        try await context.evaluatePolicy(policy, localizedReason: "Test")
        return nil
    } catch { return error }
}

func preflight(_ context: any AuthenticationContext, _ policy: AuthenticationPolicy = .deviceOwnerAuthenticationWithBiometrics)
    -> LAErrorCode?
{
    do {
        try context.canEvaluatePolicy(policy)
        return nil
    } catch { return error }
}

/// The OSStatus of a keychain call (`.success` when it returned).
func status(_ body: () throws -> Void) -> SecStatus {
    do { try body() } catch let error as SecStatus { return error } catch { return SecStatus(rawValue: -1) }
    return .success
}

func enclaveFailure(_ body: () throws -> Void) -> EnclaveFailure? {
    do { try body() } catch let error as EnclaveFailure { return error } catch { return .status(SecStatus(rawValue: -1)) }
    return nil
}

func bioAuthError(_ body: () async throws -> Void) async -> BioAuthError? {
    do { try await body() } catch let error as BioAuthError { return error } catch { return BioAuthError(.keychainFailure) }
    return nil
}

extension EmulatedDevice {
    /// A Face ID phone on a manual clock.
    static func faceID(clock: ManualClock = ManualClock(), configure: (inout Configuration) -> Void = { _ in }) -> EmulatedDevice {
        var configuration = Configuration(biometry: .faceID, clock: clock)
        configure(&configuration)
        return EmulatedDevice(configuration: configuration)
    }
}

let secret = SecretBytes(Data("correct horse battery staple".utf8))

func acl(_ flags: AccessControlFlags, _ accessibility: KeychainAccessibility = .whenPasscodeSetThisDeviceOnly) -> AccessControl {
    try! AccessControl(accessibility: accessibility, flags: flags)
}

func item(_ account: String, _ access: AccessControl? = nil, service: String = "test") -> KeychainItem {
    KeychainItem(
        service: service, account: account, accessibility: access?.accessibility ?? .afterFirstUnlockThisDeviceOnly, accessControl: access)
}

func query(_ account: String?, context: (any AuthenticationContext)? = nil, ui: AuthenticationUI = .allow) -> KeychainQuery {
    KeychainQuery(service: "test", account: account, context: context, authenticationUI: ui)
}
