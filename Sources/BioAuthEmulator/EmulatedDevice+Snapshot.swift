import BioAuth
import BioAuthCore
import Crypto
import Foundation
import Synchronization

extension EmulatedDevice {
    /// The device's persistent state, for keeping an emulated phone in a file between runs
    /// (`bioauth device --state`). It holds the emulated enclave's private keys and the keychain's
    /// data: store it like a secret (the CLI writes it with mode 0600). Its description is redacted.
    public struct Snapshot: Codable, Sendable, CustomStringConvertible {
        struct Item: Codable, Sendable {
            var service: String
            var account: String
            var accessibility: KeychainAccessibility
            var accessControl: AccessControl?
            var synchronizable: Bool
            var data: Data
            var invalidated: Bool
        }
        struct Key: Codable, Sendable {
            var tag: String
            var privateKey: Data
            var accessControl: AccessControl
            var invalidated: Bool
        }
        public var biometry: BiometryKind
        public var hasSecureEnclave: Bool
        var passcode: String?
        var enrolled: [String]
        var consecutiveFailures: Int
        var lockedOut: Bool
        var deniedForApp: Bool
        var osDomainSalt: Int
        var items: [Item]
        var keys: [Key]

        public var description: String {
            "EmulatedDevice.Snapshot(\(biometry), \(enrolled.count) enrolled, \(items.count) items, \(keys.count) keys, redacted)"
        }
    }

    /// The state to persist.
    public func snapshot() -> Snapshot {
        state.withLock { state in
            Snapshot(
                biometry: configuration.biometry, hasSecureEnclave: configuration.hasSecureEnclave, passcode: state.passcode,
                enrolled: state.enrolled, consecutiveFailures: state.consecutiveFailures, lockedOut: state.lockedOut,
                deniedForApp: state.deniedForApp, osDomainSalt: state.osDomainSalt,
                items: state.items.map {
                    .init(
                        service: $0.item.service, account: $0.item.account, accessibility: $0.item.accessibility,
                        accessControl: $0.item.accessControl,
                        synchronizable: $0.item.synchronizable, data: $0.data.data, invalidated: $0.invalidated)
                },
                keys: state.keys.map {
                    .init(
                        tag: $0.tag, privateKey: $0.privateKey.rawRepresentation, accessControl: $0.accessControl,
                        invalidated: $0.invalidated)
                })
        }
    }

    /// A device restored from a snapshot.
    public convenience init(snapshot: Snapshot, clock: any WallClock = SystemWallClock()) throws {
        self.init(
            configuration: Configuration(biometry: snapshot.biometry, hasSecureEnclave: snapshot.hasSecureEnclave, clock: clock),
            passcode: snapshot.passcode, enrolled: false)
        let keys = try snapshot.keys.map {
            StoredKey(
                tag: $0.tag, privateKey: try P256.Signing.PrivateKey(rawRepresentation: $0.privateKey), accessControl: $0.accessControl,
                invalidated: $0.invalidated)
        }
        state.withLock { state in
            state.enrolled = snapshot.enrolled
            state.consecutiveFailures = snapshot.consecutiveFailures
            state.lockedOut = snapshot.lockedOut
            state.deniedForApp = snapshot.deniedForApp
            state.osDomainSalt = snapshot.osDomainSalt
            state.items = snapshot.items.map {
                StoredItem(
                    item: KeychainItem(
                        service: $0.service, account: $0.account, accessibility: $0.accessibility, accessControl: $0.accessControl,
                        synchronizable: $0.synchronizable),
                    data: SecretBytes($0.data), invalidated: $0.invalidated)
            }
            state.keys = keys
        }
    }
}
