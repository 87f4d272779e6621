import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthSQLite
import Foundation
import Logging
import Synchronization
import Testing
import BioAuthServerTesting

/// Webhooks that cannot be jammed: one user's refused event holds back only that user's later
/// events, users are delivered side by side within a bound, device-key events go first, and the
/// events anyone can cause (lockouts) or that come with every login are delivered only on request.
struct EventDeliveryTests {
    /// A sink that refuses one user's events, records what it accepted and how many deliveries
    /// ran at once.
    final class Sink: EventSink {
        struct State {
            var accepted: [OutboxEvent] = []
            /// In the order the deliveries began (completions may come in any order).
            var started: [OutboxEvent] = []
            var inFlight = 0
            var mostInFlight = 0
        }
        let state = Mutex(State())
        let refusing: UserID?
        init(refusing: UserID? = nil) { self.refusing = refusing }

        struct Refused: Error {}

        func deliver(_ event: OutboxEvent) async throws {
            state.withLock {
                $0.started.append(event)
                $0.inFlight += 1
                $0.mostInFlight = max($0.mostInFlight, $0.inFlight)
            }
            try? await Task.sleep(for: .milliseconds(20))
            let refused = event.event.userID == refusing
            state.withLock {
                $0.inFlight -= 1
                if !refused { $0.accepted.append(event) }
            }
            if refused { throw Refused() }
        }
    }

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func events(_ store: any BioAuthStore, _ kinds: [(AuditKind, UserID?)]) async throws {
        for (offset, (kind, user)) in kinds.enumerated() {
            let event = AuditEvent(
                at: t0.addingTimeInterval(Double(offset)), kind: kind, userID: user, deviceID: user.map { DeviceID("d-" + $0.rawValue) })
            var plan = WritePlan()
            plan.audit(event)
            _ = try await store.apply(plan.publishing(AuditKind.deliveredEvents))
        }
    }

    /// mallory's receiver-refused event holds back mallory's next one and nobody else's; alice's
    /// events arrive in order; lockouts and logins are not delivered by default and leave the outbox.
    @Test func aRefusedEventHoldsBackOnlyItsUsersLaterEvents() async throws {
        let store = try SQLiteStore.inMemory()
        try await Self.events(
            store,
            [
                (.deviceEnrolled, "mallory"), (.deviceEnrolled, "alice"), (.loginSucceeded, "alice"), (.deviceRevoked, "mallory"),
                (.lockout, nil), (.deviceRevoked, "alice"),
            ])
        let sink = Sink(refusing: "mallory")
        let clock = ManualClock(start: Self.t0.addingTimeInterval(60))
        let delivery = OutboxDelivery(store: store, sink: sink, clock: clock, logger: Logger(label: "test"))
        #expect(try await delivery.deliverDue() == 2)
        let accepted = sink.state.withLock { $0.accepted }
        #expect(accepted.map(\.event.kind) == [.deviceEnrolled, .deviceRevoked] && accepted.allSatisfy { $0.event.userID == "alice" })
        let left = try await store.claimOutbox(now: clock.now().addingTimeInterval(3_600), leaseUntil: clock.now(), limit: 10)
        #expect(left.map(\.event.kind) == [.deviceEnrolled, .deviceRevoked] && left.allSatisfy { $0.event.userID == "mallory" })
        #expect(left.map(\.attempts) == [1, 0], "the refused event counts an attempt; the one behind it waits without one")
        try await store.close()
    }

