import Foundation

/// What signs for a device: the app's own key on a phone, or a passkey. Every rule that treats
/// them apart switches over ``kind``, so a new kind does not compile until each rule decides it.
public enum DeviceCredential: Sendable, Hashable {
    /// The app's key in the Secure Enclave (or an Android phone's secure hardware): it signs
    /// BioAuth's messages (``DeviceRecord/publicKey``). `attestation` is what the key's
    /// attestation proved; nil when it enrolled unattested.
    case appKey(attestation: DeviceAttestation?)
    /// A WebAuthn credential: it answers passkey ceremonies only, never a BioAuth message
    /// (``DeviceRecord/publicKey`` then holds its key's SPKI, for the device list).
    case passkey(PasskeyCredential)

    /// The kinds of credential, each with its own rank in the authority table.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// An app key whose attestation (App Attest, Android Key Attestation) proved it.
        case attestedAppKey
        /// An app key that enrolled unattested.
        case appKey
        /// A passkey that cannot leave its authenticator (BE = 0): a security key, a platform
        /// authenticator without sync.
        case deviceBoundPasskey
        /// A passkey the user's provider may copy to other devices (BE = 1): whoever holds the
        /// provider account holds it.
        case syncedPasskey
    }

    public var kind: Kind {
        switch self {
        case .appKey(.some): .attestedAppKey
        case .appKey(nil): .appKey
        case .passkey(let passkey): passkey.backupEligible ? .syncedPasskey : .deviceBoundPasskey
        }
    }

    /// Whether it signs BioAuth's own messages (logins, step-ups, approvals): an app key does, a
    /// passkey never.
    public var signsBioAuthMessages: Bool {
        switch kind {
        case .attestedAppKey, .appKey: true
        case .deviceBoundPasskey, .syncedPasskey: false
        }
    }

    /// The app key's attestation; nil for an unattested key and for a passkey.
    public var attestation: DeviceAttestation? {
        if case .appKey(let attestation) = self { attestation } else { nil }
    }

    /// The passkey's WebAuthn credential; nil for an app key.
    public var passkey: PasskeyCredential? {
        if case .passkey(let passkey) = self { passkey } else { nil }
    }
}
