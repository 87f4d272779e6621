import BioAuthAttestation
import BioAuthCore
import Foundation

/// A passkey (a WebAuthn credential) enrolled as one of the user's devices
/// (``DeviceCredential/passkey(_:)``): what its registration proved and what each sign-in updates.
/// Nothing here is secret; the description still shows only the device-list facts.
public struct PasskeyCredential: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The credential id the authenticator chose (`rawId`).
    public var credentialID: Data
    /// The credential's public key as a COSE_Key (ES256, EdDSA or RS256).
    public var publicKey: Data
    /// The signature counter of the last sign-in (0 for authenticators that keep none).
    public var signCount: UInt32
    /// BE: the credential may be synced to the user's other devices (a synced passkey).
    public var backupEligible: Bool
    /// BS: the credential is backed up now, as of the last ceremony.
    public var backedUp: Bool
    /// The registration's attestation format (`none`, `packed`, `apple`, `android-key`).
    public var format: String
    /// What the attestation proved about the authenticator.
    public var attestation: WebAuthnRelyingParty.AttestationTrust
    /// The authenticator model's AAGUID (zeros when it does not say).
    public var aaguid: Data
    /// The user handle the registration gave the authenticator, which it returns with each
    /// assertion: 32 random bytes per user, shared by the user's passkeys (never the user id: a
    /// handle must not identify the person, WebAuthn Level 3 §14.6.1). nil for a passkey
    /// registered before BioAuth 0.5, whose authenticator holds the user id's UTF-8 bytes and
    /// cannot be given another (``expectedUserHandle(of:)``).
    public var userHandle: Data?

    public init(
        credentialID: Data, publicKey: Data, signCount: UInt32, backupEligible: Bool, backedUp: Bool, format: String,
        attestation: WebAuthnRelyingParty.AttestationTrust, aaguid: Data, userHandle: Data? = nil
    ) {
        self.userHandle = userHandle
        self.credentialID = credentialID
        self.publicKey = publicKey
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.backedUp = backedUp
        self.format = format
        self.attestation = attestation
        self.aaguid = aaguid
    }

    /// What a verified registration creates, for the user handle its options named.
    public init(_ registration: WebAuthnRelyingParty.VerifiedRegistration, userHandle: Data?) {
        self.init(
            credentialID: registration.credentialID, publicKey: registration.publicKeyBytes, signCount: registration.signCount,
            backupEligible: registration.backupEligible, backedUp: registration.backedUp, format: registration.format,
            attestation: registration.attestation, aaguid: registration.aaguid, userHandle: userHandle)
    }

    /// The user handle an assertion by this passkey of `user`'s must carry, if it carries one.
    public func expectedUserHandle(of user: UserID) -> Data { userHandle ?? Data(user.rawValue.utf8) }

    /// The handle a new passkey of a user gets: the random one the user's passkeys share (a
    /// revoked one's too, so the handle stays the user's), else 32 fresh random bytes. A user whose
    /// passkeys all predate random handles gets a fresh one: the old handle is the user id.
    static func userHandle(for devices: [DeviceRecord]) -> Data {
        devices.lazy.compactMap { $0.credential.passkey?.userHandle }.first ?? SecretBytes.random(count: 32).data
    }

    public var description: String {
        "PasskeyCredential(\(backupEligible ? "synced" : "device-bound"), format: \(format), attestation: \(attestation.rawValue))"
    }
}

extension PasskeyCredential {
    /// The stored column: JSON, binary values base64.
    package var stored: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding plain strings, numbers and data cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// Decodes the `devices.passkey` column; nil for an app's device key.
    package init?(stored: String?) throws(StoreError) {
        guard let stored else { return nil }
        do { self = try JSONDecoder().decode(PasskeyCredential.self, from: Data(stored.utf8)) } catch {
            throw StoreError(.corruptRow, detail: "devices.passkey")
        }
    }
}
