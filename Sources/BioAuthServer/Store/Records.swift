import BioAuthCore
import Foundation

/// A user of the demo primary authenticator: username and a salted slow password hash. Its
/// description, `dump()` and Mirror show the id and the rounds, never the salt or the hash.
public struct UserRecord: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var id: UserID
    public var passwordSalt: Data
    public var passwordRounds: Int
    public var passwordHash: Data
    public var createdAt: Date

    public init(id: UserID, passwordSalt: Data, passwordRounds: Int, passwordHash: Data, createdAt: Date) {
        self.id = id
        self.passwordSalt = passwordSalt
        self.passwordRounds = passwordRounds
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }

    public var description: String { "UserRecord(id: \(id), passwordRounds: \(passwordRounds), createdAt: \(createdAt))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id, "passwordRounds": passwordRounds, "createdAt": createdAt]) }
}

/// A registered device: an app's Secure Enclave or hardware-backed key, or a passkey
/// (``credential``).
public struct DeviceRecord: Sendable, Hashable {
    public var id: DeviceID
    public var userID: UserID
    public var name: String
    /// The 91-byte P-256 SPKI.
    public var publicKey: Data
    public var createdAt: Date
    public var lastUsedAt: Date?
    public var revokedAt: Date?
    /// When the key was last replaced (a re-enrolment after an enrollment change); nil if never.
    public var keyReplacedAt: Date?
    /// How it was last replaced; nil if never.
    public var keyReplacement: EnrolmentProof?
    /// What signs for it: the app's key (with what its attestation proved) or a passkey.
    public var credential: DeviceCredential
    /// How the device's enrolment was allowed; nil for a device enrolled before BioAuth recorded it.
    public var enrolledBy: EnrolmentProof?
    /// The JWK thumbprint (RFC 7638) of the device's second key, the one that signs DPoP proofs
    /// without a prompt (``DPoPPolicy``): a login's session is bound to it. Registered with the
    /// key, replaced with it; nil for a device that registered none.
    public var dpopThumbprint: String?

    public init(
        id: DeviceID, userID: UserID, name: String, publicKey: Data, createdAt: Date, lastUsedAt: Date? = nil, revokedAt: Date? = nil,
        keyReplacedAt: Date? = nil, keyReplacement: EnrolmentProof? = nil, credential: DeviceCredential = .appKey(attestation: nil),
        enrolledBy: EnrolmentProof? = nil, dpopThumbprint: String? = nil
    ) {
        self.dpopThumbprint = dpopThumbprint
        self.credential = credential
        self.enrolledBy = enrolledBy
        self.id = id
        self.userID = userID
        self.name = name
        self.publicKey = publicKey
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
        self.keyReplacedAt = keyReplacedAt
        self.keyReplacement = keyReplacement
    }

    public var isRevoked: Bool { revokedAt != nil }

    /// When the current key arrived: the device's creation or its latest key replacement. A
    /// device's cool-down runs from here (``EnrolmentPolicy/coolDown``).
    public var keySince: Date { max(createdAt, keyReplacedAt ?? createdAt) }

    /// How the current key was allowed: its replacement's proof, else the enrolment's (nil: not recorded).
    public var keyProof: EnrolmentProof? { keyReplacement ?? enrolledBy }
}

/// What allowed a device's enrolment or a key replacement: the enrolment path, in the device list
/// and in access tokens (`enr`).
public enum EnrolmentProof: String, Sendable, Hashable, CaseIterable {
    /// Another device of the user approved the request.
    case approval
    /// A recovery code approved the request, or the app's backend did after its own account
    /// recovery (``UserAdministration/approveEnrolmentRequest(id:of:request:)``; the audit row
    /// says which).
    case recovery
    /// A primary login alone: a user's first device, or any with
    /// ``EnrolmentPolicy/Proof/primaryLoginOnly``.
    case primaryLogin
    /// An enrolment grant from the backend alone: a user's first device, or any with
    /// ``EnrolmentPolicy/Proof/primaryLoginOnly``.
    case grant
}

