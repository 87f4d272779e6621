import Foundation

/// One request's writes, decided by a flow and applied by a store in one transaction
/// (``BioAuthStore/apply(_:)``). The store first checks every guard inside the transaction — if
/// one fails, nothing is written — then runs the mutations in order. A store translates each case
/// to its SQL and decides nothing: what a change withdraws, audits and delivers is written once, in
/// the plans below (``WritePlan/revokeDevice(id:userID:at:audit:)`` and its neighbours).
public struct WritePlan: Sendable, Hashable {
    /// A condition that must hold inside the transaction, against concurrent requests and instances.
    public enum Guard: Sendable, Hashable {
        /// The user's device exists and is not revoked.
        case activeDevice(id: String, userID: String)
        /// The user's device exists, revoked or not.
        case ownedDevice(id: String, userID: String)
        /// The user's session exists and is not revoked.
        case activeSession(id: String, userID: String)
        /// The API key exists and is not revoked.
        case activeApiKey(id: String)
        /// The user has fewer than `limit` enrolment requests unexpired at `now` and unapproved
        /// (counted under a per-user lock: concurrent requests cannot all pass).
        case fewerPendingEnrolmentRequests(userID: String, limit: Int, now: Date)
    }

    /// Which live sessions a revocation ends.
    public enum Sessions: Sendable, Hashable {
        case one(id: String, userID: String)
        /// Every session the device opened.
        case openedBy(deviceID: String, userID: String)
        case allOf(userID: String)
    }

    /// Which unredeemed approvals a withdrawal deletes.
    public enum Approvals: Sendable, Hashable {
        /// Those the device signed, and those any session it opened obtained.
        case ofDevice(id: String, userID: String)
        /// Those the session obtained.
        case obtainedBy(sessionID: String)
        case allOf(userID: String)
    }

    public enum Mutation: Sendable, Hashable {
        case renameDevice(id: String, name: String)
        /// Inserts the request; an existing id throws ``StoreError`` `duplicate` and nothing is written.
        case insertEnrolmentRequest(EnrolmentRequestRecord)
        case revokeApiKey(id: String, at: Date)
        case revokeDevice(id: String, at: Date)
        /// Sets `revokedAt` on the selected sessions not yet revoked; their number is the outcome's.
        case revokeSessions(Sessions, at: Date)
        case withdrawApprovals(Approvals)
        /// One audit row, merged into the row it repeats (``AuditEvent/aggregates``).
        case appendAudit(AuditEvent)
        /// One event for the webhook outbox (its ``AuditEvent/delivered`` fields: no address, no request id).
        case enqueueEvent(AuditEvent)
    }

    public private(set) var guards: [Guard] = []
    public private(set) var mutations: [Mutation] = []

    public init() {}

    public mutating func require(_ condition: Guard) { guards.append(condition) }
    public mutating func add(_ mutation: Mutation) { mutations.append(mutation) }

    /// Appends the event to the audit log and, for a kind in ``AuditKind/deliveredEvents``, to
    /// the webhook outbox: the outbox rule, in one place.
    public mutating func audit(_ event: AuditEvent) {
        mutations.append(.appendAudit(event))
        if AuditKind.deliveredEvents.contains(event.kind) { mutations.append(.enqueueEvent(event.delivered)) }
    }
}

/// What ``BioAuthStore/apply(_:)`` did.
public enum PlanOutcome: Sendable, Hashable {
    /// Every mutation ran; `revokedSessions` is how many sessions the revocations ended.
    case applied(revokedSessions: Int)
    /// This guard failed: nothing was written.
    case refused(WritePlan.Guard)

    public var wasApplied: Bool {
        if case .applied = self { return true }
        return false
    }
}
