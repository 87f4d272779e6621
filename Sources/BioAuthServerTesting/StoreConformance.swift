import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// The behaviour every ``BioAuthStore`` must have, run against the SQLite (file and `:memory:`) and
/// PostgreSQL stores alike (modelled on swift-configuration's `ProviderCompatTest`).
///
/// ```swift
/// @Test(arguments: StoreConformance.Check.allCases)
/// func sqliteConforms(_ check: StoreConformance.Check) async throws {
///     try await StoreConformance { try await SQLiteStore.open(path: temporaryPath) }.run(check)
/// }
/// ```
public struct StoreConformance: Sendable {
    public let makeStore: @Sendable () async throws -> any BioAuthStore
    let t0 = Date(timeIntervalSince1970: 1_767_225_600)

    public init(makeStore: @escaping @Sendable () async throws -> any BioAuthStore) { self.makeStore = makeStore }

    /// One behaviour a store must have; each runs on a fresh store, and a test reports each on its
    /// own (`@Test(arguments: StoreConformance.Check.allCases)`).
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        case users, challenges, challengeRace, failures, passwordAttempts, verdicts, devices, sessions, approvals, approvalWithdrawal, audit, retention
        case enrolmentRequests, apiKeys, refreshTokens, signingKeys, outbox, pendingEnrolmentRequestCap

