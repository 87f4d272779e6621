import BioAuthAttestation
import Foundation

/// Passkeys (WebAuthn) on the same accounts: the relying party a browser or an Android app signs
/// in to, and how long a ceremony may take. Off (``ServerConfiguration/passkeys`` nil) until a
/// deployment names its relying party and origins.
public struct PasskeyPolicy: Sendable, Hashable {
    /// The RP ID, the origins, user verification (required by default), whether synced passkeys
    /// are accepted (yes by default) and the attestation roots.
    public var relyingParty: WebAuthnRelyingParty
    /// The name a browser shows while creating a passkey.
    public var relyingPartyName: String
    /// How long a ceremony's challenge lives (5 minutes): the user reads a prompt and touches a
    /// sensor, and the page says so in `timeout`.
    public var ceremonyTTL: TimeInterval

    public init(relyingParty: WebAuthnRelyingParty, relyingPartyName: String, ceremonyTTL: TimeInterval = 300) {
        self.relyingParty = relyingParty
        self.relyingPartyName = relyingPartyName
        self.ceremonyTTL = ceremonyTTL
    }

    /// What the options say of user verification.
    var userVerification: String { relyingParty.userVerification == .required ? "required" : "preferred" }
}