/// An issued challenge: everything the signed message is rebuilt from, plus what its purpose binds.
///
/// Its description, `dump()` and Mirror show purpose, user, device and times, never the challenge
/// id or the nonce (a challenge id is the bearer of a pending proof).
public struct ChallengeRecord: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What the challenge is for, with exactly the fields that purpose carries.
    public enum Binding: Sendable, Hashable {
        /// Enrolment of a new key: its 91-byte SPKI and the device's name. `replacing` is true for
        /// re-enrolment of an existing device whose key was invalidated.
        case registration(publicKey: Data, deviceName: String, replacing: Bool)
        case login
        /// A step-up, bound to the SHA-256 of the operation text the device shows and to the
        /// device key (its SPKI) it was issued for: another key of the same device — a re-key in
        /// between — cannot finish it. nil only for a challenge stored before step-ups named their
        /// key, which no key finishes.
        case stepUp(operationHash: Data, deviceKey: Data?)
        /// A passkey ceremony: its challenge is the nonce, answered with a WebAuthn response, never
        /// a signed BioAuth message.
        case passkey(PasskeyCeremony)

        /// The purpose of the message the device signs; nil for a passkey ceremony, which signs none.
        public var purpose: SignedMessage.Purpose? {
            switch self {
            case .registration: .registration
            case .login: .login
            case .stepUp: .stepUp
            case .passkey: nil
            }
        }
    }

    public var id: ChallengeID
    public var binding: Binding
    public var relyingPartyID: String
    public var userID: UserID
    public var deviceID: DeviceID
    public var nonce: Data
    public var createdAt: Date
    /// Whole seconds: the value the device signs.
    public var expiresAt: Date

    /// The session that asked for it (registration and step-up): only that session may finish it.
    public var sessionID: SessionID?
    /// For a registration that needed a proof: the approved ``EnrolmentRequestRecord`` it consumes.
    public var enrolmentRequestID: EnrolmentRequestID?

    public init(
        id: ChallengeID, binding: Binding, relyingPartyID: String, userID: UserID, deviceID: DeviceID, nonce: Data, createdAt: Date,
        expiresAt: Date,
        sessionID: SessionID? = nil, enrolmentRequestID: EnrolmentRequestID? = nil
    ) {
        self.sessionID = sessionID
        self.enrolmentRequestID = enrolmentRequestID
        self.id = id
        self.binding = binding
        self.relyingPartyID = relyingPartyID
        self.userID = userID
        self.deviceID = deviceID
        self.nonce = nonce
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    public var purpose: SignedMessage.Purpose? { binding.purpose }

    public var description: String { "ChallengeRecord(\(kind), userID: \(userID), deviceID: \(deviceID), expiresAt: \(expiresAt))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["purpose": kind, "userID": userID, "deviceID": deviceID, "createdAt": createdAt, "expiresAt": expiresAt])
    }

    /// What the challenge is for, as descriptions name it.
    package var kind: String {
        switch binding {
        case .passkey(.registration): "passkey registration"
        case .passkey(.authentication): "passkey authentication"
        default: purpose.map { "\($0)" } ?? "unknown"
        }
    }

    /// The message the device signed, rebuilt from what the server stored.
    public func message() throws(WireFormatError) -> SignedMessage {
        guard let purpose else { throw WireFormatError(.invalidValue, field: "purpose") }
        var operationHash: Data?
        if case .stepUp(let hash, _) = binding { operationHash = hash }
        return try SignedMessage(
            purpose: purpose, relyingPartyID: relyingPartyID, challengeID: id.bytes, nonce: nonce, userID: userID.rawValue,
            deviceID: deviceID.rawValue,
            expiresAt: UInt64(max(0, expiresAt.timeIntervalSince1970)), operationHash: operationHash)
    }
}

/// The WebAuthn ceremony a passkey challenge is for.
public enum PasskeyCeremony: Sendable, Hashable {
    /// Registering a new passkey under the device name the user gave, for the user handle the
    /// options named (``PasskeyCredential/userHandle``; nil: a ceremony begun before BioAuth
    /// chose random handles, whose handle is the user id's bytes).
    case registration(deviceName: String, userHandle: Data?)
    /// Signing in with one of the user's passkeys.
    case authentication
}

/// How a session was opened.
public enum SessionKind: String, Sendable, Hashable, Codable {
    /// The primary login (password): may enrol devices.
    case primary
    /// A device-key login.
    case device
    /// A one-time enrolment grant your backend issued after its own login
    /// (``BioAuthService/issueEnrolmentGrant(userID:request:)``): may enrol one device, nothing else.
    case enrolmentGrant
    /// A sign-in on another screen that an enrolled phone approved (``CrossDeviceRequestRecord``):
    /// ranked like a password (it proves a tap and the number, not a key of this screen's own);
    /// its ``SessionRecord/deviceID`` is the approving phone, whose revocation ends it. It may
    /// enrol one passkey without another approval.
    case crossDevice
}

/// A session: only the SHA-256 of its token is stored.
public struct SessionRecord: Sendable, Hashable {
    public var id: SessionID
    public var tokenHash: TokenHash
    public var userID: UserID
    public var deviceID: DeviceID?
    public var kind: SessionKind
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?
    /// SHA-256 of the session's current refresh token (device sessions); nil for none.
    public var refreshTokenHash: TokenHash?
    /// The JWK thumbprint of the key the session is bound to (DPoP, RFC 9449): its token, refresh
    /// token and access tokens are honoured only with a proof signed by that key. nil: bearer.
    public var dpopThumbprint: String?

