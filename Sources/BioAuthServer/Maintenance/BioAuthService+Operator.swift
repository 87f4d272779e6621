import BioAuthAttestation
import BioAuthCore
import Foundation
import Logging
import Metrics

/// The operator's: sweeps, dead letters and signing keys.
extension BioAuthService {
    // MARK: - Maintenance

    /// Whether this instance can serve: its store answers a read within `limit` (the readiness
    /// probe, `GET /health/ready`).
    public func isReady(within limit: Duration = .seconds(2)) async -> Bool { await maintenance.isReady(within: limit) }

    /// What this instance, though ready, cannot do now (the readiness probe's `notes`): Android
    /// enrolments while the attestation status list is missing or too old.
    public func readinessNotes() -> [String] {
        let now = clock.now()
        return configuration.attestation.statusLists.compactMap { $0.note(at: now) }
    }

    /// Deletes expired challenges; returns how many. Safe to run on every instance at once.
    @discardableResult
    public func sweepExpiredChallenges() async throws -> Int { try await maintenance.sweepExpiredChallenges() }

    /// Deletes what no longer decides anything: expired challenges and approvals, counters of
    /// past windows, password runs and audit rows past their retention. Safe on every instance at
    /// once; `bioauth-server` runs it every minute.
    @discardableResult
    public func sweep() async throws -> SweepResult { try await maintenance.sweep() }

    // MARK: - Dead letters (the operator's `bioauth-server webhooks`)

    /// Events the receiver refused ``DeliveryPolicy/maxAttempts`` times, oldest first.
    public func deadLetters(limit: Int = 1_000) async throws(ServerError) -> [OutboxEvent] {
        do { return try await store.deadLetters(limit: limit) } catch { throw ServerError(.unavailable) }
    }

    /// The outbox at a glance (metrics): events waiting, the oldest one's time, dead letters.
    public func outboxStatus() async throws(ServerError) -> OutboxStatus {
        do { return try await store.outboxStatus() } catch { throw ServerError(.unavailable) }
    }

    /// Puts dead letters back in the outbox, due now: how many there were.
    public func replayDeadLetters(ids: [Int64]) async throws(ServerError) -> Int {
        do { return try await store.replayDeadLetters(ids: ids, now: clock.now()) } catch { throw ServerError(.unavailable) }
    }

    // MARK: - Signing keys (the operator's `bioauth-server keys`)

    /// Every stored signing key with its state and form; never a key.
    public func signingKeys(request: RequestInfo) async throws(ServerError) -> [SigningKeyStatus] {
        try await SigningKeys(context: context).list(request: request)
    }

    /// Adds a new signing key now (published at once, signing after the pre-publication).
    public func rotateSigningKey(request: RequestInfo) async throws(ServerError) -> SigningKeyStatus {
        let key = try await SigningKeys(context: context).rotate(request: request)
        return SigningKeyStatus(id: key.id, createdAt: key.createdAt, state: .published, form: StoredSigningKey(key.storedKey).form)
    }

    /// Deletes a signing key (a leaked one): 404 for an unknown id.
    public func retireSigningKey(id: String, request: RequestInfo) async throws(ServerError) {
        try await SigningKeys(context: context).retire(id: id, request: request)
    }
}
