import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// The event outbox, signing and API keys, retention sweeps, the audit log.
extension StoreConformance {
    /// The outbox: a delivered kind is queued with its change, in order, others are not; claims
    /// lease (a leased event is not claimed again until the lease ends, also under races); a
    /// retry waits for its time; a completed event is gone; the sweep drops old ones.
    public func outbox(_ store: any BioAuthStore) async throws {
        let empty = try await store.outboxStatus()
        try require(
            empty.pending == 0 && empty.deadLetters == 0 && empty.oldestPendingAt == nil, "outbox: an empty outbox has a status", "\(empty)"
        )
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        var login = session("s1", device: "d1")
        login.createdAt = t0
        // Published as a deployment delivering every kind: the rule, not the store, picks the delivered ones.
        let all = AuditKind.deliveredEvents
        _ = try await store.apply(WritePlan.login(login, audit: event("login.succeeded", device: "d1")).publishing(all))
        _ = try await store.apply(WritePlan.login(session("s22", device: nil), audit: event("password.login.succeeded")).publishing(all))
        _ = try await store.apply(
            WritePlan.revokeDevice(id: "d1", userID: "alice", at: t0, audit: event("device.revoked", device: "d1")).publishing(all))
        _ = try await store.apply(WritePlan.events([event("device.renamed", device: "d1")]).publishing(all))
        let lease = t0.addingTimeInterval(30)
        let first = try await store.claimOutbox(now: t0, leaseUntil: lease, limit: 2)
        try require(
            first.map(\.event.kind.description) == ["device.enrolled", "login.succeeded"],
            "outbox: delivered kinds, in order, up to the limit", "\(first.map(\.event.kind.description))")
        try require(
            first[0].event
                == AuditEvent(
                    at: t0, kind: AuditKind(stored: "device.enrolled"), userID: "alice", deviceID: "d1", reason: AuditReason(stored: "r"))
                && first[0].attempts == 0,
            "outbox: the event without client or request id")
        try require(first[0].id < first[1].id, "outbox: ids increase")
        let racers = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await store.claimOutbox(now: self.t0, leaseUntil: self.t0.addingTimeInterval(100), limit: 10).map(\.id)
                }
            }
            return try await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        try require(
            racers.count == 1 && Set(racers).count == 1, "outbox: the rest claimed once under races; leased ones not at all", "\(racers)")
        try await store.retryOutbox(id: first[0].id, attempts: 1, nextAttemptAt: t0.addingTimeInterval(60))
        try await store.completeOutbox(id: first[1].id)
        try require(
            try await store.claimOutbox(now: t0.addingTimeInterval(59), leaseUntil: t0.addingTimeInterval(100), limit: 10).isEmpty,
            "outbox: a retry waits")
        try require(
            try await store.claimOutbox(now: t0.addingTimeInterval(60), leaseUntil: t0.addingTimeInterval(90), limit: 10).map(\.id) == [
                first[0].id
            ],
            "outbox: due again at its time; a leased one is not")
        let later = try await store.claimOutbox(now: t0.addingTimeInterval(100), leaseUntil: t0.addingTimeInterval(130), limit: 10)
        try require(
            later.map(\.event.kind.description) == ["device.enrolled", "device.revoked"] && later[0].attempts == 1,
            "outbox: due again with its attempts; an expired lease frees an event", "\(later.map(\.event.kind.description))")
        // A dead letter is never claimed until replayed; replaying it makes it due now with no attempts.
        try await store.deadLetterOutbox(id: later[0].id, attempts: 20, at: t0.addingTimeInterval(100))
        try await store.retryOutbox(id: later[1].id, attempts: 0, nextAttemptAt: t0.addingTimeInterval(100))
        try require(
            try await store.claimOutbox(now: t0.addingTimeInterval(200), leaseUntil: t0.addingTimeInterval(230), limit: 10).map(\.id) == [
                later[1].id
            ],
            "outbox: a dead letter is not claimed")
        let status = try await store.outboxStatus()
        try require(
            status.deadLetters == 1 && status.pending >= 1 && status.oldestPendingAt != nil,
            "outbox: its status counts waiting events and dead letters apart", "\(status)")
        let dead = try await store.deadLetters(limit: 10)
        try require(
            dead.map(\.id) == [later[0].id] && dead[0].attempts == 20 && dead[0].event.kind.description == "device.enrolled",
            "outbox: dead letters listed with their attempts")
        try require(
            try await store.replayDeadLetters(ids: [later[0].id, later[1].id, 999_999], now: t0.addingTimeInterval(300)) == 1,
            "outbox: only dead letters are replayed")
        try require(try await store.deadLetters(limit: 10).isEmpty, "outbox: a replayed letter is not dead")
        let replayed = try await store.claimOutbox(now: t0.addingTimeInterval(300), leaseUntil: t0.addingTimeInterval(330), limit: 10)
        try require(
            replayed.map(\.id).contains(later[0].id) && replayed.first { $0.id == later[0].id }?.attempts == 0,
            "outbox: a replayed letter is due with no attempts")
        _ = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: t0.addingTimeInterval(1), sessionsBefore: t0)
        try require(
            try await store.claimOutbox(now: t0.addingTimeInterval(1000), leaseUntil: t0.addingTimeInterval(1030), limit: 10).isEmpty,
            "outbox: swept with the audit")
        // Kinds asked for first are claimed before older events of other kinds.
        let t1 = t0.addingTimeInterval(2000)
        var busy = WritePlan()
        for at in [t1, t1.addingTimeInterval(1)] { busy.audit(AuditEvent(at: at, kind: .loginSucceeded, userID: "bob", deviceID: "d9")) }
        busy.audit(AuditEvent(at: t1.addingTimeInterval(2), kind: .deviceRevoked, userID: "carol", deviceID: "d8"))
        _ = try await store.apply(busy.publishing(all))
        let urgent = try await store.claimOutbox(
            now: t1.addingTimeInterval(3), leaseUntil: t1.addingTimeInterval(30), limit: 1, first: [.deviceRevoked])
        try require(
            urgent.map(\.event.kind) == [.deviceRevoked], "outbox: the kinds asked for first come first", "\(urgent.map(\.event.kind))")
        let rest = try await store.claimOutbox(
            now: t1.addingTimeInterval(3), leaseUntil: t1.addingTimeInterval(30), limit: 10, first: [.deviceRevoked])
        try require(rest.map(\.event.at) == [t1, t1.addingTimeInterval(1)], "outbox: then the others, oldest first")
    }

    /// Signing keys: stored as given, listed oldest first, ids unique.
    public func signingKeys(_ store: any BioAuthStore) async throws {
        try require(try await store.signingKeys().isEmpty, "signing keys: none at first")
        let second = SigningKeyRecord(id: "k2", storedKey: Data(repeating: 2, count: 64), createdAt: t0.addingTimeInterval(10))
        let first = SigningKeyRecord(id: "k1", storedKey: Data(repeating: 1, count: 32), createdAt: t0)
        _ = try await store.apply(.addSigningKey(second, audit: event("signingkey.added", user: nil)))
        _ = try await store.apply(.addSigningKey(first, audit: event("signingkey.added", user: nil)))
        try require(
            await isDuplicate { _ = try await store.apply(.addSigningKey(first, audit: self.event("signingkey.added", user: nil))) },
            "signing keys: duplicate id")
        try require(try await store.signingKeys() == [first, second], "signing keys: oldest first, as given")
        _ = try await store.apply(.retireSigningKeys(["k1", "unknown"], audit: [event("signingkey.retired", user: nil)]))
        try require(try await store.signingKeys() == [second], "signing keys: a retired key is deleted, the others kept")
    }

    /// API keys: stored as given (hash, scopes), found by the secret's hash only, listed in
    /// creation order, revoked once; duplicates refused.
    public func apiKeys(_ store: any BioAuthStore) async throws {
        func key(_ id: ApiKeyID, _ hash: UInt8, scopes: Set<ApiKeyScope> = [.approvals], at offset: TimeInterval = 0) -> ApiKeyRecord {
            ApiKeyRecord(
                id: id, name: "backend " + id.rawValue, secretHash: TokenHash(digest: Data(repeating: hash, count: 32)), scopes: scopes,
                createdAt: t0.addingTimeInterval(offset))
        }
        _ = try await store.apply(
            .createApiKey(key("k2", 2, scopes: Set(ApiKeyScope.all), at: 1), audit: event("apikey.created", user: nil)))
        _ = try await store.apply(.createApiKey(key("k1", 1, scopes: []), audit: event("apikey.created", user: nil)))
        try require(
            await isDuplicate { _ = try await store.apply(.createApiKey(key("k1", 3), audit: self.event("apikey.created", user: nil))) },
            "api keys: duplicate id")
        try require(
            await isDuplicate { _ = try await store.apply(.createApiKey(key("k3", 2), audit: self.event("apikey.created", user: nil))) },
            "api keys: duplicate secret")
        try require(
            try await store.apiKey(secretHash: TokenHash(digest: Data(repeating: 2, count: 32)))
                == key("k2", 2, scopes: Set(ApiKeyScope.all), at: 1), "api keys: round trip")
        try require(
            try await store.apiKey(secretHash: TokenHash(digest: Data(repeating: 1, count: 32)))?.scopes == [], "api keys: no scopes")
        try require(try await store.apiKey(secretHash: TokenHash(digest: Data(repeating: 9, count: 32))) == nil, "api keys: unknown secret")
        try require(try await store.apiKeys().map(\.id) == ["k1", "k2"], "api keys: creation order")
        try require(
            try await store.apply(.revokeApiKey(id: "k2", at: t0, audit: event("apikey.revoked", user: nil))).wasApplied, "api keys: revoke"
        )
        try require(
            !(try await store.apply(.revokeApiKey(id: "k2", at: t0, audit: event("apikey.revoked", user: nil))).wasApplied),
            "api keys: revoke twice")
        try require(
            !(try await store.apply(.revokeApiKey(id: "nope", at: t0, audit: event("apikey.revoked", user: nil))).wasApplied),
            "api keys: revoke unknown")
        try require(
            try await store.apiKey(secretHash: TokenHash(digest: Data(repeating: 2, count: 32)))?.revokedAt == t0,
            "api keys: revoked, still found")
        let audit = try await store.auditEvents(userID: nil, limit: 10).map(\.kind.description)
        try require(
            audit.filter { $0 == "apikey.created" }.count == 2 && audit.filter { $0 == "apikey.revoked" }.count == 1,
            "api keys: audited once each", "\(audit)")
    }

    /// Repeated failures are one row with a count; the sweep deletes past windows, old runs, audit
    /// rows past retention and expired approvals — and nothing else.
    public func retention(_ store: any BioAuthStore) async throws {
        func failure(_ at: TimeInterval, client: String = "c1", kind: String = "login.failed") -> AuditEvent {
            AuditEvent(
                at: t0.addingTimeInterval(at), kind: AuditKind(stored: kind), userID: "alice", deviceID: "d1",
                reason: AuditReason(FailureReason.badSignature),
                clientAddress: client, requestID: BioAuthRequestID("q\(at)"))
        }
        for second in 0..<50 { _ = try await store.apply(.events([failure(Double(second))])) }
        _ = try await store.apply(.events([failure(10, client: "c2")]))
        _ = try await store.apply(.events([failure(200)]))  // more than a minute after the last: a new row
        for _ in 0..<2 { _ = try await store.apply(.events([failure(201, kind: "login.succeeded")])) }  // successes never merge
        let rows = try await store.auditEvents(userID: nil, limit: 100)
        try require(
            rows.count == 5, "retention: identical failures within a minute are one row",
            "\(rows.map { "\($0.kind) \($0.clientAddress ?? "") ×\($0.count)" })")
        try require(
            rows.contains { $0.clientAddress == "c1" && $0.count == 50 && $0.at == t0.addingTimeInterval(49) },
            "retention: the row counts them and keeps the latest time")
        try require(
            rows.filter { $0.kind.description == "login.succeeded" }.allSatisfy { $0.count == 1 }, "retention: successes are never merged")

        // Counters: a past window goes, the current stays; a run stays until its retention.
        _ = try await store.apply(
            .createUser(
                UserRecord(id: "alice", passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2]), createdAt: t0),
                audit: event("user.created")))
        _ = try await store.run(BeginPasswordAttempt(username: "alice", limits: passwordLimits(client: "c1"), now: t0))
        _ = try await store.apply(
            .failure(
                FailureRecord(
                    .badPassword, lockout: LockoutQuery(windowStart: t0, client: "c1", clientLimit: 9),
                    audit: event("password.login.failed")))
        ).lockedSubjects
        let step = challenge()
        _ = try await issue(store, step)
        let approval = ApprovalRecord(
            tokenHash: TokenHash(digest: Data([1])), userID: "alice", deviceID: "d1", operationHash: Data([2]), createdAt: t0,
            expiresAt: t0.addingTimeInterval(300))
        try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved")) }

        let swept = try await store.sweep(
            windowsBefore: t0.addingTimeInterval(600), runsBefore: t0, auditBefore: t0.addingTimeInterval(100), sessionsBefore: t0)
        try require(
            swept.counters == 2 && swept.approvals == 1, "retention: past windows and expired approvals go; the run stays", "\(swept)")
        try require(
            swept.auditRows == 5, "retention: audit rows older than the cut-off go (the two merged failures and three written at t0)",
            "\(swept)")
        var limits = passwordLimits(t0.addingTimeInterval(600), client: "c1")
        limits.run = PasswordRunPolicy(threshold: 2, base: 1_000, cap: 1_000)
        let run = try await store.run(BeginPasswordAttempt(username: "alice", limits: limits, now: t0.addingTimeInterval(600)))
        try require(
            run.refusedUntil == nil && run.reached == [.passwordRun("alice")], "retention: the run survived the sweep", "\(run.reached)")
        let later = try await store.sweep(
            windowsBefore: t0.addingTimeInterval(900), runsBefore: t0.addingTimeInterval(601), auditBefore: t0, sessionsBefore: t0)
        try require(later.counters == 2, "retention: the run goes after its retention", "\(later)")

        // Sessions: one that ended (expired, or revoked) before the cut-off goes with its spent
        // refresh tokens; a live one and one that ended after stay.
        var expired = session("s-expired", device: nil)
        expired.expiresAt = t0.addingTimeInterval(10)
        expired.refreshTokenHash = TokenHash(of: Data(repeating: 1, count: 32))
        let revoked = session("s-revoked", device: nil), live = session("s-live", device: nil), recent = session("s-recent", device: nil)
        for s in [expired, revoked, live, recent] { _ = try await store.apply(.login(s, audit: event("login.succeeded"))) }
        _ = try await store.run(
            RotateRefreshToken(
                presented: Data(repeating: 1, count: 32), successor: SecretBytes(Data(repeating: 2, count: 32)), grace: 10, now: t0,
                audit: event("token.refreshed"),
                reuseAudit: event("token.refresh.reused")))
        _ = try await store.apply(
            .revokeSession(id: "s-revoked", userID: "alice", at: t0.addingTimeInterval(20), audit: event("session.revoked")))
        _ = try await store.apply(
            .revokeSession(id: "s-recent", userID: "alice", at: t0.addingTimeInterval(100), audit: event("session.revoked")))
        let sessions = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: t0, sessionsBefore: t0.addingTimeInterval(50))
        try require(sessions.sessions == 2, "retention: ended sessions go after their retention", "\(sessions)")
        try require(
            try await store.sessions(userID: "alice").map(\.id).sorted() == ["s-live", "s-recent"],
            "retention: live and recently ended sessions stay")
        let spent = try await store.run(
            RotateRefreshToken(
                presented: Data(repeating: 1, count: 32), successor: SecretBytes(Data(repeating: 3, count: 32)), grace: 10, now: t0,
                audit: event("token.refreshed"),
                reuseAudit: event("token.refresh.reused")))
        try require(spent == .refused, "retention: a swept session's spent token is unknown, not reuse")
    }

    public func audit(_ store: any BioAuthStore) async throws {
        for (index, user) in (["alice", "bob", "alice"] as [UserID]).enumerated() {
            _ = try await store.apply(
                .events([
                    AuditEvent(
                        at: t0.addingTimeInterval(Double(index)), kind: AuditKind(stored: "k\(index)"), userID: user, deviceID: "d",
                        reason: AuditReason(stored: "r"), clientAddress: "c", requestID: BioAuthRequestID("q"))
                ]))
        }
        _ = try await store.apply(.events([AuditEvent(at: t0, kind: AuditKind(stored: "bare"))]))
        try require(
            try await store.auditEvents(userID: nil, limit: 10).map(\.kind.description) == ["bare", "k2", "k1", "k0"], "audit: newest first"
        )
        try require(try await store.auditEvents(userID: "alice", limit: 1).map(\.kind.description) == ["k2"], "audit: filter and limit")
        try require(
            try await store.auditEvents(userID: "alice", limit: 10).first
                == AuditEvent(
                    at: t0.addingTimeInterval(2), kind: AuditKind(stored: "k2"), userID: "alice", deviceID: "d",
                    reason: AuditReason(stored: "r"),
                    clientAddress: "c", requestID: BioAuthRequestID("q")),
            "audit: fields")
        try require(
            try await store.auditEvents(userID: nil, limit: 1).first == AuditEvent(at: t0, kind: AuditKind(stored: "bare")),
            "audit: absent fields stay absent")
    }
}
