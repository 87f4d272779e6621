import BioAuthCore
import Foundation
import Logging

extension AuditKind {
    /// The events a backend can act on. Every store writes each of them to its outbox in the same
    /// transaction as the change and its audit row, so none is lost between commit and delivery.
    public static let deliveredEvents: Set<AuditKind> = [loginSucceeded, deviceEnrolled, deviceReenrolled, deviceRevoked, lockout]
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

    public init(batchSize: Int = 50, lease: TimeInterval = 30, pollInterval: TimeInterval = 1, firstRetry: TimeInterval = 1, maxRetry: TimeInterval = 600) {
        self.batchSize = batchSize
        self.lease = lease
        self.pollInterval = pollInterval
        self.firstRetry = firstRetry
        self.maxRetry = maxRetry
    }

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

    public init(store: any BioAuthStore, sink: any EventSink, policy: DeliveryPolicy = DeliveryPolicy(), clock: any WallClock = SystemWallClock(), logger: Logger) {
        self.store = store
        self.sink = sink
        self.policy = policy
        self.clock = clock
        self.logger = logger
    }

    /// One round: returns how many events were delivered. After a failure, the rest of the
    /// batch waits for the next round (a receiver that is down gets one attempt per round).
    @discardableResult
    public func deliverDue() async throws -> Int {
        let now = clock.now()
        let due = try await store.claimOutbox(now: now, leaseUntil: now.addingTimeInterval(policy.lease), limit: policy.batchSize)
        var delivered = 0
        for (index, event) in due.enumerated() {
            do {
                try await sink.deliver(event)
                try await store.completeOutbox(id: event.id)
                delivered += 1
            } catch {
                logger.warning("event delivery failed", metadata: ["event": "\(event.id)", "attempts": "\(event.attempts + 1)", "error": "\(type(of: error))"])
                // The rest of the batch waits as long, so events stay in order.
                let next = now.addingTimeInterval(policy.retryDelay(afterAttempts: event.attempts + 1))
                for pending in due[index...] {
                    try await store.retryOutbox(id: pending.id, attempts: pending.id == event.id ? event.attempts + 1 : pending.attempts, nextAttemptAt: next)
                }
                break
            }
        }
        return delivered
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