    /// Twenty users' events are delivered side by side, never more than the bound at once; with
    /// login events asked for they are delivered too, after the device-key events.
    @Test func usersAreDeliveredSideBySideWithinTheBound() async throws {
        let store = try SQLiteStore.inMemory()
        try await Self.events(store, (0..<20).map { (.loginSucceeded, UserID("user\($0)")) } + [(.deviceEnrolled, "zoe")])
        let sink = Sink()
        let policy = DeliveryPolicy(concurrency: 4, optionalEvents: [.loginSucceeded])
        let delivery = OutboxDelivery(
            store: store, sink: sink, policy: policy, clock: ManualClock(start: Self.t0.addingTimeInterval(60)),
            logger: Logger(label: "test"))
        #expect(try await delivery.deliverDue() == 21)
        let state = sink.state.withLock { $0 }
        #expect(state.mostInFlight > 1 && state.mostInFlight <= 4, "\(state.mostInFlight) at once")
        // Claimed first, its lane is among the first `concurrency` to begin: no later event can
        // begin before one of those lanes is free. (Which of them finishes first is the scheduler's.)
        #expect(
            state.started.prefix(policy.concurrency).contains { $0.event.kind == .deviceEnrolled },
            "the device-key event's lane starts in the first round: \(state.started.map(\.event.kind))")
        try await store.close()
    }

    /// A device-key event behind a batch's worth of login events is claimed in the first round,
    /// not after the logins ahead of it.
    @Test func aDeviceKeyEventOvertakesEarlierRoundsOfLogins() async throws {
        let store = try SQLiteStore.inMemory()
        try await Self.events(store, (0..<12).map { (.loginSucceeded, UserID("user\($0)")) } + [(.deviceRevoked, "zoe")])
        let sink = Sink()
        let policy = DeliveryPolicy(batchSize: 4, concurrency: 1, optionalEvents: [.loginSucceeded])
        let delivery = OutboxDelivery(
            store: store, sink: sink, policy: policy, clock: ManualClock(start: Self.t0.addingTimeInterval(60)),
            logger: Logger(label: "test"))
        #expect(try await delivery.deliverDue() == 4)
        let first = sink.state.withLock { $0.accepted }
        #expect(first.first?.event.kind == .deviceRevoked, "\(first.map(\.event.kind))")
        try await store.close()
    }

    /// The server writes to the outbox only what its sink delivers: the device-key events and the
    /// optional kinds asked for. Without a sink it keeps what the configuration says (a backend
    /// may drain the outbox itself).
    @Test func theServerPublishesOnlyWhatItsSinkDelivers() throws {
        let none = BioAuthServerApp.build(ServerAppConfiguration(), store: try SQLiteStore.inMemory())
        #expect(none.service.configuration.publishedEvents == AuditKind.deliveredEvents)
        let some = BioAuthServerApp.build(
            ServerAppConfiguration(), store: try SQLiteStore.inMemory(), eventSink: Sink(),
            delivery: DeliveryPolicy(optionalEvents: [.lockout]))
        #expect(some.service.configuration.publishedEvents == AuditKind.securityEvents.union([.lockout]))
    }

    /// What is not published costs no outbox row: a login with only device-key events published
    /// leaves the enrolment in the outbox and nothing of the login; its audit rows are all there.
    @Test func anUnpublishedEventIsAuditedButNotQueued() async throws {
        let harness = ServerHarness { $0.publishedEvents = AuditKind.securityEvents }
        try await harness.test { api in
            _ = try await AccessTokenTests.login(api)
            let queued = try await harness.service.store.claimOutbox(now: harness.clock.now(), leaseUntil: harness.clock.now(), limit: 10)
            #expect(queued.map(\.event.kind) == [.deviceEnrolled])
            let audited = try await harness.service.store.auditEvents(userID: "alice", limit: 10).map(\.kind)
            #expect(audited.contains(.loginSucceeded))
        }
    }

    /// An event refused `maxAttempts` times is set aside as a dead letter and its user's next
    /// event goes on; an operator lists the dead letters and replays them once the receiver is
    /// fixed, and they are delivered.
    @Test func anEventRefusedUntilItsLastAttemptBecomesADeadLetterAndIsReplayed() async throws {
        let store = try SQLiteStore.inMemory()
        try await Self.events(store, [(.deviceEnrolled, "mallory"), (.deviceRevoked, "alice"), (.deviceRevoked, "mallory")])
        let clock = ManualClock(start: Self.t0.addingTimeInterval(60))
        let refusing = OutboxDelivery(
            store: store, sink: Sink(refusing: "mallory"), policy: DeliveryPolicy(maxAttempts: 2), clock: clock,
            logger: Logger(label: "test"))
        #expect(try await refusing.deliverDue() == 1, "alice's event")
        clock.advance(by: 10)
        #expect(try await refusing.deliverDue() == 0)  // the first is dead now; the one behind it was tried once
        #expect(try await store.deadLetters(limit: 10).count == 1)
        clock.advance(by: 10)
        #expect(try await refusing.deliverDue() == 0)
        let dead = try await store.deadLetters(limit: 10)
        #expect(
            dead.map(\.event.kind) == [.deviceEnrolled, .deviceRevoked]
                && dead.allSatisfy { $0.event.userID == "mallory" && $0.attempts == 2 }, "\(dead)")
        clock.advance(by: 3_600)
        #expect(try await refusing.deliverDue() == 0, "a dead letter is not retried")

        let service = BioAuthService(store: store, clock: clock)
        #expect(try await service.deadLetters().count == 2)
        #expect(try await service.replayDeadLetters(ids: dead.map(\.id)) == 2)
        let fixed = Sink()
        #expect(try await OutboxDelivery(store: store, sink: fixed, clock: clock, logger: Logger(label: "test")).deliverDue() == 2)
        #expect(fixed.state.withLock { $0.accepted }.map(\.event.kind) == [.deviceEnrolled, .deviceRevoked], "in their order")
        #expect(try await store.deadLetters(limit: 10).isEmpty)
        try await store.close()
    }
}
