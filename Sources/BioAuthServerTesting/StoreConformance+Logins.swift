import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// Users, challenges taken once, failure counting and lockout, password attempts, what a verified proof writes.
extension StoreConformance {
    public func users(_ store: any BioAuthStore) async throws {
        let user = UserRecord(id: "alice", passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2, 3]), createdAt: t0)
        _ = try await store.apply(.createUser(user, audit: event("user.created")))
        try require(await isDuplicate { _ = try await store.apply(.createUser(user, audit: self.event("user.created"))) }, "users: duplicate insert")
        try require(try await store.passwordLoginState(username: "alice", lockout: lockout()) == PasswordLoginState(user: user, lockedOut: false), "users: round trip")
        try require(try await store.passwordLoginState(username: "bob", lockout: lockout()).user == nil, "users: unknown")
        try require(try await store.auditEvents(userID: "alice", limit: 10).map(\.kind.description) == ["user.created"], "users: audit written once, with the row")
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
            record.sessionID = index == 1 ? nil : SessionID("session-\(index)")  // login challenges have no session
            try require(try await issue(store, record), "challenges: issue \(binding.purpose)")
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
        try require(try await issue(store, first), "challenges: first")
        try require(await isDuplicate { _ = try await self.issue(store, first) }, "challenges: duplicate id")
        // No quota per device or user: naming the owner's user and device (both are in every access
        // token) fills nothing, and existing, unknown and other users' devices are answered alike.
        for _ in 0..<10 { try require(try await issue(store, challenge()), "challenges: no per-device quota") }
        try require(try await issue(store, challenge(user: "mallory")), "challenges: another user's name")
        try require(try await issue(store, challenge(device: "no-such-device")), "challenges: an unknown device")
        try require(try await issue(store, challenge(expires: 120)), "challenges: a longer one")
        let swept = try await store.deleteChallenges(expiredBefore: t0.addingTimeInterval(61))
        try require(swept == 13, "challenges: sweep", "swept \(swept), expected 13")
        try require(try await store.deleteChallenges(expiredBefore: t0.addingTimeInterval(1_000)) == 1, "challenges: sweep rest")
    }

    /// Many concurrent takers of one challenge: exactly one gets it.
    public func challengeRace(_ store: any BioAuthStore) async throws {
        let record = challenge(.login)
        _ = try await issue(store, record)
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
        func failure(user: UserID? = "alice", _ query: LockoutQuery? = nil) -> FailureRecord {
            FailureRecord(.badPassword, lockout: query ?? self.lockout(limit: 3), user: user, audit: event("password.login.failed", user: user))
        }
        try require(try await store.apply(.failure(failure())).lockedSubjects == [], "failures: first")
        try require(try await store.apply(.failure(failure(user: "bob"))).lockedSubjects == [], "failures: second (client)")
        let locked = try await store.apply(.failure(failure())).lockedSubjects
        try require(Set(locked) == [.client(query.client)], "failures: the client reaches its limit first", "\(locked)")
        try require(!(try await issue(store, challenge(.login), lockout: query)), "failures: issue refuses")
        try require(try await store.passwordLoginState(username: "alice", lockout: query).lockedOut, "failures: password state locked")
        let other = lockout(client: "198.51.100.1", limit: 3)
        try require(!(try await store.passwordLoginState(username: "carol", lockout: other).lockedOut), "failures: another client and user are free")
        let locked2 = try await store.apply(.failure(failure(other))).lockedSubjects
        try require(locked2 == [.password("alice")], "failures: the user's password counter reaches its limit", "\(locked2)")
        try require(try await store.passwordLoginState(username: "alice", lockout: other).lockedOut, "failures: the user is locked for every client")
        // A signature request (no password limit) from a fresh address is not locked by password failures.
        let signature = LockoutQuery(windowStart: t0, client: "198.51.100.2", clientLimit: 3, passwordLimit: nil)
        try require(try await issue(store, challenge(.login), lockout: signature), "failures: password failures never lock signature login")
        let next = lockout(t0.addingTimeInterval(300), limit: 3)
        try require(!(try await store.passwordLoginState(username: "alice", lockout: next).lockedOut), "failures: a new window starts from zero")
        // A login clears the named counters, in the same transaction.
        _ = try await store.apply(.login(session("s-clear", device: nil), clearing: [.password("alice")], audit: event("password.login.succeeded")))
        try require(!(try await store.passwordLoginState(username: "alice", lockout: other).lockedOut), "failures: login clears the user's counter")
        let events = try await store.auditEvents(userID: "alice", limit: 20)
        let failed = events.filter { $0.kind.description == "password.login.failed" }.map(\.count).reduce(0, +)
        try require(events.filter { $0.kind.description == "lockout" }.count == 2 && failed == 3, "failures: audit and lockout events (identical failures merged)", "\(events.map(\.kind.description))")
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
        _ = try await issue(store, login)
        let later = t0.addingTimeInterval(30)
        var session = session("s-login", device: "d1")
        session.createdAt = later
        let recorded = try await finish(store, login.id) { [session] taken in
            .login(session, clearing: [.password("alice")], audit: self.event("login.succeeded", device: "d1"))
        }
        try require(recorded.lockedSubjects.isEmpty, "verdicts: login locks nothing")
        try require(try await store.session(tokenHash: session.tokenHash) == SessionState(session: session, deviceActive: true), "verdicts: session stored")
        try require(try await store.device(id: "d1")?.lastUsedAt == later, "verdicts: device touched")
        try require(try await store.auditEvents(userID: "alice", limit: 1).first?.kind.description == "login.succeeded", "verdicts: login audited")
        // A failed verification: counters and audit.
        let bad = challenge(.login)
        _ = try await issue(store, bad)
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
}
