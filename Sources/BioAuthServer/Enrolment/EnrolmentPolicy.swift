import BioAuthCore
import Crypto
import Foundation

/// Who may enrol a device key, and what a new device may do at first. The default is the secure
/// choice; each weaker one is named for what it gives up (`docs/ThreatModel.md`).
public struct EnrolmentPolicy: Sendable, Hashable {
    /// What enrolling any device but the user's first needs beyond a primary login or grant.
    public struct Proof: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        /// An approval from another active device of the user (a step-up showing the text of
        /// `EnrolmentApprovalText`), or a recovery code delivered by the deployment's
        /// ``RecoveryChannel``. The default.
        public static let approvalOrRecovery = Proof("approvalOrRecovery")
        /// Weaker: a primary login (or grant) alone enrols any number of devices and re-keys any
        /// device. Whoever phishes the password gets a device key that passes biometric login
        /// and step-up (`docs/ThreatModel.md`, "phished password enrols a device").
        public static let primaryLoginOnly = Proof("primaryLoginOnly")
    }

    /// Needed for a second device, and for a new key of a device whose key was invalidated. The
    /// user's first device ever needs only the primary login or grant.
    public var additionalDevices: Proof
    /// A device that is not the user's first cannot approve step-ups or enrolments for this long
    /// (24 h) after its key arrived — enrolled, or replaced (``isCoolingDown(_:among:at:)``):
    /// whoever got it enrolled or re-keyed cannot use it at once, and the owner has a day to see
    /// it in the device list and revoke it.
    public var coolDown: TimeInterval
    /// How long an enrolment request waits for its approval or recovery code (15 minutes).
    public var requestTTL: TimeInterval
    /// Wrong recovery codes before the request is dead (a new request starts again).
    public var maxRecoveryAttempts: Int
    /// How long an enrolment grant from ``BioAuthService/issueEnrolmentGrant(userID:request:)`` lives (10 minutes).
    public var grantTTL: TimeInterval
    /// How many recovery codes may be sent, and how often.
    public var recoveryCodes: RecoveryCodeLimits
    /// How long a device removal that a password and a recovery code scheduled waits before it
    /// happens (24 h, `--lost-device-delay`): time for any of the user's devices to see it and
    /// cancel it (``DeviceRemovalRecord``).
    public var lostDeviceDelay: TimeInterval

    public init(
        additionalDevices: Proof = .approvalOrRecovery, coolDown: TimeInterval = 86_400, requestTTL: TimeInterval = 900,
        maxRecoveryAttempts: Int = 5,
        grantTTL: TimeInterval = 600, recoveryCodes: RecoveryCodeLimits = RecoveryCodeLimits(), lostDeviceDelay: TimeInterval = 86_400
    ) {
        self.lostDeviceDelay = lostDeviceDelay
        self.additionalDevices = additionalDevices
        self.coolDown = coolDown
        self.requestTTL = requestTTL
        self.maxRecoveryAttempts = maxRecoveryAttempts
        self.grantTTL = grantTTL
        self.recoveryCodes = recoveryCodes
    }

    /// When `device`'s cool-down ends, if it has one (``isCoolingDown(_:among:at:)``): before
    /// then, only the first-device exemption can free it.
    public func coolDownEnd(of device: DeviceRecord) -> Date { device.keySince.addingTimeInterval(coolDown) }

    /// What a device in its cool-down (`actor`) may still rename or revoke: itself, and devices
    /// whose key arrived no earlier than its own. Whoever got a device enrolled or re-keyed cannot
    /// use it to remove the owner's older phones before the owner has seen it.
    public func mayManage(_ target: DeviceRecord, from actor: DeviceRecord) -> Bool {
        target.id == actor.id || target.keySince >= actor.keySince
    }

    /// True while `device` is in its cool-down at `now`: less than ``coolDown`` since its current
    /// key arrived (``DeviceRecord/keySince``). Only the user's first device ever, with its first
    /// key, is exempt; a replaced key — by recovery code, approval or login — is treated like a new
    /// device, so a phished password and a recovery code cannot turn the owner's oldest device
    /// into an approver at once. `devices` are the user's devices, revoked ones too.
    public func isCoolingDown(_ device: DeviceRecord, among devices: [DeviceRecord], at now: Date) -> Bool {
        guard now < coolDownEnd(of: device) else { return false }
        // A tie in creation time exempts neither; revoking every device does not make the next one first.
        let isFirstWithFirstKey =
            device.keyReplacedAt == nil && !devices.contains { $0.id != device.id && $0.createdAt <= device.createdAt }
        return !isFirstWithFirstKey
    }
}

