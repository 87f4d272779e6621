import BioAuth
import BioAuthCore
import Crypto
import Foundation

// What an `EmulatedDevice` holds behind its one lock: its LAContexts, keychain items, Secure
// Enclave keys and the person's enrolment.

/// One `LAContext`'s settings and what it has authenticated.
struct ContextRecord {
    var fallbackTitle: String?
    var cancelTitle: String?
    var reason = ""
    var interactionNotAllowed = false
    var reuseDuration: TimeInterval = 0
    var biometryRevealed = false
    var domainState: Data?
    var authenticatedByBiometry = false
    var authenticatedByPasscode = false
    var invalidated = false
    var held: CheckedContinuation<Void, Never>?
}

struct StoredItem {
    var item: KeychainItem
    var data: SecretBytes
    var invalidated = false
}

struct StoredKey {
    var tag: String
    var privateKey: P256.Signing.PrivateKey
    var accessControl: AccessControl
    var invalidated = false
}

struct State {
    var passcode: String?
    var enrolled: [String] = []
    var consecutiveFailures = 0
    var lockedOut = false
    var deniedForApp = false
    var jailbreakHook = false
    var lastDeviceUnlockMatch: Date?
    var script: [EmulatedDevice.PromptAction] = []
    var unscripted: EmulatedDevice.PromptAction = .match
    var prompts: [EmulatedDevice.PromptRecord] = []
    var contexts: [Int: ContextRecord] = [:]
    var nextContextID = 0
    var items: [StoredItem] = []
    var keys: [StoredKey] = []
    var osDomainSalt = 0
    var screenLocked = false
    var unlockedSinceBoot = true

    /// Whether the class key of `accessibility` is available now: the data protection class
    /// decides, not the item's ACL.
    func classKeyAvailable(_ accessibility: KeychainAccessibility) -> Bool {
        switch accessibility {
        case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: unlockedSinceBoot
        default: !screenLocked
        }
    }

    /// SHA-256 over the enrolled identities, nil when none: changes exactly when the set changes.
    /// The real value is opaque (32 bytes observed); approximated.
    var domainState: Data? {
        guard !enrolled.isEmpty else { return nil }
        return Data(
            SHA256.hash(data: Data(("bioauth-emulator-domain-state:\(osDomainSalt):" + enrolled.sorted().joined(separator: ",")).utf8)))
    }

    /// "When fingers are added or removed, the item is invalidated. When Face ID is re-enrolled
    /// this item is invalidated." (`SecAccessControl.h`, biometryCurrentSet)
    mutating func enrollmentDidChange() {
        for index in items.indices where items[index].item.accessControl?.isBoundToCurrentBiometrySet == true {
            items[index].invalidated = true
        }
        for index in keys.indices where keys[index].accessControl.isBoundToCurrentBiometrySet { keys[index].invalidated = true }
        lastDeviceUnlockMatch = nil
    }

    mutating func nextAction() -> EmulatedDevice.PromptAction {
        script.isEmpty ? unscripted : script.removeFirst()
    }
}
