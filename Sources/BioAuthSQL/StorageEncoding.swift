import BioAuthCore
import BioAuthServer
import Foundation

// How the SQL stores encode what has no column type of its own: `package`, so that it is shared by
// the SQLite and PostgreSQL modules and is no part of the public API. Decoding never substitutes a
// default: an unknown value is a corrupt row (``StoreError`` `corruptRow`).

extension ChallengeRecord.Binding {
    /// The purpose-specific columns a SQL store keeps; NULL where the purpose has no such field.
    /// `registration_key` holds the key a challenge is for: the key to enrol, or the device key a
    /// step-up was issued to; `user_handle` the user handle a passkey registration's options named.
    package var columns: (publicKey: Data?, deviceName: String?, replacing: Bool?, operationHash: Data?, userHandle: Data?) {
        switch self {
        case .registration(let key, let name, let replacing): (key, name, replacing, nil, nil)
        case .login: (nil, nil, nil, nil, nil)
        case .stepUp(let hash, let key): (key, nil, nil, hash, nil)
        case .passkey(.registration(let name, let handle)): (nil, name, nil, nil, handle)
        case .passkey(.authentication): (nil, nil, nil, nil, nil)
        }
    }

    /// The `purpose` column: the signed message's purpose (1–3), or a passkey ceremony (16, 17),
    /// which signs no BioAuth message.
    package var storedPurpose: Int {
        switch self {
        case .passkey(.registration): Self.passkeyRegistration
        case .passkey(.authentication): Self.passkeyAuthentication
        default: Int(purpose?.rawValue ?? 0)
        }
    }
    static let passkeyRegistration = 16, passkeyAuthentication = 17

    /// Rebuilds a binding from its stored columns.
    /// - Throws: ``StoreError`` `corruptRow` for an unknown purpose or a NULL column the purpose needs.
    package init(
        purpose: Int, publicKey: Data?, deviceName: String?, replacing: Bool?, operationHash: Data?, userHandle: Data?
    ) throws(StoreError) {
        if purpose == Self.passkeyRegistration {
            guard let deviceName else { throw StoreError(.corruptRow, detail: "challenges.device_name") }
            self = .passkey(.registration(deviceName: deviceName, userHandle: userHandle))
            return
        }
        if purpose == Self.passkeyAuthentication {
            self = .passkey(.authentication)
            return
        }
        switch SignedMessage.Purpose(rawValue: UInt8(clamping: max(0, purpose))) {
        case .registration:
            guard let publicKey, let deviceName, let replacing else { throw StoreError(.corruptRow, detail: "challenges.registration") }
            self = .registration(publicKey: publicKey, deviceName: deviceName, replacing: replacing)
        case .login: self = .login
        case .stepUp:
            guard let operationHash else { throw StoreError(.corruptRow, detail: "challenges.operation_hash") }
            self = .stepUp(operationHash: operationHash, deviceKey: publicKey)
        case nil: throw StoreError(.corruptRow, detail: "challenges.purpose")
        }
    }
}

extension SessionKind {
    /// Decodes a stored kind. - Throws: ``StoreError`` `corruptRow` for an unknown value.
    package init(stored: String) throws(StoreError) {
        guard let kind = SessionKind(rawValue: stored) else { throw StoreError(.corruptRow, detail: "sessions.kind") }
        self = kind
    }
}

extension ApiKeyRecord {
    /// The scopes as stored: names, sorted, comma-separated.
    package var storedScopes: String { scopes.sorted().map(\.description).joined(separator: ",") }

    /// Scopes read back from ``storedScopes``; nil if one is unknown (a corrupt row, never a default).
    package static func scopes(stored: String) -> Set<ApiKeyScope>? {
        var scopes = Set<ApiKeyScope>()
        for name in stored.split(separator: ",") {
            guard let scope = ApiKeyScope(name: String(name)) else { return nil }
            scopes.insert(scope)
        }
        return scopes
    }
}

extension FailureSubject {
    /// The counter's key in the store. The identifier is the last component and may itself contain
    /// colons (an IPv6 address): nothing ever splits this key.
    package var storageKey: String {
        switch self {
        // usernames never contain "|"
        case .password(let user, let client), .recoveryCodes(let user, let client): kind + ":" + user.rawValue + "|" + client
        case .passwordRun(let user), .userRecoveryCodes(let user): kind + ":" + user.rawValue
        case .client(let address), .requests(let address), .failedRedemptions(let address): kind + ":" + address
        case .signInCode(let user, let client, let code): kind + ":" + user.rawValue + "|" + client + "|" + code.digest.hexString
        case .attestationChallenge(let session, let challenge): kind + ":" + session.rawValue + "|" + challenge.digest.hexString
        }
    }

    /// The SQL `LIKE` patterns of the counters a sweep keeps until `runsBefore` instead of
    /// `windowsBefore` (``BioAuthStore/sweep(windowsBefore:runsBefore:auditBefore:sessionsBefore:)``):
    /// password runs and the daily recovery-code counts.
    package static let longLivedKeyPatterns = (
        run: passwordRun(UserID("")).storageKey + "%", daily: recoveryCodes(UserID(""), client: "").kind + ":%"
    )
}

extension EnrolmentRequestEnding {
    /// Decodes the `ending` column; nil for a request that has not ended.
    package init?(stored: String?) throws(StoreError) {
        guard let stored else { return nil }
        guard let ending = EnrolmentRequestEnding(rawValue: stored) else {
            throw StoreError(.corruptRow, detail: "enrolment_requests.ending")
        }
        self = ending
    }
}

extension EnrolmentProof {
    /// Decodes the `key_replaced_by` or `enrolled_by` column; nil for none.
    package init?(stored: String?, column: String = "key_replaced_by") throws(StoreError) {
        guard let stored else { return nil }
        guard let replacement = EnrolmentProof(rawValue: stored) else { throw StoreError(.corruptRow, detail: "devices." + column) }
        self = replacement
    }
}

extension DeviceCredential {
    /// Rebuilds a device's credential from its `attestation` and `passkey` columns, at most one of
    /// which is set. - Throws: ``StoreError`` `corruptRow` when both are.
    package init(attestation: DeviceAttestation?, passkey: PasskeyCredential?) throws(StoreError) {
        switch (attestation, passkey) {
        case (let attestation, nil): self = .appKey(attestation: attestation)
        case (nil, let passkey?): self = .passkey(passkey)
        case (.some, .some): throw StoreError(.corruptRow, detail: "devices.attestation")
        }
    }
}
