import BioAuthCore
import Foundation

/// Why a device removal ended.
public enum DeviceRemovalEnding: String, Sendable, Hashable, Codable {
    /// One of the user's enrolled devices cancelled it.
    case cancelled
    /// ``EnrolmentPolicy/maxRecoveryAttempts`` wrong recovery codes were entered.
    case wrongCodes
    /// Its delay passed and the device was revoked.
    case executed
    /// The device was revoked, or the user's account changed, before the delay passed.
    case deviceGone
}

/// The lost-phone case, when the owner has no other device to remove it with: a password session
/// asks, a recovery code sent to the owner's channel confirms, and the device is revoked only
/// after ``EnrolmentPolicy/lostDeviceDelay`` — while every enrolled device lists the removal and
/// a device with an older key than the target's may cancel it (``mayCancel(removalOf:by:among:)``).
/// A phished password alone schedules nothing; with the owner's mailbox too it still cannot take
/// the phone away while the phone is in the owner's hand — and a phone that attacker recovered
/// cannot cancel the owner's removal of it.
public struct DeviceRemovalRecord: Sendable, Hashable {
    public var id: DeviceRemovalID
    public var userID: UserID
    /// The device to revoke.
    public var deviceID: DeviceID
    /// The session that asked: only it may enter the code.
    public var sessionID: SessionID
    /// The client address that asked, as limits count it: its codes count against that
    /// requester's daily recovery-code budget (``RecoveryCodeLimits/perRequesterPerDay``).
    public var requester: String
    public var createdAt: Date
    /// Until when the code may be entered (``EnrolmentPolicy/requestTTL``).
    public var codeExpiresAt: Date
    /// SHA-256 of the code sent for it. A ``TokenHash``: it shows in no description or `dump()`.
    public var codeHash: TokenHash
    public var codeAttempts: Int
    /// When the code was entered, and when the removal happens; nil until then.
    public var scheduledAt: Date?
    public var executesAt: Date?
    /// When and why it ended; an ended removal does nothing more.
    public var endedAt: Date?
    public var ending: DeviceRemovalEnding?

    public init(
        id: DeviceRemovalID, userID: UserID, deviceID: DeviceID, sessionID: SessionID, requester: String, createdAt: Date,
        codeExpiresAt: Date,
        codeHash: TokenHash, codeAttempts: Int = 0, scheduledAt: Date? = nil, executesAt: Date? = nil, endedAt: Date? = nil,
        ending: DeviceRemovalEnding? = nil
    ) {
        self.id = id
        self.userID = userID
        self.deviceID = deviceID
        self.sessionID = sessionID
        self.requester = requester
        self.createdAt = createdAt
        self.codeExpiresAt = codeExpiresAt
        self.codeHash = codeHash
        self.codeAttempts = codeAttempts
        self.scheduledAt = scheduledAt
        self.executesAt = executesAt
        self.endedAt = endedAt
        self.ending = ending
    }

    /// Where a removal stands at a moment.
    public enum Status: String, Sendable, Hashable {
        /// Waiting for its recovery code.
        case awaitingCode
        /// Confirmed: the device is revoked at ``DeviceRemovalRecord/executesAt`` unless cancelled.
        case scheduled
        /// Ended (``DeviceRemovalRecord/ending``), or its code was never entered in time.
        case ended
    }

    public func status(at now: Date) -> Status {
        if endedAt != nil { return .ended }
        if scheduledAt != nil { return .scheduled }
        return now < codeExpiresAt ? .awaitingCode : .ended
    }

    /// Whether it still matters: waiting for its code, or scheduled.
    public func isOpen(at now: Date) -> Bool { status(at: now) != .ended }

    /// Whether `actor` may cancel a removal of `target` (nil: gone already). A device with an older
    /// key than the target's may (``DeviceRecord/keySince``); the target itself only while it is
    /// the user's oldest active device (no other active device's key is as old). So the owner's
    /// old phone cancels an attacker's removal of it, and a phone the attacker recovered — newer
    /// than the owner's — cannot cancel the owner's removal of it. `devices`: the user's devices.
    public static func mayCancel(removalOf target: DeviceRecord?, by actor: DeviceRecord, among devices: [DeviceRecord]) -> Bool {
        guard let target, !target.isRevoked else { return true }
        guard actor.id == target.id else { return actor.keySince < target.keySince }
        return !devices.contains { !$0.isRevoked && $0.id != target.id && $0.keySince <= target.keySince }
    }
}