/// How many recovery codes a password session can have sent to the owner: whoever phished the
/// password cannot use the recovery channel to flood the owner's inbox or phone from one address,
/// and cannot spend the owner's own codes from another (the daily budget is the requester's).
public struct RecoveryCodeLimits: Sendable, Hashable {
    /// Codes per enrolment request (3); a new request starts again, within ``perRequesterPerDay``.
    public var perRequest: Int
    /// Least time between two codes for one request (60 s).
    public var interval: TimeInterval
    /// Codes for one user's requests from one client address (IPv4 address, IPv6 prefix) in a
    /// fixed 24-hour window, across every request (10).
    public var perRequesterPerDay: Int
    /// Codes for one user from every address in a fixed 24-hour window (20): the owner's mailbox
    /// gets at most this many a day however many addresses ask. Strangers who spend it leave the
    /// owner without codes until the window ends (device logins, known addresses and the
    /// backend need none) — the price of not flooding the owner's mail, named in the threat model.
    public var perUserPerDay: Int

    public init(perRequest: Int = 3, interval: TimeInterval = 60, perRequesterPerDay: Int = 10, perUserPerDay: Int = 20) {
        self.perRequest = perRequest
        self.interval = interval
        self.perRequesterPerDay = perRequesterPerDay
        self.perUserPerDay = perUserPerDay
    }

    /// The window of ``perRequesterPerDay``.
    public static let day: TimeInterval = 86_400
    /// How long a sign-in code (``RecoveryMessage/Purpose-swift.enum/signIn``) works: 15 minutes.
    public static let signInCodeLifetime: TimeInterval = 900
}

/// Why an enrolment request ended before it was used or expired.
public enum EnrolmentRequestEnding: String, Sendable, Hashable, Codable {
    /// ``EnrolmentPolicy/maxRecoveryAttempts`` wrong recovery codes were entered.
    case wrongCodes
    /// The owner cancelled it from an enrolled device.
    case cancelled
}

/// A device waiting to be enrolled: created when a second device (or a new key) needs an
/// approval or a recovery code; consumed by the enrolment it allows.
public struct EnrolmentRequestRecord: Sendable, Hashable {
    public var id: EnrolmentRequestID
    public var userID: UserID
    /// The id the device will have: new, or the device whose key is replaced.
    public var deviceID: DeviceID
    public var name: String
    /// The 91-byte P-256 SPKI of the key to enrol.
    public var publicKey: Data
    public var replacing: Bool
    /// The session that asked: only it may enrol with this request.
    public var sessionID: SessionID
    public var createdAt: Date
    public var expiresAt: Date
    /// When an approval or a recovery code allowed it; nil while it waits.
    public var approvedAt: Date?
    /// The device whose step-up approved it; nil for a recovery code (or while it waits).
    public var approvedByDevice: DeviceID?
    /// SHA-256 of the recovery code last sent for it.
    public var recoveryCodeHash: TokenHash?
    public var recoveryAttempts: Int
    /// Recovery codes sent for it, and when the last one was (``RecoveryCodeLimits``).
    public var codesSent: Int
    public var lastCodeSentAt: Date?
    /// When and why it ended (``EnrolmentRequestEnding``); an ended request is never pending,
    /// approvable, counted, or usable for an enrolment again.
    public var endedAt: Date?
    public var ending: EnrolmentRequestEnding?
    /// SHA-256 of the text an approving device must sign: ``approvalText`` with the binding code
    /// (``bound(to:)``). nil: no device can approve it (a request stored before binding codes); a
    /// recovery code still can. A ``TokenHash``, so it shows in no description or `dump()`: the
    /// code has 40 bits, and its hash would give it away to a brute force.
    public var approvalHash: TokenHash?
    /// The client address that asked, as limits count it (an IPv4 address, an IPv6 prefix):
    /// pending requests are capped per requester, never per user, so a stranger's requests never
    /// refuse the owner's (`WritePlan.requestEnrolment(_:_:maxPending:at:audit:)`). nil for a
    /// request stored before requests remembered it.
    public var requester: String?
    /// For a passkey after the user's first device: its verified credential, enrolled once the
    /// request is approved (``publicKey`` is then the credential key's SPKI). nil for an app's key.
    public var passkey: PasskeyCredential?

