import BioAuthCore
import Foundation
import Logging

extension AuditKind {
    /// The events a backend can act on. Every store writes each of them to its outbox in the same
    /// transaction as the change and its audit row, so none is lost between commit and delivery.
    public static let deliveredEvents: Set<AuditKind> = [
        loginSucceeded, deviceEnrolled, deviceReenrolled, deviceRevoked, lockout, enrolmentRequested, recoveryCodeSent, passwordChanged,
        deviceRemovalRequested, deviceRemovalScheduled, deviceRemovalCancelled, signInCodeSent, deviceReattested,
        crossDeviceRequested, crossDeviceApproved,
    ]
    /// The events delivered only when a deployment asks for them (``DeliveryPolicy/optionalEvents``):
    /// every device login, and lockouts — which anyone can cause from an address of their own, so
    /// by default they cannot flood the receiver.
    public static let optionalEvents: Set<AuditKind> = [loginSucceeded, lockout]
    /// The security events: a device's key arrived, was replaced or removed, someone asked to
    /// add a device or for a recovery code, the password changed — what a deployment forwards to
    /// the owner's mail or phone. Delivered before the others of a round.
    public static let securityEvents: Set<AuditKind> = [
        deviceEnrolled, deviceReenrolled, deviceRevoked, enrolmentRequested, recoveryCodeSent, passwordChanged, deviceRemovalRequested,
        deviceRemovalScheduled,
        deviceRemovalCancelled, signInCodeSent, deviceReattested, crossDeviceRequested, crossDeviceApproved,
    ]
    /// What `GET /v1/security-events` lists for the owner: the security events, and how the
    /// account answered them (a device renamed, a request approved or ended, sessions ended).
    public static let securityNotices: Set<AuditKind> = securityEvents.union([
        deviceRenamed, enrolmentApproved, enrolmentRequestEnded, sessionsRevoked, crossDeviceEnded,
    ])
}

extension AuditEvent {
    /// What the outbox keeps of an audit event: kind, time, user, device and reason — not the
    /// client's address or the request id.
    public var delivered: AuditEvent { AuditEvent(at: at, kind: kind, userID: userID, deviceID: deviceID, reason: reason) }
}

/// An event waiting in the outbox: its id (increasing), what happened, and its delivery attempts.
public struct OutboxEvent: Sendable, Hashable {
    public var id: Int64
    /// What happened: the audit event's kind, time, user, device and reason (never a secret).
    public var event: AuditEvent
    /// Failed deliveries so far.
    public var attempts: Int

    public init(id: Int64, event: AuditEvent, attempts: Int) {
        self.id = id
        self.event = event
        self.attempts = attempts
    }
}

/// The outbox at a glance, for metrics: events waiting, the oldest one's time, dead letters.
public struct OutboxStatus: Sendable, Hashable {
    public var pending: Int
    public var oldestPendingAt: Date?
    public var deadLetters: Int

    public init(pending: Int, oldestPendingAt: Date?, deadLetters: Int) {
        self.pending = pending
        self.oldestPendingAt = oldestPendingAt
        self.deadLetters = deadLetters
    }
}

/// Where the events go: the standalone server posts them as signed webhooks; an embedding
/// backend may act on them in-process. Delivery is at least once: a sink that crashes after
/// acting and before returning sees the event again — deduplicate by ``OutboxEvent/id``.
public protocol EventSink: Sendable {
    /// Delivers one event; throwing schedules a retry with back-off.
    func deliver(_ event: OutboxEvent) async throws
}

/// How the outbox is drained.
public struct DeliveryPolicy: Sendable, Hashable {
    /// Events claimed per round.
    public var batchSize: Int
    /// How long a claimed event is reserved for this instance (another instance takes it after).
    public var lease: TimeInterval
    /// How often an idle outbox is polled.
    public var pollInterval: TimeInterval
    /// Back-off after the n-th failure: `firstRetry` × 2ⁿ⁻¹, at most `maxRetry`. Retries never stop;
    /// an event older than the audit retention is swept with the audit log.
    public var firstRetry: TimeInterval
    public var maxRetry: TimeInterval
    /// How many users' events are delivered at once (8): one user's events go one at a time, in
    /// order; a receiver that refuses one user's event holds back only that user's later ones.
    public var concurrency: Int
    /// Which of ``AuditKind/optionalEvents`` are delivered (none by default); the others are
    /// removed from the outbox undelivered.
    public var optionalEvents: Set<AuditKind>
    /// Failed attempts after which an event is set aside as a dead letter (20: about two and a
    /// half hours of retries at the default back-off), so that its user's later events go on;
    /// `bioauth-server webhooks dead-letters` lists and replays them.
    public var maxAttempts: Int

    public init(
        batchSize: Int = 50, lease: TimeInterval = 30, pollInterval: TimeInterval = 1, firstRetry: TimeInterval = 1,
        maxRetry: TimeInterval = 600,
        concurrency: Int = 8, optionalEvents: Set<AuditKind> = [], maxAttempts: Int = 20
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.concurrency = max(1, concurrency)
        self.optionalEvents = optionalEvents
        self.batchSize = batchSize
        self.lease = lease
        self.pollInterval = pollInterval
        self.firstRetry = firstRetry
        self.maxRetry = maxRetry
    }