/// What an entered removal code did.
public enum DeviceRemovalConfirmation: Sendable, Hashable {
    /// The code matched: the removal is scheduled.
    case scheduled(DeviceRemovalRecord)
    /// Wrong; `attemptsLeft` more may be tried (0: the removal ended).
    case wrongCode(attemptsLeft: Int)
    /// No removal of this session waits for a code.
    case unavailable
}

extension WritePlan {
    /// A removal of `removal.deviceID` with its first code, counted against the requester's daily
    /// recovery-code budget (the counter in `rows`): nil when the budget is spent (the time it
    /// frees up), else the plan. The device must still be active when it is written.
    package static func requestDeviceRemoval(
        _ removal: DeviceRemovalRecord, _ rows: LockedRows, limits: RecoveryCodeLimits, audit: AuditEvent
    ) -> (verdict: Date?, plan: WritePlan) {
        var plan = WritePlan()
        if let until = plan.chargeRecoveryCode(
            rows, userID: removal.userID, requester: removal.requester, limits: limits, at: removal.createdAt)
        {
            return (until, WritePlan())
        }
        plan.require(.activeDevice(id: removal.deviceID, userID: removal.userID))
        plan.add(.insertDeviceRemoval(removal))
        plan.audit(audit)
        return (nil, plan)
    }

    /// A code entered for the removal in `rows` by `sessionID`: a match (compared in constant time)
    /// schedules it `delay` from now with `audit`; a mismatch counts an attempt, and the last
    /// allowed mismatch ends it.
    package static func confirmDeviceRemoval(
        _ rows: LockedRows, sessionID: SessionID, entered: TokenHash, maxAttempts: Int, delay: TimeInterval, at now: Date, audit: AuditEvent
    ) -> (verdict: DeviceRemovalConfirmation, plan: WritePlan) {
        guard var removal = rows.deviceRemoval, removal.sessionID == sessionID, removal.status(at: now) == .awaitingCode,
            removal.codeAttempts < maxAttempts
        else {
            return (.unavailable, WritePlan())
        }
        var plan = WritePlan()
        if constantTimeEquals(removal.codeHash.digest, entered.digest) {
            removal.scheduledAt = now
            removal.executesAt = now.addingTimeInterval(delay)
            plan.add(.updateDeviceRemoval(removal))
            plan.audit(audit)
            return (.scheduled(removal), plan)
        }
        removal.codeAttempts += 1
        let left = maxAttempts - removal.codeAttempts
        if left == 0 {
            removal.endedAt = now
            removal.ending = .wrongCodes
        }
        plan.add(.updateDeviceRemoval(removal))
        plan.audit(audit.rejectedRecovery)
        return (.wrongCode(attemptsLeft: left), plan)
    }

    /// Ends `userID`'s open removal in `rows` (``DeviceRemovalEnding/cancelled``); false with
    /// nothing written when there is none.
    package static func cancelDeviceRemoval(_ rows: LockedRows, userID: UserID, at now: Date, audit: AuditEvent) -> (
        verdict: Bool, plan: WritePlan
    ) {
        guard var removal = rows.deviceRemoval, removal.userID == userID, removal.isOpen(at: now) else { return (false, WritePlan()) }
        removal.endedAt = now
        removal.ending = .cancelled
        var plan = WritePlan()
        plan.add(.updateDeviceRemoval(removal))
        plan.audit(audit)
        return (true, plan)
    }

    /// The removal in `rows` once its delay passed: revokes the device as
    /// ``revokeDevice(id:userID:at:audit:)`` does and ends the removal as executed — or, when the
    /// device is gone already, only ends it. Nothing when it is not due.
    package static func executeDeviceRemoval(_ rows: LockedRows, deviceActive: Bool, at now: Date, audit: AuditEvent) -> (
        verdict: Bool, plan: WritePlan
    ) {
        guard var removal = rows.deviceRemoval, removal.status(at: now) == .scheduled, let due = removal.executesAt, due <= now else {
            return (false, WritePlan())
        }
        removal.endedAt = now
        removal.ending = deviceActive ? .executed : .deviceGone
        var plan = deviceActive ? WritePlan.revokeDevice(id: removal.deviceID, userID: removal.userID, at: now, audit: audit) : WritePlan()
        plan.add(.updateDeviceRemoval(removal))
        return (deviceActive, plan)
    }
}