    public init(
        id: EnrolmentRequestID, userID: UserID, deviceID: DeviceID, name: String, publicKey: Data, replacing: Bool, sessionID: SessionID,
        createdAt: Date, expiresAt: Date,
        approvedAt: Date? = nil, approvedByDevice: DeviceID? = nil, recoveryCodeHash: TokenHash? = nil, recoveryAttempts: Int = 0,
        codesSent: Int = 0,
        lastCodeSentAt: Date? = nil, endedAt: Date? = nil, ending: EnrolmentRequestEnding? = nil, approvalHash: TokenHash? = nil,
        requester: String? = nil, passkey: PasskeyCredential? = nil
    ) {
        self.passkey = passkey
        self.approvalHash = approvalHash
        self.requester = requester
        self.codesSent = codesSent
        self.lastCodeSentAt = lastCodeSentAt
        self.endedAt = endedAt
        self.ending = ending
        self.id = id
        self.userID = userID
        self.deviceID = deviceID
        self.name = name
        self.publicKey = publicKey
        self.replacing = replacing
        self.sessionID = sessionID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.approvedAt = approvedAt
        self.approvedByDevice = approvedByDevice
        self.recoveryCodeHash = recoveryCodeHash
        self.recoveryAttempts = recoveryAttempts
    }

    public var isApproved: Bool { approvedAt != nil }

    public var hasEnded: Bool { endedAt != nil }

    /// Waiting for an approval or a recovery code: not approved, not ended, not expired at `now`.
    public func isPending(at now: Date) -> Bool { approvedAt == nil && endedAt == nil && expiresAt > now }

    /// Approved and still usable for its one enrolment at `now`: not ended, not expired.
    public func isUsable(at now: Date) -> Bool { approvedAt != nil && endedAt == nil && expiresAt > now }

    /// The text the approving device shows; it signs this text with the binding code.
    public var approvalText: String {
        EnrolmentApprovalText.make(deviceName: name, publicKey: publicKey, replacing: replacing)
    }

    /// This request approvable only by a step-up over its text with `code`
    /// (`EnrolmentApprovalText.signed(_:bindingCode:)`).
    public func bound(to code: BindingCode) -> EnrolmentRequestRecord {
        var bound = self
        bound.approvalHash = TokenHash(ofText: EnrolmentApprovalText.signed(approvalText, bindingCode: code.text))
        return bound
    }
}

/// What an entered recovery code did (`WritePlan.recovery(of:entered:maxAttempts:at:audit:)`).
public enum RecoveryOutcome: Sendable, Hashable {
    /// The code matched: the request is approved.
    case approved
    /// A wrong code, counted; `attemptsLeft` more are allowed (0: the request is dead).
    case wrongCode(attemptsLeft: Int)
    /// No unexpired, unapproved request with a code sent and attempts left.
    case unavailable
}