        public var description: String { rawValue }
    }

    /// Runs one check on a fresh store, closed afterwards.
    public func run(_ check: Check) async throws {
        let store = try await makeStore()
        do {
            switch check {
            case .users: try await users(store)
            case .challenges: try await challenges(store)
            case .challengeRace: try await challengeRace(store)
            case .failures: try await failures(store)
            case .passwordAttempts: try await passwordAttempts(store)
            case .verdicts: try await verdicts(store)
            case .devices: try await devices(store)
            case .sessions: try await sessions(store)
            case .approvals: try await approvals(store)
            case .approvalWithdrawal: try await approvalWithdrawal(store)
            case .audit: try await audit(store)
            case .retention: try await retention(store)
            case .enrolmentRequests: try await enrolmentRequests(store)
            case .apiKeys: try await apiKeys(store)
            case .refreshTokens: try await refreshTokens(store)
            case .signingKeys: try await signingKeys(store)
            case .outbox: try await outbox(store)
            case .pendingEnrolmentRequestCap: try await pendingEnrolmentRequestCap(store)
            }
            try await store.close()
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Runs every check, each on a fresh store, stopping at the first failure.
    public func run() async throws {
        for check in Check.allCases { try await run(check) }
    }

    // MARK: Fixtures

    func lockout(_ window: Date? = nil, client: String = "203.0.113.9", limit: Int = 3) -> LockoutQuery {
        LockoutQuery(windowStart: window ?? t0, client: client, clientLimit: limit, passwordLimit: limit)
    }

    func limits(_ cap: Int = 5, now: Date? = nil) -> ChallengeLimits {
        ChallengeLimits(outstandingPerDevice: cap, now: now ?? t0, lockout: lockout())
    }

    func challenge(
        _ binding: ChallengeRecord.Binding = .stepUp(operationHash: Data(repeating: 9, count: 32)), user: String = "alice", device: String = "d1",
        expires: TimeInterval = 60
    ) -> ChallengeRecord {
        ChallengeRecord(
            id: SecretBytes.random(count: 16).data, binding: binding, relyingPartyID: "example.com", userID: user, deviceID: device,
            nonce: SecretBytes.random(count: 32).data, createdAt: t0, expiresAt: t0.addingTimeInterval(expires))
    }

    func event(_ kind: String, user: String? = "alice", device: String? = nil) -> AuditEvent {
        AuditEvent(at: t0, kind: kind, userID: user, deviceID: device, reason: "r", clientAddress: "c", requestID: "q")
    }

    func isDuplicate(_ body: () async throws -> Void) async -> Bool {
        do { try await body() } catch let error as StoreError { return error.code == .duplicate } catch { return false }
        return false
    }

    /// Takes a challenge and applies the plan `decide` makes of it.
    @discardableResult
    func finish(_ store: any BioAuthStore, _ id: Data, lockout: LockoutQuery? = nil, _ decide: @escaping @Sendable (TakenChallenge?) -> WritePlan)
        async throws -> PlanOutcome
    {
        try await store.consumeChallenge(id: id, lockout: lockout ?? self.lockout()) { taken in ((), decide(taken)) }.outcome
    }

    /// Applies an enrolment's plan through the challenge and returns the device as stored (nil if the plan was refused).
    func enrolled(_ store: any BioAuthStore, _ challenge: ChallengeRecord, _ device: DeviceRecord, replacing: Bool) async throws -> DeviceRecord? {
        let outcome = try await finish(store, challenge.id) { _ in
            .enrolment(
                device, replacing: replacing, approvedRequest: challenge.enrolmentRequestID, audit: self.event("device.enrolled", user: device.userID, device: device.id))
        }
        return outcome.wasApplied ? try await store.device(id: device.id) : nil
    }

    /// Enrols a device through a registration challenge, as the service does.
    @discardableResult
    func enrol(_ store: any BioAuthStore, _ device: DeviceRecord, replacing: Bool = false) async throws -> DeviceRecord? {
        let registration = challenge(.registration(publicKey: device.publicKey, deviceName: device.name, replacing: replacing), user: device.userID, device: device.id)
        try require(try await store.issueChallenge(registration, limits: limits()) == .issued, "enrol: challenge issued")
        return try await enrolled(store, registration, device, replacing: replacing)
    }

    func session(_ id: String, device: String?, user: String = "alice") -> SessionRecord {
        SessionRecord(
            id: id, tokenHash: Data(SHA256.hash(data: Data(id.utf8))), userID: user, deviceID: device, kind: device == nil ? .primary : .device,
            createdAt: t0.addingTimeInterval(Double(id.count)), expiresAt: t0.addingTimeInterval(3600))
    }

    // MARK: Checks

    public func users(_ store: any BioAuthStore) async throws {
        let user = UserRecord(id: "alice", passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2, 3]), createdAt: t0)
        _ = try await store.apply(.createUser(user, audit: event("user.created")))
        try require(await isDuplicate { _ = try await store.apply(.createUser(user, audit: self.event("user.created"))) }, "users: duplicate insert")
        try require(try await store.passwordLoginState(username: "alice", lockout: lockout()) == PasswordLoginState(user: user, lockedOut: false), "users: round trip")
        try require(try await store.passwordLoginState(username: "bob", lockout: lockout()).user == nil, "users: unknown")
        try require(try await store.auditEvents(userID: "alice", limit: 10).map(\.kind) == ["user.created"], "users: audit written once, with the row")
        var stronger = user
        stronger.passwordSalt = Data([9])
        stronger.passwordRounds = 600_000
        stronger.passwordHash = Data([8, 8])
        _ = try await store.apply(.login(session("s-rehash", device: nil), rehashed: stronger, audit: event("password.login.succeeded")))
        try require(try await store.passwordLoginState(username: "alice", lockout: lockout()).user == stronger, "users: rehashed at login")
    }

    public func challenges(_ store: any BioAuthStore) async throws {
        let bindings: [ChallengeRecord.Binding] = [
            .registration(publicKey: Data([1, 2, 3]), deviceName: "Phone", replacing: true), .login, .stepUp(operationHash: Data(repeating: 7, count: 32)),
        ]
        // The record comes back whole, for every binding, exactly once.
        for (index, binding) in bindings.enumerated() {
            var record = challenge(binding, device: "round-trip")
            record.sessionID = index == 1 ? nil : "session-\(index)"  // login challenges have no session
            try require(try await store.issueChallenge(record, limits: limits(10)) == .issued, "challenges: issue \(binding.purpose)")
            let seen = Captured<TakenChallenge?>()
            try await finish(store, record.id) { taken in
                seen.set(taken); return .events([])
            }
            try require(seen.value??.challenge == record, "challenges: \(binding.purpose) round trip")
            try await finish(store, record.id) { taken in
                seen.set(taken); return .events([])
            }
            try require(seen.value == .some(nil), "challenges: consumed once")
        }
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        try await enrol(store, DeviceRecord(id: "d2", userID: "alice", name: "Pad", publicKey: Data([5]), createdAt: t0))
        let first = challenge()
        try require(try await store.issueChallenge(first, limits: limits(2)) == .issued, "challenges: first")
        try require(await isDuplicate { _ = try await store.issueChallenge(first, limits: self.limits(5)) }, "challenges: duplicate id")
        try require(try await store.issueChallenge(challenge(), limits: limits(2)) == .issued, "challenges: second")
        try require(try await store.issueChallenge(challenge(), limits: limits(2)) == .tooManyChallenges, "challenges: cap")
        try require(try await store.issueChallenge(challenge(device: "d2"), limits: limits(2)) == .issued, "challenges: cap is per device")
        // Requests naming another user, or a device that does not exist, never fill the owner's quota.
        for _ in 0..<2 {
            try require(try await store.issueChallenge(challenge(user: "mallory"), limits: limits(2)) == .issued, "challenges: cap is per device and user")
        }
        try require(try await store.issueChallenge(challenge(user: "mallory"), limits: limits(2)) == .tooManyChallenges, "challenges: mallory's own quota")
        for _ in 0..<3 {
            try require(try await store.issueChallenge(challenge(device: "no-such-device"), limits: limits(2)) == .issued, "challenges: no cap for unknown devices")
        }
        // Expired challenges do not count toward the cap.
        try require(
            try await store.issueChallenge(challenge(expires: 120), limits: limits(2, now: t0.addingTimeInterval(61))) == .issued, "challenges: expired do not count")
        let swept = try await store.deleteChallenges(expiredBefore: t0.addingTimeInterval(61))
        try require(swept == 8, "challenges: sweep", "swept \(swept), expected 8")
        try require(try await store.deleteChallenges(expiredBefore: t0.addingTimeInterval(1_000)) == 1, "challenges: sweep rest")
    }

    /// Many concurrent takers of one challenge: exactly one gets it.
    public func challengeRace(_ store: any BioAuthStore) async throws {
        let record = challenge(.login)
        _ = try await store.issueChallenge(record, limits: limits())
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    let seen = Captured<TakenChallenge?>()
                    try await self.finish(store, record.id) { taken in
                        seen.set(taken); return .events([])
                    }
                    return seen.value! != nil
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "challenges: race", "\(winners) takers got the challenge")
    }

    public func failures(_ store: any BioAuthStore) async throws {
        let query = lockout(limit: 3)
        func failure(user: String? = "alice", _ query: LockoutQuery? = nil) -> FailureRecord {
            FailureRecord(.badPassword, lockout: query ?? self.lockout(limit: 3), user: user, audit: event("password.login.failed", user: user))
        }
        try require(try await store.apply(.failure(failure())).lockedSubjects == [], "failures: first")
        try require(try await store.apply(.failure(failure(user: "bob"))).lockedSubjects == [], "failures: second (client)")
        let locked = try await store.apply(.failure(failure())).lockedSubjects
        try require(Set(locked) == [.client(query.client)], "failures: the client reaches its limit first", "\(locked)")
        try require(try await store.issueChallenge(challenge(.login), limits: ChallengeLimits(outstandingPerDevice: 5, now: t0, lockout: query)) == .lockedOut, "failures: issue refuses")
        try require(try await store.passwordLoginState(username: "alice", lockout: query).lockedOut, "failures: password state locked")
        let other = lockout(client: "198.51.100.1", limit: 3)
        try require(!(try await store.passwordLoginState(username: "carol", lockout: other).lockedOut), "failures: another client and user are free")
        let locked2 = try await store.apply(.failure(failure(other))).lockedSubjects
        try require(locked2 == [.password("alice")], "failures: the user's password counter reaches its limit", "\(locked2)")
        try require(try await store.passwordLoginState(username: "alice", lockout: other).lockedOut, "failures: the user is locked for every client")
        // A signature request (no password limit) from a fresh address is not locked by password failures.
        let signature = LockoutQuery(windowStart: t0, client: "198.51.100.2", clientLimit: 3, passwordLimit: nil)
        try require(
            try await store.issueChallenge(challenge(.login), limits: ChallengeLimits(outstandingPerDevice: 5, now: t0, lockout: signature)) == .issued,
            "failures: password failures never lock signature login")
        let next = lockout(t0.addingTimeInterval(300), limit: 3)
        try require(!(try await store.passwordLoginState(username: "alice", lockout: next).lockedOut), "failures: a new window starts from zero")
        // A login clears the named counters, in the same transaction.
        _ = try await store.apply(.login(session("s-clear", device: nil), clearing: [.password("alice")], audit: event("password.login.succeeded")))
        try require(!(try await store.passwordLoginState(username: "alice", lockout: other).lockedOut), "failures: login clears the user's counter")
        let events = try await store.auditEvents(userID: "alice", limit: 20)
        let failed = events.filter { $0.kind == "password.login.failed" }.map(\.count).reduce(0, +)
        try require(events.filter { $0.kind == "lockout" }.count == 2 && failed == 3, "failures: audit and lockout events (identical failures merged)", "\(events.map(\.kind))")
        // Concurrent failures: exactly one reaches the limit.
        let many = lockout(client: "192.0.2.1", limit: 25)
        let reached = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { try await store.apply(.failure(failure(user: nil, many))).lockedSubjects.count } }
            return try await group.reduce(0, +)
        }
        try require(reached == 1, "failures: concurrent increments are atomic", "\(reached) saw the limit")
    }

    public func verdicts(_ store: any BioAuthStore) async throws {
        let phone = DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4, 5]), createdAt: t0)
        try require(try await enrol(store, phone) == phone, "verdicts: enrolment inserts the device")
        // A login: session, device touched, counters cleared, audit — together.
        _ = try await store.apply(.failure(FailureRecord(.badSignature, lockout: lockout(), user: "alice", audit: event("login.failed")))).lockedSubjects
        let login = challenge(.login)
        _ = try await store.issueChallenge(login, limits: limits())
        let later = t0.addingTimeInterval(30)
        var session = session("s-login", device: "d1")
        session.createdAt = later
        let recorded = try await finish(store, login.id) { [session] taken in
            .login(session, clearing: [.password("alice")], audit: self.event("login.succeeded", device: "d1"))
        }
        try require(recorded.lockedSubjects.isEmpty, "verdicts: login locks nothing")
        try require(try await store.session(tokenHash: session.tokenHash) == SessionState(session: session, deviceActive: true), "verdicts: session stored")
        try require(try await store.device(id: "d1")?.lastUsedAt == later, "verdicts: device touched")
        try require(try await store.auditEvents(userID: "alice", limit: 1).first?.kind == "login.succeeded", "verdicts: login audited")
        // A failed verification: counters and audit.
        let bad = challenge(.login)
        _ = try await store.issueChallenge(bad, limits: limits())
        try await finish(store, bad.id) { _ in .failure(FailureRecord(.badSignature, lockout: self.lockout(limit: 1), user: "alice", audit: self.event("login.failed"))) }
        try require(try await store.passwordLoginState(username: "alice", lockout: lockout(limit: 1)).lockedOut, "verdicts: failure counted")
        // Re-enrolment of an active device: key replaced, the device's sessions revoked.
        _ = try await store.apply(.login(self.session("s-after", device: "d1"), audit: event("login.succeeded")))
        var rekeyed = phone
        rekeyed.publicKey = Data([8])
        rekeyed.createdAt = t0.addingTimeInterval(40)
        let replaced = try await enrol(store, rekeyed, replacing: true)
        try require(replaced?.publicKey == Data([8]) && replaced?.revokedAt == nil && replaced?.createdAt == t0, "verdicts: re-enrolment replaces the key only")
        try require(
            try await store.session(tokenHash: self.session("s-after", device: "d1").tokenHash)?.session.revokedAt == rekeyed.createdAt,
            "verdicts: re-enrolment revokes the device's sessions")
        let stranger = DeviceRecord(id: "d1", userID: "mallory", name: "x", publicKey: Data([9]), createdAt: t0)
        try require(try await enrol(store, stranger, replacing: true) == nil, "verdicts: re-enrolment of another user's device writes nothing")
        try require(try await store.device(id: "d1")?.publicKey == Data([8]), "verdicts: key unchanged")
    }

    public func devices(_ store: any BioAuthStore) async throws {
        let device = DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4, 5]), createdAt: t0)
        try await enrol(store, device)
        try await enrol(store, DeviceRecord(id: "d2", userID: "alice", name: "Pad", publicKey: Data([6]), createdAt: t0.addingTimeInterval(1)))
        try await enrol(store, DeviceRecord(id: "d3", userID: "bob", name: "Other", publicKey: Data([7]), createdAt: t0))
        try require(await isDuplicate { try await self.enrol(store, device) }, "devices: duplicate")
        try require(try await store.device(id: "d1") == device, "devices: round trip")
        try require(try await store.devices(userID: "alice").map(\.id) == ["d1", "d2"], "devices: list in creation order")
        try require(try await store.apply(.renameDevice(id: "d1", userID: "alice", name: "Work phone", audit: event("device.renamed"))).wasApplied, "devices: rename")
        try require(!(try await store.apply(.renameDevice(id: "d3", userID: "alice", name: "x", audit: event("device.renamed"))).wasApplied), "devices: rename another user's")
        _ = try await store.apply(.login(session("s1", device: "d1"), audit: event("login.succeeded")))
        try require(try await store.apply(.revokeDevice(id: "d1", userID: "alice", at: t0.addingTimeInterval(9), audit: event("device.revoked"))).wasApplied, "devices: revoke")
        try require(!(try await store.apply(.revokeDevice(id: "d1", userID: "alice", at: t0, audit: event("device.revoked"))).wasApplied), "devices: revoke twice")
        try require(!(try await store.apply(.revokeDevice(id: "d3", userID: "alice", at: t0, audit: event("device.revoked"))).wasApplied), "devices: revoke another user's")
        let revoked = try await store.device(id: "d1")
        try require(revoked?.revokedAt == t0.addingTimeInterval(9) && revoked?.name == "Work phone", "devices: revoked state")
        let revived = try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([9]), createdAt: t0), replacing: true)
        let still = try await store.device(id: "d1")
        try require(revived == nil && still?.revokedAt != nil && still?.publicKey == Data([4, 5]), "devices: a revoked device's key is never replaced (it never comes back)")
        let state = try await store.session(tokenHash: session("s1", device: "d1").tokenHash)
        try require(state?.deviceActive == false && state?.session.revokedAt == t0.addingTimeInterval(9), "devices: revoking revokes its sessions")
        let kinds = try await store.auditEvents(userID: "alice", limit: 10).map(\.kind)
        try require(kinds.filter { $0 == "device.revoked" }.count == 1 && kinds.filter { $0 == "device.renamed" }.count == 1, "devices: one audit per write", "\(kinds)")
    }

    public func sessions(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        for (id, device) in [("s1", nil), ("s22", "d1"), ("s333", "gone")] as [(String, String?)] {
            _ = try await store.apply(.login(session(id, device: device), audit: event("login.succeeded")))
        }
        try require(try await store.session(tokenHash: session("s22", device: "d1").tokenHash) == SessionState(session: session("s22", device: "d1"), deviceActive: true), "sessions: round trip")
        try require(try await store.session(tokenHash: session("s1", device: nil).tokenHash)?.deviceActive == true, "sessions: primary sessions have no device")
        try require(try await store.session(tokenHash: session("s333", device: "gone").tokenHash)?.deviceActive == false, "sessions: a missing device is not active")
        try require(try await store.session(tokenHash: Data(count: 32)) == nil, "sessions: unknown")
        try require(try await store.sessions(userID: "alice").map(\.id) == ["s1", "s22", "s333"], "sessions: list")
        try require(try await store.apply(.revokeSession(id: "s1", userID: "alice", at: t0, audit: event("session.revoked"))).wasApplied, "sessions: revoke one")
        try require(!(try await store.apply(.revokeSession(id: "s1", userID: "alice", at: t0, audit: event("session.revoked"))).wasApplied), "sessions: revoke twice")
        try require(!(try await store.apply(.revokeSession(id: "s22", userID: "bob", at: t0, audit: event("session.revoked"))).wasApplied), "sessions: revoke another user's")
        try require(try await store.apply(.revokeSessions(userID: "alice", at: t0, audit: event("sessions.revoked"))) == .applied(revokedSessions: 2), "sessions: revoke all")
        try require(try await store.sessions(userID: "alice").allSatisfy { $0.revokedAt == self.t0 }, "sessions: all revoked")
    }

    public func approvals(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        let step = challenge()
        _ = try await store.issueChallenge(step, limits: limits())
        let approval = ApprovalRecord(tokenHash: Data([1]), userID: "alice", deviceID: "d1", operationHash: Data([2]), createdAt: t0, expiresAt: t0.addingTimeInterval(300))
        try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved")) }
        let redeemed = event("approval.redeemed", user: nil)
        try require(try await store.redeemApproval(tokenHash: Data([1]), operationHash: Data([3]), userID: "alice", now: t0, audit: redeemed) == nil, "approvals: other operation")
        try require(try await store.redeemApproval(tokenHash: Data([1]), operationHash: Data([2]), userID: "bob", now: t0, audit: redeemed) == nil, "approvals: another user expected")
        try require(
            try await store.redeemApproval(tokenHash: Data([1]), operationHash: Data([2]), userID: "alice", now: t0.addingTimeInterval(300), audit: redeemed) == nil,
            "approvals: expired")
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask { try await store.redeemApproval(tokenHash: Data([1]), operationHash: Data([2]), userID: "alice", now: self.t0, audit: redeemed) != nil }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "approvals: consumed once under races", "\(winners)")
        let audit = try await store.auditEvents(userID: "alice", limit: 10).filter { $0.kind == "approval.redeemed" }
        try require(audit.count == 1 && audit.first?.deviceID == "d1", "approvals: one redemption audited, about its user and device")
    }

    /// Refresh tokens: the current one rotates once (under races, the losers are reuse); a spent
    /// one revokes its session and withdraws its approvals; an ended session refreshes nothing;
    /// sessions are found by id with their device's state.
    public func refreshTokens(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        func hash(_ byte: UInt8) -> Data { Data(repeating: byte, count: 32) }
        var live = session("s1", device: "d1")
        live.refreshTokenHash = hash(1)
        _ = try await store.apply(.login(live, audit: event("login.succeeded")))
        _ = try await store.apply(.login(session("s22", device: nil), audit: event("login.succeeded")))
        try require(try await store.session(id: "s1") == SessionState(session: live, deviceActive: true), "refresh: a session by id, with its refresh hash")
        try require(try await store.session(id: "nope") == nil, "refresh: unknown session id")
        let rotated = event("token.refreshed", user: nil), reused = event("token.refresh.reused", user: nil)
        func rotate(_ token: UInt8, to next: UInt8, at offset: TimeInterval = 0) async throws -> RefreshRotation {
            try await store.rotateRefreshToken(tokenHash: hash(token), replacement: hash(next), now: t0.addingTimeInterval(offset), audit: rotated, reuseAudit: reused)
        }
        try require(try await rotate(9, to: 10) == .refused, "refresh: unknown token")
        guard case .rotated(let state) = try await rotate(1, to: 2) else { throw ConformanceFailure("refresh: the current token rotates", "") }
        try require(state.session.id == "s1" && state.session.refreshTokenHash == hash(2) && state.deviceActive, "refresh: the session, with its new hash")
        let outcomes = try await withThrowingTaskGroup(of: RefreshRotation.self) { group in
            for next in 3..<13 { group.addTask { try await rotate(2, to: UInt8(next)) } }
            return try await group.reduce(into: [RefreshRotation]()) { $0.append($1) }
        }
        let winners = outcomes.filter { if case .rotated = $0 { true } else { false } }.count
        try require(winners == 1, "refresh: one rotation under races", "\(winners)")
        try require(outcomes.allSatisfy { $0 == .reused(sessionID: "s1") || { if case .rotated = $0 { true } else { false } }($0) }, "refresh: the losers are reuse")
        try require(try await store.session(id: "s1")?.session.revokedAt == t0, "refresh: reuse revoked the session")
        try require(try await rotate(1, to: 20) == .reused(sessionID: "s1"), "refresh: an old token is still reuse")
        let current = try await store.session(id: "s1")?.session.refreshTokenHash ?? Data()
        try require(
            try await store.rotateRefreshToken(tokenHash: current, replacement: hash(30), now: t0, audit: rotated, reuseAudit: reused) == .refused,
            "refresh: a revoked session refreshes nothing")

        var ending = session("s333", device: "d1")
        ending.refreshTokenHash = hash(40)
        _ = try await store.apply(.login(ending, audit: event("login.succeeded")))
        try require(try await rotate(40, to: 41, at: 3600) == .refused, "refresh: an expired session refreshes nothing")
        let audit = try await store.auditEvents(userID: "alice", limit: 100).map(\.kind)
        try require(audit.filter { $0 == "token.refreshed" }.count == 2, "refresh: rotations audited about the user", "\(audit)")
        try require(audit.contains("token.refresh.reused"), "refresh: reuse audited about the user")
    }

    /// The outbox: a delivered kind is queued with its change, in order, others are not; claims
    /// lease (a leased event is not claimed again until the lease ends, also under races); a
    /// retry waits for its time; a completed event is gone; the sweep drops old ones.
    public func outbox(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        var login = session("s1", device: "d1")
        login.createdAt = t0
        _ = try await store.apply(.login(login, audit: event("login.succeeded", device: "d1")))
        _ = try await store.apply(.login(session("s22", device: nil), audit: event("password.login.succeeded")))
        _ = try await store.apply(.revokeDevice(id: "d1", userID: "alice", at: t0, audit: event("device.revoked", device: "d1"))).wasApplied
        _ = try await store.apply(.events([event("device.renamed", device: "d1")]))
        let lease = t0.addingTimeInterval(30)
        let first = try await store.claimOutbox(now: t0, leaseUntil: lease, limit: 2)
        try require(first.map(\.event.kind) == ["device.enrolled", "login.succeeded"], "outbox: delivered kinds, in order, up to the limit", "\(first.map(\.event.kind))")
        try require(
            first[0].event == AuditEvent(at: t0, kind: "device.enrolled", userID: "alice", deviceID: "d1", reason: "r") && first[0].attempts == 0,
            "outbox: the event without client or request id")
        try require(first[0].id < first[1].id, "outbox: ids increase")
        let racers = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for _ in 0..<10 { group.addTask { try await store.claimOutbox(now: self.t0, leaseUntil: self.t0.addingTimeInterval(100), limit: 10).map(\.id) } }
            return try await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        try require(racers.count == 1 && Set(racers).count == 1, "outbox: the rest claimed once under races; leased ones not at all", "\(racers)")
        try await store.retryOutbox(id: first[0].id, attempts: 1, nextAttemptAt: t0.addingTimeInterval(60))
        try await store.completeOutbox(id: first[1].id)
        try require(try await store.claimOutbox(now: t0.addingTimeInterval(59), leaseUntil: t0.addingTimeInterval(100), limit: 10).isEmpty, "outbox: a retry waits")
        try require(
            try await store.claimOutbox(now: t0.addingTimeInterval(60), leaseUntil: t0.addingTimeInterval(90), limit: 10).map(\.id) == [first[0].id],
            "outbox: due again at its time; a leased one is not")
        let later = try await store.claimOutbox(now: t0.addingTimeInterval(100), leaseUntil: t0.addingTimeInterval(130), limit: 10)
        try require(
            later.map(\.event.kind) == ["device.enrolled", "device.revoked"] && later[0].attempts == 1,
            "outbox: due again with its attempts; an expired lease frees an event", "\(later.map(\.event.kind))")
        _ = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: t0.addingTimeInterval(1), sessionsBefore: t0)
        try require(try await store.claimOutbox(now: t0.addingTimeInterval(1000), leaseUntil: t0.addingTimeInterval(1030), limit: 10).isEmpty, "outbox: swept with the audit")
    }

    /// Signing keys: stored as given, listed oldest first, ids unique.
    public func signingKeys(_ store: any BioAuthStore) async throws {
        try require(try await store.signingKeys().isEmpty, "signing keys: none at first")
        let second = SigningKeyRecord(id: "k2", privateKey: Data(repeating: 2, count: 32), createdAt: t0.addingTimeInterval(10))
        let first = SigningKeyRecord(id: "k1", privateKey: Data(repeating: 1, count: 32), createdAt: t0)
        _ = try await store.apply(.addSigningKey(second, audit: event("signingkey.added", user: nil)))
        _ = try await store.apply(.addSigningKey(first, audit: event("signingkey.added", user: nil)))
        try require(await isDuplicate { _ = try await store.apply(.addSigningKey(first, audit: self.event("signingkey.added", user: nil))) }, "signing keys: duplicate id")
        try require(try await store.signingKeys() == [first, second], "signing keys: oldest first, as given")
    }

    /// API keys: stored as given (hash, scopes), found by the secret's hash only, listed in
    /// creation order, revoked once; duplicates refused.
    public func apiKeys(_ store: any BioAuthStore) async throws {
        func key(_ id: String, _ hash: UInt8, scopes: Set<ApiKeyScope> = [.approvals], at offset: TimeInterval = 0) -> ApiKeyRecord {
            ApiKeyRecord(id: id, name: "backend " + id, secretHash: Data(repeating: hash, count: 32), scopes: scopes, createdAt: t0.addingTimeInterval(offset))
        }
        _ = try await store.apply(.createApiKey(key("k2", 2, scopes: Set(ApiKeyScope.all), at: 1), audit: event("apikey.created", user: nil)))
        _ = try await store.apply(.createApiKey(key("k1", 1, scopes: []), audit: event("apikey.created", user: nil)))
        try require(await isDuplicate { _ = try await store.apply(.createApiKey(key("k1", 3), audit: self.event("apikey.created", user: nil))) }, "api keys: duplicate id")
        try require(await isDuplicate { _ = try await store.apply(.createApiKey(key("k3", 2), audit: self.event("apikey.created", user: nil))) }, "api keys: duplicate secret")
        try require(try await store.apiKey(secretHash: Data(repeating: 2, count: 32)) == key("k2", 2, scopes: Set(ApiKeyScope.all), at: 1), "api keys: round trip")
        try require(try await store.apiKey(secretHash: Data(repeating: 1, count: 32))?.scopes == [], "api keys: no scopes")
        try require(try await store.apiKey(secretHash: Data(repeating: 9, count: 32)) == nil, "api keys: unknown secret")
        try require(try await store.apiKeys().map(\.id) == ["k1", "k2"], "api keys: creation order")
        try require(try await store.apply(.revokeApiKey(id: "k2", at: t0, audit: event("apikey.revoked", user: nil))).wasApplied, "api keys: revoke")
        try require(!(try await store.apply(.revokeApiKey(id: "k2", at: t0, audit: event("apikey.revoked", user: nil))).wasApplied), "api keys: revoke twice")
        try require(!(try await store.apply(.revokeApiKey(id: "nope", at: t0, audit: event("apikey.revoked", user: nil))).wasApplied), "api keys: revoke unknown")
        try require(try await store.apiKey(secretHash: Data(repeating: 2, count: 32))?.revokedAt == t0, "api keys: revoked, still found")
        let audit = try await store.auditEvents(userID: nil, limit: 10).map(\.kind)
        try require(audit.filter { $0 == "apikey.created" }.count == 2 && audit.filter { $0 == "apikey.revoked" }.count == 1, "api keys: audited once each", "\(audit)")
    }

    /// Enrolment requests: listed unexpired in order; approved only by an unconsumed approval of
    /// the same user for exactly their operation from another device, once under races; recovery
    /// codes count attempts and stop at the limit; an enrolment consumes an approved request only,
    /// in its own transaction; the sweep deletes expired ones.
    public func enrolmentRequests(_ store: any BioAuthStore) async throws {
        let key = Data(P256.Signing.PrivateKey().publicKey.derRepresentation)
        func request(_ id: String, user: String = "alice", device: String = "d2", expires: TimeInterval = 900) -> EnrolmentRequestRecord {
            EnrolmentRequestRecord(
                id: id, userID: user, deviceID: device, name: "Pad", publicKey: key, replacing: false, sessionID: "s-" + id,
                createdAt: t0.addingTimeInterval(Double(id.count)), expiresAt: t0.addingTimeInterval(expires))
        }
        _ = try await store.apply(.requestEnrolment(request("r1"), maxPending: 5, now: t0, audit: event("enrolment.requested")))
        _ = try await store.apply(.requestEnrolment(request("r22", expires: 10), maxPending: 5, now: t0, audit: event("enrolment.requested")))
        _ = try await store.apply(.requestEnrolment(request("r333", user: "bob"), maxPending: 5, now: t0, audit: event("enrolment.requested", user: "bob")))
        try require(await isDuplicate { _ = try await store.apply(.requestEnrolment(request("r1"), maxPending: 5, now: self.t0, audit: self.event("enrolment.requested"))) }, "requests: duplicate id")
        try require(try await store.enrolmentRequests(userID: "alice", now: t0).map(\.id) == ["r1", "r22"], "requests: the user's, oldest first")
        try require(try await store.enrolmentRequests(userID: "alice", now: t0.addingTimeInterval(10)).map(\.id) == ["r1"], "requests: unexpired only")
        try require(try await store.enrolmentRequest(id: "r1") == request("r1"), "requests: stored as given")

        // Approvals: a step-up approval of alice's device d1 for the request's text. Only an
        // approval whose device is still enrolled and active approves.
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        let text = Data(SHA256.hash(data: Data(request("r1").approvalText.utf8)))
        func grant(_ token: UInt8, device: String, user: String = "alice", operation: Data) async throws {
            let step = challenge(user: user, device: device)
            _ = try await store.issueChallenge(step, limits: limits())
            let approval = ApprovalRecord(
                tokenHash: Data([token]), userID: user, deviceID: device, operationHash: operation, createdAt: t0, expiresAt: t0.addingTimeInterval(300))
            try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved", user: user)) }
        }
        try await grant(1, device: "d1", operation: text)
        try await grant(2, device: "d1", operation: Data(repeating: 7, count: 32))
        try await grant(3, device: "d2", operation: text)
        try await grant(4, device: "b1", user: "bob", operation: text)
        let approved = event("enrolment.approved")
        func approve(_ token: UInt8, id: String = "r1", user: String = "alice") async throws -> Bool {
            try await store.approveEnrolmentRequest(
                id: id, userID: user, approvalTokenHash: Data([token]), operationHash: text, excludingDevice: "d2", now: t0, audit: approved)
        }
        try require(try await !approve(2), "requests: an approval for other text")
        try require(try await !approve(3), "requests: an approval by the device being enrolled")
        try require(try await !approve(4), "requests: another user's approval")
        try require(try await !approve(4, id: "r1", user: "bob"), "requests: another user's request")
        try require(try await store.enrolmentRequest(id: "r1")?.isApproved == false, "requests: refusals write nothing")
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 { group.addTask { try await approve(1) } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "requests: approved once under races", "\(winners)")
        let stored = try await store.enrolmentRequest(id: "r1")
        try require(stored?.approvedAt == t0 && stored?.approvedByDevice == "d1", "requests: approved by the approval's device")
        try require(
            try await store.redeemApproval(tokenHash: Data([1]), operationHash: text, userID: "alice", now: t0, audit: event("approval.redeemed")) == nil, "requests: the approval is consumed")

        // An enrolment naming a request: only an approved one, consumed with the device.
        func enrolThrough(_ requestID: String, device: String) async throws -> DeviceRecord? {
            var registration = challenge(.registration(publicKey: key, deviceName: "Pad", replacing: false), device: device)
            registration.enrolmentRequestID = requestID
            try require(try await store.issueChallenge(registration, limits: limits()) == .issued, "requests: challenge issued")
            let device = DeviceRecord(id: device, userID: "alice", name: "Pad", publicKey: key, createdAt: t0)
            return try await enrolled(store, registration, device, replacing: false)
        }
        try require(try await enrolThrough("r22", device: "d3") == nil, "requests: an unapproved request enrols nothing")
        try require(try await store.device(id: "d3") == nil, "requests: nothing written for it")
        try require(try await enrolThrough("r1", device: "d2")?.id == "d2", "requests: an approved request enrols")
        try require(try await store.enrolmentRequest(id: "r1") == nil, "requests: consumed by the enrolment")
        try require(try await enrolThrough("r1", device: "d4") == nil, "requests: consumed once")

        // Recovery codes.
        let code = Data(repeating: 5, count: 32), wrong = Data(repeating: 6, count: 32)
        try require(try await store.recoverEnrolmentRequest(id: "r333", codeHash: code, maxAttempts: 3, now: t0, audit: approved) == .unavailable, "recovery: no code sent")
        try require(try await store.setRecoveryCode(requestID: "r333", codeHash: code, now: t0, audit: event("enrolment.recovery.sent", user: "bob")), "recovery: code set")
        try require(try await store.setRecoveryCode(requestID: "nope", codeHash: code, now: t0, audit: event("x")) == false, "recovery: unknown request")
        try require(try await store.recoverEnrolmentRequest(id: "r333", codeHash: wrong, maxAttempts: 3, now: t0, audit: approved) == .wrongCode(attemptsLeft: 2), "recovery: wrong code counted")
        try require(try await store.recoverEnrolmentRequest(id: "r333", codeHash: code, maxAttempts: 3, now: t0.addingTimeInterval(900), audit: approved) == .unavailable, "recovery: expired")
        try require(try await store.recoverEnrolmentRequest(id: "r333", codeHash: code, maxAttempts: 3, now: t0, audit: approved) == .approved, "recovery: the code approves")
        try require(try await store.recoverEnrolmentRequest(id: "r333", codeHash: code, maxAttempts: 3, now: t0, audit: approved) == .unavailable, "recovery: once")
        _ = try await store.apply(.requestEnrolment(request("r4444", user: "bob"), maxPending: 5, now: t0, audit: event("enrolment.requested", user: "bob")))
        _ = try await store.setRecoveryCode(requestID: "r4444", codeHash: code, now: t0, audit: event("enrolment.recovery.sent", user: "bob"))
        for left in [1, 0] {
            try require(
                try await store.recoverEnrolmentRequest(id: "r4444", codeHash: wrong, maxAttempts: 2, now: t0, audit: approved) == .wrongCode(attemptsLeft: left), "recovery: attempts count down")
        }
        try require(try await store.recoverEnrolmentRequest(id: "r4444", codeHash: code, maxAttempts: 2, now: t0, audit: approved) == .unavailable, "recovery: no attempts left")
        let rejected = try await store.auditEvents(userID: nil, limit: 50).filter { $0.kind == AuditKind.recoveryCodeRejected.description }.reduce(0) { $0 + $1.count }
        try require(rejected == 3, "recovery: each wrong code audited", "\(rejected)")

        let swept = try await store.sweep(windowsBefore: t0.addingTimeInterval(901), runsBefore: t0, auditBefore: t0, sessionsBefore: t0)
        try require(swept.enrolmentRequests == 3, "requests: expired ones swept", "\(swept.enrolmentRequests)")
    }

    /// Password attempts are counted before the hash, atomically: a race of twenty gets exactly the
    /// limit through; a refusal counts nothing; the run outlives the window and backs off; a
    /// successful login clears both counters.
    public func passwordAttempts(_ store: any BioAuthStore) async throws {
        _ = try await store.apply(.createUser(UserRecord(id: "alice", passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2]), createdAt: t0), audit: event("user.created")))
        let run = PasswordRunPolicy(threshold: 5, base: 60, cap: 600, maximum: 8)
        let raced = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<20 {
                group.addTask {
                    try await store.beginPasswordAttempt(username: "alice", lockout: self.lockout(client: "192.0.2.\(n)"), run: run, now: self.t0).refusedUntil == nil
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(raced == 3, "password attempts: exactly the window limit passes a race", "\(raced)")
        let refused = try await store.beginPasswordAttempt(username: "alice", lockout: lockout(client: "x"), run: run, now: t0)
        try require(refused.refusedUntil == t0 && refused.user?.id == "alice", "password attempts: refused until the window ends")

        // The next window: the window counter starts again, the run goes on to its threshold.
        let next = t0.addingTimeInterval(300)
        let second = lockout(next, client: "x")
        let fourth = try await store.beginPasswordAttempt(username: "alice", lockout: second, run: run, now: next)
        try require(fourth.refusedUntil == nil, "password attempts: a new window admits the run")
        let fifth = try await store.beginPasswordAttempt(username: "alice", lockout: second, run: run, now: next)
        try require(fifth.refusedUntil == nil && fifth.reached == [.passwordRun("alice")], "password attempts: the run reaches its threshold", "\(fifth.reached)")
        let backedOff = try await store.beginPasswordAttempt(username: "alice", lockout: second, run: run, now: next.addingTimeInterval(59))
        try require(backedOff.refusedUntil == next.addingTimeInterval(60), "password attempts: back-off after the threshold", "\(String(describing: backedOff.refusedUntil))")
        let after = try await store.beginPasswordAttempt(username: "alice", lockout: second, run: run, now: next.addingTimeInterval(60))
        try require(after.refusedUntil == nil, "password attempts: admitted when the back-off ends")

        _ = try await store.apply(
            .login(
                session("p", device: nil), clearing: [.password("alice"), .passwordRun("alice")], audit: event("password.login.succeeded")))
        for _ in 0..<3 {
            let fresh = try await store.beginPasswordAttempt(username: "alice", lockout: second, run: run, now: next.addingTimeInterval(61))
            try require(fresh.refusedUntil == nil, "password attempts: a success clears the window and the run")
        }
        let unknown = try await store.beginPasswordAttempt(username: "nobody", lockout: second, run: run, now: next)
        try require(unknown.user == nil && unknown.refusedUntil == nil, "password attempts: unknown users are counted alike")
    }

    /// Revocation is final for what was already granted: an approval cannot be redeemed once the
    /// session that obtained it is revoked or logged out, the user's sessions are revoked, or the
    /// device that signed it (or whose session obtained it) is revoked or re-keyed.
    public func approvalWithdrawal(_ store: any BioAuthStore) async throws {
        for (id, user) in [("d1", "alice"), ("d2", "alice"), ("d3", "alice"), ("d9", "bob")] {
            try await enrol(store, DeviceRecord(id: id, userID: user, name: id, publicKey: Data(id.utf8), createdAt: t0))
        }
        for (id, device, user) in [("p1", nil, "alice"), ("s-d1", "d1", "alice"), ("s-d2", "d2", "alice"), ("p2", nil, "alice"), ("b1", nil, "bob")]
            as [(String, String?, String)]
        {
            _ = try await store.apply(.login(session(id, device: device, user: user), audit: event("login.succeeded", user: user)))
        }
        func grant(_ token: UInt8, device: String, session: String, user: String = "alice") async throws {
            let step = challenge(user: user, device: device)
            _ = try await store.issueChallenge(step, limits: limits())
            let approval = ApprovalRecord(
                tokenHash: Data([token]), userID: user, deviceID: device, operationHash: Data([2]), createdAt: t0, expiresAt: t0.addingTimeInterval(300),
                sessionID: session)
            try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved", user: user)) }
        }
        func redeemable(_ token: UInt8, user: String = "alice") async throws -> Bool {
            try await store.redeemApproval(tokenHash: Data([token]), operationHash: Data([2]), userID: user, now: t0, audit: event("approval.redeemed", user: nil)) != nil
        }
        try await grant(1, device: "d3", session: "p1")  // withdrawn: its session is revoked
        try await grant(2, device: "d1", session: "p2")  // withdrawn: its signing device is revoked
        try await grant(3, device: "d3", session: "s-d1")  // withdrawn: a session of the revoked device obtained it
        try await grant(4, device: "d2", session: "p2")  // withdrawn: d2's key is replaced
        try await grant(5, device: "d3", session: "p2")  // withdrawn: every session of the user is revoked
        try await grant(6, device: "d9", session: "b1", user: "bob")  // another user's: untouched
        try await grant(7, device: "d3", session: "p2")  // redeemed before the revocations: stays redeemed
        try require(try await redeemable(7), "withdrawal: a fresh approval redeems")

        _ = try await store.apply(.revokeSession(id: "p1", userID: "alice", at: t0, audit: event("session.revoked"))).wasApplied
        try require(!(try await redeemable(1)), "withdrawal: revoking (or logging out) the session that obtained it")
        _ = try await store.apply(.revokeDevice(id: "d1", userID: "alice", at: t0, audit: event("device.revoked"))).wasApplied
        try require(!(try await redeemable(2)), "withdrawal: revoking the device that signed it")
        try require(!(try await redeemable(3)), "withdrawal: revoking the device whose session obtained it")
        try await enrol(store, DeviceRecord(id: "d2", userID: "alice", name: "d2", publicKey: Data([9, 9]), createdAt: t0), replacing: true)
        try require(!(try await redeemable(4)), "withdrawal: replacing the signing device's key")
        try require(try await redeemable(5), "withdrawal: unrelated revocations leave an approval alone")
        try await grant(8, device: "d3", session: "p2")
        _ = try await store.apply(.revokeSessions(userID: "alice", at: t0, audit: event("sessions.revoked")))
        try require(!(try await redeemable(8)), "withdrawal: revoking every session of the user")
        try require(try await redeemable(6, user: "bob"), "withdrawal: another user's approval is untouched")
    }

    /// The pending-request cap is a guard evaluated in the transaction: at the limit a request is
    /// refused with nothing written, expired or approved ones do not count, another user's never
    /// do, and of parallel requests exactly enough to reach the limit land.
    public func pendingEnrolmentRequestCap(_ store: any BioAuthStore) async throws {
        let key = Data(P256.Signing.PrivateKey().publicKey.derRepresentation)
        func request(_ id: String, user: String, expires: TimeInterval = 900) -> EnrolmentRequestRecord {
            EnrolmentRequestRecord(
                id: id, userID: user, deviceID: "d-" + id, name: "Pad", publicKey: key, replacing: false, sessionID: "s", createdAt: t0,
                expiresAt: t0.addingTimeInterval(expires))
        }
        func ask(_ id: String, user: String = "carol", expires: TimeInterval = 900, at now: Date? = nil) async throws -> PlanOutcome {
            try await store.apply(.requestEnrolment(request(id, user: user, expires: expires), maxPending: 3, now: now ?? t0, audit: event("enrolment.requested", user: user)))
        }
        try require(try await ask("short", expires: 10).wasApplied, "request cap: below the limit")
        let second = try await ask("c2"), third = try await ask("c3")
        try require(second.wasApplied && third.wasApplied, "request cap: up to the limit")
        let refused = try await ask("c4")
        try require(refused == .refused(.fewerPendingEnrolmentRequests(userID: "carol", limit: 3, now: t0)), "request cap: refused at the limit", "\(refused)")
        try require(try await store.enrolmentRequest(id: "c4") == nil, "request cap: nothing written when refused")
        try require(try await ask("b1", user: "bob").wasApplied, "request cap: another user's count is their own")
        try require(try await ask("c5", at: t0.addingTimeInterval(10)).wasApplied, "request cap: an expired request does not count")
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<10 { group.addTask { try await ask("dave-\(n)", user: "dave").wasApplied } }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        try require(outcomes.count(where: { $0 }) == 3, "request cap: parallel requests stop at the limit", "\(outcomes.count(where: { $0 })) landed")
    }

    /// Repeated failures are one row with a count; the sweep deletes past windows, old runs, audit
    /// rows past retention and expired approvals — and nothing else.
    public func retention(_ store: any BioAuthStore) async throws {
        func failure(_ at: TimeInterval, client: String = "c1", kind: String = "login.failed") -> AuditEvent {
            AuditEvent(at: t0.addingTimeInterval(at), kind: kind, userID: "alice", deviceID: "d1", reason: "badSignature", clientAddress: client, requestID: "q\(at)")
        }
        for second in 0..<50 { _ = try await store.apply(.events([failure(Double(second))])) }
        _ = try await store.apply(.events([failure(10, client: "c2")]))
        _ = try await store.apply(.events([failure(200)]))  // more than a minute after the last: a new row
        for _ in 0..<2 { _ = try await store.apply(.events([failure(201, kind: "login.succeeded")])) }  // successes never merge
        let rows = try await store.auditEvents(userID: nil, limit: 100)
        try require(rows.count == 5, "retention: identical failures within a minute are one row", "\(rows.map { "\($0.kind) \($0.clientAddress ?? "") ×\($0.count)" })")
        try require(rows.contains { $0.clientAddress == "c1" && $0.count == 50 && $0.at == t0.addingTimeInterval(49) }, "retention: the row counts them and keeps the latest time")
        try require(rows.filter { $0.kind == "login.succeeded" }.allSatisfy { $0.count == 1 }, "retention: successes are never merged")

        // Counters: a past window goes, the current stays; a run stays until its retention.
        let old = LockoutQuery(windowStart: t0, client: "c1", clientLimit: 9, passwordLimit: 9)
        _ = try await store.apply(.createUser(UserRecord(id: "alice", passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2]), createdAt: t0), audit: event("user.created")))
        _ = try await store.beginPasswordAttempt(username: "alice", lockout: old, run: PasswordRunPolicy(), now: t0)
        _ = try await store.apply(
            .failure(
                FailureRecord(.badPassword, lockout: LockoutQuery(windowStart: t0, client: "c1", clientLimit: 9, passwordLimit: nil), user: nil, audit: event("password.login.failed")))
        ).lockedSubjects
        let step = challenge()
        _ = try await store.issueChallenge(step, limits: limits())
        let approval = ApprovalRecord(tokenHash: Data([1]), userID: "alice", deviceID: "d1", operationHash: Data([2]), createdAt: t0, expiresAt: t0.addingTimeInterval(300))
        try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved")) }

        let swept = try await store.sweep(windowsBefore: t0.addingTimeInterval(600), runsBefore: t0, auditBefore: t0.addingTimeInterval(100), sessionsBefore: t0)
        try require(swept.counters == 2 && swept.approvals == 1, "retention: past windows and expired approvals go; the run stays", "\(swept)")
        try require(swept.auditRows == 5, "retention: audit rows older than the cut-off go (the two merged failures and three written at t0)", "\(swept)")
        let run = try await store.beginPasswordAttempt(
            username: "alice", lockout: LockoutQuery(windowStart: t0.addingTimeInterval(600), client: "c1", clientLimit: 9, passwordLimit: 9),
            run: PasswordRunPolicy(threshold: 2, base: 1_000, cap: 1_000, maximum: 100), now: t0.addingTimeInterval(600))
        try require(run.refusedUntil == nil && run.reached == [.passwordRun("alice")], "retention: the run survived the sweep", "\(run.reached)")
        let later = try await store.sweep(windowsBefore: t0.addingTimeInterval(900), runsBefore: t0.addingTimeInterval(601), auditBefore: t0, sessionsBefore: t0)
        try require(later.counters == 2, "retention: the run goes after its retention", "\(later)")

        // Sessions: one that ended (expired, or revoked) before the cut-off goes with its spent
        // refresh tokens; a live one and one that ended after stay.
        var expired = session("s-expired", device: nil)
        expired.expiresAt = t0.addingTimeInterval(10)
        expired.refreshTokenHash = Data(repeating: 1, count: 32)
        let revoked = session("s-revoked", device: nil), live = session("s-live", device: nil), recent = session("s-recent", device: nil)
        for s in [expired, revoked, live, recent] { _ = try await store.apply(.login(s, audit: event("login.succeeded"))) }
        _ = try await store.rotateRefreshToken(
            tokenHash: Data(repeating: 1, count: 32), replacement: Data(repeating: 2, count: 32), now: t0, audit: event("token.refreshed"),
            reuseAudit: event("token.refresh.reused"))
        _ = try await store.apply(.revokeSession(id: "s-revoked", userID: "alice", at: t0.addingTimeInterval(20), audit: event("session.revoked")))
        _ = try await store.apply(.revokeSession(id: "s-recent", userID: "alice", at: t0.addingTimeInterval(100), audit: event("session.revoked")))
        let sessions = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: t0, sessionsBefore: t0.addingTimeInterval(50))
        try require(sessions.sessions == 2, "retention: ended sessions go after their retention", "\(sessions)")
        try require(try await store.sessions(userID: "alice").map(\.id).sorted() == ["s-live", "s-recent"], "retention: live and recently ended sessions stay")
        let spent = try await store.rotateRefreshToken(
            tokenHash: Data(repeating: 1, count: 32), replacement: Data(repeating: 3, count: 32), now: t0, audit: event("token.refreshed"),
            reuseAudit: event("token.refresh.reused"))
        try require(spent == .refused, "retention: a swept session's spent token is unknown, not reuse")
    }

    public func audit(_ store: any BioAuthStore) async throws {
        for (index, user) in ["alice", "bob", "alice"].enumerated() {
            _ = try await store.apply(.events([AuditEvent(at: t0.addingTimeInterval(Double(index)), kind: "k\(index)", userID: user, deviceID: "d", reason: "r", clientAddress: "c", requestID: "q")]))
        }
        _ = try await store.apply(.events([AuditEvent(at: t0, kind: "bare")]))
        try require(try await store.auditEvents(userID: nil, limit: 10).map(\.kind) == ["bare", "k2", "k1", "k0"], "audit: newest first")
        try require(try await store.auditEvents(userID: "alice", limit: 1).map(\.kind) == ["k2"], "audit: filter and limit")
        try require(
            try await store.auditEvents(userID: "alice", limit: 10).first
                == AuditEvent(at: t0.addingTimeInterval(2), kind: "k2", userID: "alice", deviceID: "d", reason: "r", clientAddress: "c", requestID: "q"),
            "audit: fields")
        try require(try await store.auditEvents(userID: nil, limit: 1).first == AuditEvent(at: t0, kind: "bare"), "audit: absent fields stay absent")
    }
}

/// A value set from inside a store's `decide` closure and read afterwards.
final class Captured<Value: Sendable>: Sendable {
    private let box = Mutex<Value?>(nil)
    func set(_ value: Value) { box.withLock { $0 = value } }
    var value: Value? { box.withLock { $0 } }
}