    /// The kinds this policy delivers: the security events and the optional ones asked for.
    public var deliveredEvents: Set<AuditKind> { AuditKind.deliveredEvents.subtracting(AuditKind.optionalEvents).union(optionalEvents) }

    /// When to try again after `attempts` failures.
    public func retryDelay(afterAttempts attempts: Int) -> TimeInterval {
        min(maxRetry, firstRetry * pow(2, Double(max(0, min(attempts, 30) - 1))))
    }
}

/// Drains the outbox into an ``EventSink``: claims due events (leased, so instances share the
/// work), delivers them in order, deletes each delivered one, reschedules each failure.
public struct OutboxDelivery: Sendable {
    public let store: any BioAuthStore
    public let sink: any EventSink
    public let policy: DeliveryPolicy
    public let clock: any WallClock
    let logger: Logger

    public init(
        store: any BioAuthStore, sink: any EventSink, policy: DeliveryPolicy = DeliveryPolicy(), clock: any WallClock = SystemWallClock(),
        logger: Logger
    ) {
        self.store = store
        self.sink = sink
        self.policy = policy
        self.clock = clock
        self.logger = logger
    }

    /// One round: returns how many events were delivered. The claimed events are split into
    /// lanes, one per user (`lanes(_:)`); up to ``DeliveryPolicy/concurrency`` lanes deliver at
    /// once, each in order. After a failure the rest of that lane waits for its retry, so one
    /// user's events stay in order and nobody else's wait behind them.
    @discardableResult
    public func deliverDue() async throws -> Int {
        let now = clock.now()
        let due = try await store.claimOutbox(
            now: now, leaseUntil: now.addingTimeInterval(policy.lease), limit: policy.batchSize, first: AuditKind.securityEvents)
        var lanes = Self.lanes(due, optional: policy.optionalEvents)
        for event in lanes.skipped { try await store.completeOutbox(id: event.id) }
        return try await withThrowingTaskGroup(of: Int.self) { group in
            var delivered = 0
            var running = 0
            while !lanes.ordered.isEmpty || running > 0 {
                while running < policy.concurrency, !lanes.ordered.isEmpty {
                    let lane = lanes.ordered.removeFirst()
                    group.addTask { try await self.deliver(lane, claimedAt: now) }
                    running += 1
                }
                if let count = try await group.next() {
                    delivered += count
                    running -= 1
                }
            }
            return delivered
        }
    }

    /// Delivers one lane in order; after a failure reschedules the rest of it — unless that was
    /// the event's last attempt (``DeliveryPolicy/maxAttempts``): then it becomes a dead letter
    /// and the lane goes on. Returns how many it delivered.
    private func deliver(_ lane: [OutboxEvent], claimedAt now: Date) async throws -> Int {
        var delivered = 0
        for (index, event) in lane.enumerated() {
            do {
                try await sink.deliver(event)
                try await store.completeOutbox(id: event.id)
                delivered += 1
            } catch {
                logger.warning(
                    "event delivery failed",
                    metadata: ["event": "\(event.id)", "attempts": "\(event.attempts + 1)", "error": "\(type(of: error))"])
                if event.attempts + 1 >= policy.maxAttempts {
                    try await store.deadLetterOutbox(id: event.id, attempts: event.attempts + 1, at: now)
                    logger.error("event set aside as a dead letter", metadata: ["event": "\(event.id)", "kind": "\(event.event.kind)"])
                    continue
                }
                let next = now.addingTimeInterval(policy.retryDelay(afterAttempts: event.attempts + 1))
                for pending in lane[index...] {
                    try await store.retryOutbox(
                        id: pending.id, attempts: pending.id == event.id ? event.attempts + 1 : pending.attempts, nextAttemptAt: next)
                }
                return delivered
            }
        }
        return delivered
    }

    /// The claimed events as lanes: one per user (events without a user — a lockout of an
    /// address — each in a lane of its own), each in the outbox's order; lanes holding an event
    /// about a device's key (``AuditKind/securityEvents``) first. Events of an optional kind not
    /// asked for are skipped.
    static func lanes(_ events: [OutboxEvent], optional: Set<AuditKind>) -> (ordered: [[OutboxEvent]], skipped: [OutboxEvent]) {
        var skipped: [OutboxEvent] = []
        var lanes: [[OutboxEvent]] = []
        var laneOfUser: [UserID: Int] = [:]
        for event in events {
            if AuditKind.optionalEvents.contains(event.event.kind), !optional.contains(event.event.kind) {
                skipped.append(event)
                continue
            }
            if let user = event.event.userID, let index = laneOfUser[user] {
                lanes[index].append(event)
            } else {
                if let user = event.event.userID { laneOfUser[user] = lanes.count }
                lanes.append([event])
            }
        }
        let security = lanes.filter { $0.contains { AuditKind.securityEvents.contains($0.event.kind) } }
        let others = lanes.filter { !$0.contains { AuditKind.securityEvents.contains($0.event.kind) } }
        return (security + others, skipped)
    }

    /// Runs until cancelled: a round, then a pause when nothing was delivered.
    public func run() async {
        while !Task.isCancelled {
            let delivered: Int
            do { delivered = try await deliverDue() } catch {
                logger.warning("outbox unavailable", metadata: ["error": "\(type(of: error))"])
                delivered = 0
            }
            if delivered == 0 { try? await Task.sleep(for: .seconds(policy.pollInterval)) }
        }
    }
}
