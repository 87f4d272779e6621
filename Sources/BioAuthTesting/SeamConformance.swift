import BioAuth
import BioAuthCore
import Crypto
import Foundation

/// Checks that a `DevicePlatform` behaves as Apple documents, without needing a person: runs
/// against the emulator on Linux and against `BioAuthApple`'s live seams on a device (which must
/// have a passcode set). When the two disagree, the emulator is wrong.
///
/// ```swift
/// @Test func emulatorConforms() async throws {
///     try await SeamConformance(platform: EmulatedDevice().platform).run()
/// }
/// ```
public struct SeamConformance: Sendable {
    public let platform: DevicePlatform
    /// A service name no app data uses; the suite deletes what it creates there.
    public let service: String

    public init(platform: DevicePlatform, service: String = "bioauth.conformance") {
        self.platform = platform
        self.service = service
    }

    /// Runs every check; throws the first ``ConformanceFailure``.
    public func run() async throws {
        try contextChecks()
        try await evaluationWithoutInteraction()
        try keychainChecks()
        try enclaveChecks()
    }

    /// `biometryType` is `.none` before `canEvaluatePolicy`; `invalidate()` makes later use fail with -10.
    public func contextChecks() throws(ConformanceFailure) {
        let context = platform.contexts.makeContext()
        try require(context.biometryType == .none, "biometryType before canEvaluatePolicy", "\(context.biometryType)")
        // Before iOS 18 a fresh context has none; with iOS 18's `domainState` it has the current one.
        let fresh = context.evaluatedPolicyDomainState
        if (try? context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics)) != nil, let fresh {
            try require(context.evaluatedPolicyDomainState == fresh, "domain state of a fresh context is the current one, or nil")
        }
        try? context.canEvaluatePolicy(.deviceOwnerAuthentication)
        context.invalidate()
        context.invalidate()  // idempotent
        do {
            try context.canEvaluatePolicy(.deviceOwnerAuthentication)
            throw ConformanceFailure("canEvaluatePolicy after invalidate", "succeeded")
        } catch let error as LAErrorCode {
            try require(error == .invalidContext, "canEvaluatePolicy after invalidate", "\(error)")
        } catch let failure as ConformanceFailure { throw failure } catch {}
    }

    /// `evaluatePolicy` with `interactionNotAllowed` fails with notInteractive (-1004) and shows nothing.
    public func evaluationWithoutInteraction() async throws(ConformanceFailure) {
        let context = platform.contexts.makeContext()
        defer { context.invalidate() }
        context.interactionNotAllowed = true
        var failure: LAErrorCode?
        do { try await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Conformance") } catch { failure = error }
        try require(failure == .notInteractive, "evaluatePolicy with interactionNotAllowed", "\(String(describing: failure))")
    }

    /// The keychain rules of Security's `secd-81-item-acl-stress.m` that need no person.
    public func keychainChecks() throws(ConformanceFailure) {
        let keychain = platform.keychain
        try? keychain.delete(KeychainQuery(service: service))
        defer { try? keychain.delete(KeychainQuery(service: service)) }
        let secret = SecretBytes(Data("conformance".utf8))

        func status(_ body: () throws -> Void) -> SecStatus {
            do { try body() } catch let error as SecStatus { return error } catch { return SecStatus(rawValue: -1) }
            return .success
        }
        // Plain add, duplicate, copy.
        let plain = KeychainItem(service: service, account: "plain", accessibility: .afterFirstUnlockThisDeviceOnly)
        try require(status { try keychain.add(plain, data: secret) } == .success, "add plain item")
        let duplicate = status { try keychain.add(plain, data: secret) }
        try require(duplicate == .errSecDuplicateItem, "duplicate add", "\(duplicate)")
        let copied = try? keychain.copyData(KeychainQuery(service: service, account: "plain"))
        try require(copied == secret, "copy plain item")

        // ACL items: adding never prompts; reading without UI → -25308; UI skip → -25300; delete needs no auth.
        guard let access = try? AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: .userPresence) else {
            throw ConformanceFailure("AccessControl(.userPresence)", "rejected")
        }
        let protected = KeychainItem(
            service: service, account: "protected", accessibility: .whenPasscodeSetThisDeviceOnly, accessControl: access)
        let added = status { try keychain.add(protected, data: secret) }
        try require(added == .success, "add ACL item", "\(added) (is a device passcode set?)")
        let context = platform.contexts.makeContext()
        context.interactionNotAllowed = true
        let noUI = status { _ = try keychain.copyData(KeychainQuery(service: service, account: "protected", context: context)) }
        try require(noUI == .errSecInteractionNotAllowed, "copy ACL item without interaction", "\(noUI)")
        context.invalidate()
        let skipped = status { _ = try keychain.copyData(KeychainQuery(service: service, account: "protected", authenticationUI: .skip)) }
        try require(skipped == .errSecItemNotFound, "copy ACL item with UI skip", "\(skipped)")
        let listed = (try? keychain.copyAttributes(KeychainQuery(service: service, authenticationUI: .skip))) ?? []
        try require(listed.map(\.account) == ["plain"], "attributes with UI skip", "\(listed.map(\.account))")
        let deleted = status { try keychain.delete(KeychainQuery(service: service, account: "protected")) }
        try require(deleted == .success, "delete ACL item", "\(deleted)")

        // Synchronizable + ACL → errSecParam, and nothing is stored.
        let synced = KeychainItem(
            service: service, account: "synced", accessibility: .whenPasscodeSetThisDeviceOnly, accessControl: access, synchronizable: true)
        let syncStatus = status { try keychain.add(synced, data: secret) }
        try require(syncStatus == .errSecParam, "add synchronizable ACL item", "\(syncStatus)")
        let afterSync = status { _ = try keychain.copyData(KeychainQuery(service: service, account: "synced")) }
        try require(afterSync == .errSecItemNotFound, "copy after rejected add", "\(afterSync)")
    }

    /// Enclave keys: 65-byte public key, signatures swift-crypto verifies, ECIES round trip, no private export.
    public func enclaveChecks() throws(ConformanceFailure) {
        let enclave = platform.enclave
        guard enclave.isAvailable else { return }
        let tag = service + ".key"
        try? enclave.deleteKey(tag: tag)
        defer { try? enclave.deleteKey(tag: tag) }
        guard let access = try? AccessControl(accessibility: .whenPasscodeSetThisDeviceOnly, flags: .privateKeyUsage) else {
            throw ConformanceFailure("AccessControl(.privateKeyUsage)", "rejected")
        }
        let publicBytes: Data
        do { publicBytes = try enclave.createKey(EnclaveKeyParameters(tag: tag, accessControl: access)) } catch {
            throw ConformanceFailure("createKey", "\(error)")
        }
        try require(publicBytes.count == 65 && publicBytes.first == 0x04, "public key is X9.63", "\(publicBytes.count) bytes")
        let message = Data("conformance message".utf8)
        guard let signature = try? enclave.sign(tag: tag, message: message, context: nil),
            let key = try? DevicePublicKey(x963Representation: publicBytes)
        else { throw ConformanceFailure("sign with privateKeyUsage only", "failed") }
        try require(key.isValidSignature(der: signature, for: message), "signature verifies with swift-crypto")
        try require((try? ECDSADERSignature(der: signature)) != nil, "signature is strict DER")
        guard let recipient = try? P256.KeyAgreement.PublicKey(x963Representation: publicBytes),
            let ciphertext = try? ECIES.encrypt(message, to: recipient),
            let plaintext = try? enclave.decrypt(tag: tag, ciphertext: ciphertext, context: nil)
        else { throw ConformanceFailure("ECIES round trip", "failed") }
        try require(plaintext == SecretBytes(message), "ECIES round trip")
        try require((try? enclave.copyPrivateKeyRepresentation(tag: tag)) == nil, "private key is not exportable")
    }
}