    public init(
        id: SessionID, tokenHash: TokenHash, userID: UserID, deviceID: DeviceID?, kind: SessionKind, createdAt: Date, expiresAt: Date,
        revokedAt: Date? = nil,
        refreshTokenHash: TokenHash? = nil, dpopThumbprint: String? = nil
    ) {
        self.dpopThumbprint = dpopThumbprint
        self.refreshTokenHash = refreshTokenHash
        self.id = id
        self.tokenHash = tokenHash
        self.userID = userID
        self.deviceID = deviceID
        self.kind = kind
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }
}

/// A one-time step-up approval: only the SHA-256 of its token is stored.
public struct ApprovalRecord: Sendable, Hashable {
    public var tokenHash: TokenHash
    public var userID: UserID
    public var deviceID: DeviceID
    public var operationHash: Data
    public var createdAt: Date
    public var expiresAt: Date
    public var consumedAt: Date?
    /// The session that obtained it. Revoking that session (or logging it out), revoking the
    /// signing device, replacing its key, or revoking all the user's sessions withdraws the
    /// approval: it cannot be redeemed after. nil only for rows written before this was recorded.
    public var sessionID: SessionID?

    /// Redeemable for `operationHash` by `userID` at `now`: not consumed, not expired, approving
    /// exactly that operation for that user. (That its device is still active is the caller's
    /// other condition.)
    public func isRedeemable(for operationHash: Data, by userID: UserID, at now: Date) -> Bool {
        consumedAt == nil && expiresAt > now && self.operationHash == operationHash && self.userID == userID
    }

    public init(
        tokenHash: TokenHash, userID: UserID, deviceID: DeviceID, operationHash: Data, createdAt: Date, expiresAt: Date,
        consumedAt: Date? = nil,
        sessionID: SessionID? = nil
    ) {
        self.sessionID = sessionID
        self.tokenHash = tokenHash
        self.userID = userID
        self.deviceID = deviceID
        self.operationHash = operationHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.consumedAt = consumedAt
    }
}

/// What the audit log and failure counters keep, and for how long. Swept by every instance.
public struct RetentionPolicy: Sendable, Hashable {
    /// Audit rows older than this are deleted.
    public var audit: TimeInterval
    /// A user's consecutive-password-failure run is forgotten after this long without an attempt
    /// (window counters go as soon as their window is over).
    public var passwordRuns: TimeInterval
    /// A session that expired or was revoked this long ago is deleted, with its spent refresh
    /// tokens: a user's session list (`GET /v1/sessions`) stays bounded. A deleted session's
    /// refresh tokens answer "unknown" rather than "reused" (it could not refresh anyway).
    public var sessions: TimeInterval

    public init(audit: TimeInterval = 90 * 86_400, passwordRuns: TimeInterval = 30 * 86_400, sessions: TimeInterval = 30 * 86_400) {
        self.audit = audit
        self.passwordRuns = passwordRuns
        self.sessions = sessions
    }
}

/// What one sweep deleted.
public struct SweepResult: Sendable, Hashable {
    public var challenges: Int
    public var counters: Int
    public var auditRows: Int
    public var approvals: Int
    public var enrolmentRequests: Int
    public var sessions: Int
    /// Signing keys past their publication window (``SigningKeyStatus/State/expired``).
    public var signingKeys: Int
    /// Devices revoked because their removal's security delay passed (``DeviceRemovalRecord``).
    public var removedDevices: Int = 0

    public init(
        challenges: Int = 0, counters: Int = 0, auditRows: Int = 0, approvals: Int = 0, enrolmentRequests: Int = 0, sessions: Int = 0,
        signingKeys: Int = 0
    ) {
        self.signingKeys = signingKeys
        self.sessions = sessions
        self.enrolmentRequests = enrolmentRequests
        self.challenges = challenges
        self.counters = counters
        self.auditRows = auditRows
        self.approvals = approvals
    }
}

/// A store failure the service handles.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }
        /// A row with the same key exists.
        public static let duplicate = Code("duplicate")
        /// A stored row breaks the schema (a NULL or missing column, an unknown enum value): the
        /// store never substitutes a default.
        public static let corruptRow = Code("corruptRow")
        /// The database cannot be reached or refused for a transient reason; the request may be
        /// retried (HTTP 503 with Retry-After).
        public static let unavailable = Code("unavailable")
        /// The database records migrations this binary does not know: it was written by a newer
        /// BioAuth. Nothing is read or written; run the newer version (or restore a backup).
        public static let schemaTooNew = Code("schemaTooNew")
    }

    public let code: Code
    /// Where: a table and column for `corruptRow`, the database's own error class otherwise.
    /// Never a value.
    public let detail: String?

    public init(_ code: Code, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "StoreError.\(code)" + (detail.map { " (\($0))" } ?? "") }
}
