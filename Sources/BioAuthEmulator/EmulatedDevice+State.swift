import BioAuth
import BioAuthCore
import Foundation
import Synchronization

/// What a person and an attacker do to the phone: biometry, passcode, lockouts, the lock screen, a restart, a keychain dump.
extension EmulatedDevice {
    // MARK: - Device state

    /// Enrolls a new finger or face (Settings › Face ID & Passcode). Invalidates `.biometryCurrentSet` items and keys.
    @discardableResult
    public func enrollBiometry() -> String {
        let identity = Self.newIdentity()
        state.withLock { state in
            state.enrolled.append(identity)
            state.enrollmentDidChange()
        }
        return identity
    }

    /// Removes an enrolled finger (by the id ``enrollBiometry()`` returned; the first one if nil).
    public func removeBiometry(_ identity: String? = nil) {
        state.withLock { state in
            guard let index = identity.flatMap({ state.enrolled.firstIndex(of: $0) }) ?? (state.enrolled.isEmpty ? nil : 0) else { return }
            state.enrolled.remove(at: index)
            state.enrollmentDidChange()
        }
    }

    /// "Reset Face ID": removes every enrollment (enroll again with ``enrollBiometry()``).
    public func resetBiometry() {
        state.withLock { state in
            state.enrolled.removeAll()
            state.enrollmentDidChange()
        }
    }

    /// The identities enrolled now.
    public var enrolledIdentities: [String] { state.withLock { $0.enrolled } }

    /// Sets or changes the device passcode.
    public func setPasscode(_ passcode: String) { state.withLock { $0.passcode = passcode } }

    /// Turns the passcode off. "Disabling the device passcode will cause all previously protected
    /// items to be deleted" (`SecItem.h`): every `WhenPasscodeSetThisDeviceOnly` item goes. Its
    /// Secure Enclave keys do as ``Configuration/passcodeRemovalKeys`` says (UNCONFIRMED).
    public func removePasscode() {
        state.withLock { state in
            state.passcode = nil
            state.items.removeAll { $0.item.accessibility == .whenPasscodeSetThisDeviceOnly }
            switch configuration.passcodeRemovalKeys {
            case .deleted: state.keys.removeAll { $0.accessControl.accessibility == .whenPasscodeSetThisDeviceOnly }
            case .foundButUnusable:
                for index in state.keys.indices where state.keys[index].accessControl.accessibility == .whenPasscodeSetThisDeviceOnly {
                    state.keys[index].invalidated = true
                }
            }
        }
    }

    public var hasPasscode: Bool { state.withLock { $0.passcode != nil } }

    /// Locks biometry out as after `lockoutThreshold` consecutive failed matches.
    public func lockOutBiometry() {
        state.withLock { state in
            state.consecutiveFailures = configuration.lockoutThreshold
            state.lockedOut = true
        }
    }

    public var isLockedOut: Bool { state.withLock { $0.lockedOut } }

    /// The owner unlocks the device at the lock screen with biometry: starts the reuse window.
    public func unlockDeviceWithBiometry() {
        state.withLock { state in
            guard !state.lockedOut, !state.enrolled.isEmpty, state.passcode != nil else { return }
            state.lastDeviceUnlockMatch = configuration.clock.now()
            state.consecutiveFailures = 0
        }
    }

    /// The owner unlocks the device with the passcode: clears a biometry lockout ([doc] biometryLockout).
    /// Returns false for a wrong passcode.
    @discardableResult
    public func unlockDeviceWithPasscode(_ passcode: String) -> Bool {
        state.withLock { state in
            guard state.passcode == passcode else { return false }
            state.lockedOut = false
            state.consecutiveFailures = 0
            return true
        }
    }

    /// The screen locks: items of the `WhenUnlocked` and `WhenPasscodeSet` classes become
    /// unreadable (errSecInteractionNotAllowed) until ``unlockScreen()``; `AfterFirstUnlock` items
    /// stay readable once the device was unlocked since it started (`SecItem.h` accessibility
    /// constants; Security `secd-01-items` regression test; flutter_secure_storage#743).
    public func lockScreen() { state.withLock { $0.screenLocked = true } }

    /// The owner unlocks the screen: every class key is available again.
    public func unlockScreen() {
        state.withLock { state in
            state.screenLocked = false
            state.unlockedSinceBoot = true
        }
    }

    /// The device restarts and sits at the lock screen, not yet unlocked: even `AfterFirstUnlock`
    /// items are unreadable — what an app prewarmed at boot sees.
    public func restart() {
        state.withLock { state in
            state.screenLocked = true
            state.unlockedSinceBoot = false
            state.lastDeviceUnlockMatch = nil
        }
    }

    public var isScreenLocked: Bool { state.withLock { $0.screenLocked } }

    /// The user turned Face ID off for this app in Settings (LAError -6 with the type known).
    public var biometryDeniedForApp: Bool {
        get { state.withLock { $0.deniedForApp } }
        set { state.withLock { $0.deniedForApp = newValue } }
    }

    // MARK: - The attacker

    /// A jailbreak tweak (objection `ios ui biometrics_bypass`, MASTG-TECH-0135) hooks
    /// `evaluatePolicy` in the app's process to report success without a match. The keychain and
    /// the Secure Enclave are not in the app's process: the context is not really authenticated.
    public var jailbreakHookEnabled: Bool {
        get { state.withLock { $0.jailbreakHook } }
        set { state.withLock { $0.jailbreakHook = newValue } }
    }

    /// What a keychain dump on a jailbroken, unlocked device recovers: items with no access control.
    public func dumpKeychain() -> [DumpedItem] {
        state.withLock { state in
            state.items.filter { $0.item.accessControl == nil }.map {
                DumpedItem(service: $0.item.service, account: $0.item.account, data: $0.data)
            }
        }
    }

    /// The current biometric domain state (nil when nothing is enrolled): what a context reports after a match.
    public var currentDomainState: Data? { state.withLock { $0.domainState } }

    static func newIdentity() -> String { UUID().uuidString.lowercased() }
}
