import BioAuthAttestation
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
        try require(
            await isDuplicate { _ = try await store.apply(.createUser(user, audit: self.event("user.created"))) }, "users: duplicate insert"
        )
        try require(
            try await store.passwordLoginState(username: "alice", lockout: lockout()) == PasswordLoginState(user: user, lockedOut: false),
            "users: round trip")
        try require(try await store.passwordLoginState(username: "bob", lockout: lockout()).user == nil, "users: unknown")
        try require(
            try await store.auditEvents(userID: "alice", limit: 10).map(\.kind.description) == ["user.created"],
            "users: audit written once, with the row")
        var stronger = user
        stronger.passwordSalt = Data([9])
        stronger.passwordRounds = 600_000
        stronger.passwordHash = Data([8, 8])
        _ = try await store.apply(.login(session("s-rehash", device: nil), rehashed: stronger, audit: event("password.login.succeeded")))
        try require(try await store.passwordLoginState(username: "alice", lockout: lockout()).user == stronger, "users: rehashed at login")
    }

    public func challenges(_ store: any BioAuthStore) async throws {
        let bindings: [ChallengeRecord.Binding] = [
            .registration(publicKey: Data([1, 2, 3]), deviceName: "Phone", replacing: true), .login,
            .stepUp(operationHash: Data(repeating: 7, count: 32), deviceKey: Data(repeating: 4, count: 91)),
            .passkey(.registration(deviceName: "Laptop", userHandle: Data(repeating: 0x5A, count: 32))), .passkey(.authentication),
            .passkey(.registration(deviceName: "Older laptop", userHandle: nil)),
        ]
        // The record comes back whole, for every binding, exactly once.
        for (index, binding) in bindings.enumerated() {
            var record = challenge(binding, device: "round-trip")
            // Login challenges (a device's or a passkey's) have no session.
            record.sessionID = [1, 4].contains(index) ? nil : SessionID("session-\(index)")
            try require(try await issue(store, record), "challenges: issue \(record.kind)")
            let seen = Captured<TakenChallenge?>()
            try await finish(store, record.id) { taken in
                seen.set(taken); return .events([])
            }
            try require(seen.value??.challenge == record, "challenges: \(record.kind) round trip")
            try await finish(store, record.id) { taken in
                seen.set(taken); return .events([])
            }
            try require(seen.value == .some(nil), "challenges: consumed once")
        }
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        try await enrol(store, DeviceRecord(id: "d2", userID: "alice", name: "Pad", publicKey: Data([5]), createdAt: t0))
        // A passkey is a device whose credential comes back whole, and a sign-in replaces it.
        var credential = PasskeyCredential(
            credentialID: Data([1, 2, 3]), publicKey: Data([0xA5]), signCount: 7, backupEligible: true, backedUp: false, format: "packed",
            attestation: .selfAttested, aaguid: Data(count: 16), userHandle: Data(repeating: 0x5A, count: 32))
        let passkey = DeviceRecord(
            id: "pk1", userID: "alice", name: "Laptop", publicKey: Data([6]), createdAt: t0, credential: .passkey(credential))
        try await enrol(store, passkey)
        try require(try await store.device(id: "pk1") == passkey, "passkeys: stored as given")
        credential.signCount = 8
        credential.backedUp = true
        var signIn = WritePlan()
        signIn.add(.storePasskey(deviceID: "pk1", credential))
        _ = try await store.apply(signIn)
        try require(
            try await store.device(id: "pk1")?.credential.passkey == credential, "passkeys: a sign-in's counter and backup state stored")
        try require(try await store.device(id: "d1")?.credential.passkey == nil, "passkeys: an app's device has none")
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
            FailureRecord(.badPassword, lockout: query ?? self.lockout(limit: 3), audit: event("password.login.failed", user: user))
        }
        try require(try await store.apply(.failure(failure())).lockedSubjects == [], "failures: first")
        try require(try await store.apply(.failure(failure(user: "bob"))).lockedSubjects == [], "failures: second (client)")
        let locked = try await store.apply(.failure(failure())).lockedSubjects
        try require(locked == [.client(query.client)], "failures: the client reaches its limit", "\(locked)")
        try require(!(try await issue(store, challenge(.login), lockout: query)), "failures: issue refuses")
        try require(try await store.passwordLoginState(username: "alice", lockout: query).lockedOut, "failures: password state locked")
        try require(
            try await store.passwordLoginState(username: nil, lockout: query) == PasswordLoginState(user: nil, lockedOut: true),
            "failures: the address alone is locked")
        let other = lockout(client: "198.51.100.1", limit: 3)
        try require(!(try await store.passwordLoginState(username: "alice", lockout: other).lockedOut), "failures: another client is free")
        try require(try await issue(store, challenge(.login), lockout: other), "failures: another client's challenge is stored")
        let next = lockout(t0.addingTimeInterval(300), limit: 3)
        try require(
            !(try await store.passwordLoginState(username: "alice", lockout: next).lockedOut), "failures: a new window starts from zero")
        let events = try await store.auditEvents(userID: "alice", limit: 20)
        let failed = events.filter { $0.kind.description == "password.login.failed" }.map(\.count).reduce(0, +)
        try require(
            events.filter { $0.kind.description == "lockout" }.count == 1 && failed == 2,
            "failures: audit and lockout events (identical failures merged)", "\(events.map(\.kind.description))")
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
        _ = try await store.apply(.failure(FailureRecord(.badSignature, lockout: lockout(), audit: event("login.failed")))).lockedSubjects
        let login = challenge(.login)
        _ = try await issue(store, login)
        let later = t0.addingTimeInterval(30)
        var session = session("s-login", device: "d1")
        session.createdAt = later
        let recorded = try await finish(store, login.id) { [session] taken in
            .login(session, clearing: [.client("203.0.113.9")], audit: self.event("login.succeeded", device: "d1"))
        }
        try require(recorded.lockedSubjects.isEmpty, "verdicts: login locks nothing")
        try require(
            try await store.session(tokenHash: session.tokenHash) == SessionState(session: session, deviceActive: true),
            "verdicts: session stored")
        try require(try await store.device(id: "d1")?.lastUsedAt == later, "verdicts: device touched")
        try require(
            try await store.auditEvents(userID: "alice", limit: 1).first?.kind.description == "login.succeeded", "verdicts: login audited")
        // A failed verification: counters and audit.
        let bad = challenge(.login)
        _ = try await issue(store, bad)
        try await finish(store, bad.id) { _ in
            .failure(FailureRecord(.badSignature, lockout: self.lockout(limit: 1), audit: self.event("login.failed")))
        }
        try require(
            try await store.passwordLoginState(username: "alice", lockout: lockout(limit: 1)).lockedOut, "verdicts: failure counted")
        // Re-enrolment of an active device: key replaced, the device's sessions revoked.
        _ = try await store.apply(.login(self.session("s-after", device: "d1"), audit: event("login.succeeded")))
        var rekeyed = phone
        rekeyed.publicKey = Data([8])
        rekeyed.createdAt = t0.addingTimeInterval(40)
        let replaced = try await enrol(store, rekeyed, replacing: .recovery)
        try require(
            replaced?.publicKey == Data([8]) && replaced?.revokedAt == nil && replaced?.createdAt == t0,
            "verdicts: re-enrolment replaces the key only")
        try require(
            replaced?.keyReplacedAt == rekeyed.createdAt && replaced?.keyReplacement == .recovery
                && replaced?.keySince == rekeyed.createdAt,
            "verdicts: re-enrolment records when and how the key was replaced", "\(String(describing: replaced))")
        try require(
            try await store.session(tokenHash: self.session("s-after", device: "d1").tokenHash)?.session.revokedAt == rekeyed.createdAt,
            "verdicts: re-enrolment revokes the device's sessions")
        let stranger = DeviceRecord(id: "d1", userID: "mallory", name: "x", publicKey: Data([9]), createdAt: t0)
        try require(
            try await enrol(store, stranger, replacing: .recovery) == nil, "verdicts: re-enrolment of another user's device writes nothing")
        try require(try await store.device(id: "d1")?.keyReplacement == .recovery, "verdicts: a refused re-enrolment records nothing")
        try require(try await store.device(id: "d1")?.publicKey == Data([8]), "verdicts: key unchanged")
    }

    /// A login whose key was verified before a re-key or revocation committed writes nothing
    /// (`WritePlan.Guard.activeDeviceKey(id:userID:publicKey:)`): no session the withdrawal did
    /// not see, no touch, no audit row — and its challenge is still spent. Each case runs with the
    /// login's outbox event and without it (what a deployment without webhooks writes).
    public func staleDeviceKey(_ store: any BioAuthStore) async throws {
        let phone = DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4, 5]), createdAt: t0)
        try await enrol(store, phone)
        var n = 0
        func login(key: Data, user: UserID = "alice", queued: Bool = false) async throws -> (
            outcome: PlanOutcome, session: SessionRecord, challenge: ChallengeID
        ) {
            n += 1
            let record = challenge(.login)
            _ = try await issue(store, record)
            var session = session(SessionID("s-key-\(n)"), device: "d1")
            session.createdAt = t0.addingTimeInterval(Double(n))
            let outcome = try await finish(store, record.id) { [session] _ in
                var plan = WritePlan.login(session, from: "203.0.113.9", audit: self.event("login.succeeded", device: "d1"))
                plan.require(.activeDeviceKey(id: "d1", userID: user, publicKey: key))
                return queued ? plan.publishing(AuditKind.deliveredEvents) : plan
            }
            return (outcome, session, record.id)
        }
        for queued in [false, true] {
            let fresh = try await login(key: Data([4, 5]), queued: queued)
            try require(fresh.outcome.wasApplied, "stale device key: the current key passes (queued: \(queued))")
            try require(
                try await store.session(tokenHash: fresh.session.tokenHash)?.session == fresh.session, "stale device key: session stored")
            try require(try await store.device(id: "d1")?.lastUsedAt == fresh.session.createdAt, "stale device key: device touched")
        }
        let audited = try await store.auditEvents(userID: "alice", limit: 50).count
        var rekeyed = phone
        rekeyed.publicKey = Data([8])
        rekeyed.createdAt = t0.addingTimeInterval(40)
        try await enrol(store, rekeyed, replacing: .recovery)
        let afterRekey = try await store.auditEvents(userID: "alice", limit: 50).count
        let touched = try await store.device(id: "d1")?.lastUsedAt
        let stale: [(Data, UserID, String)] = [(Data([4, 5]), "alice", "the replaced key"), (Data([8]), "mallory", "another user")]
        for (key, user, label) in stale {
            for queued in [false, true] {
                let refused = try await login(key: key, user: user, queued: queued)
                let label = "\(label) (queued: \(queued))"
                try require(
                    refused.outcome.refusal == .activeDeviceKey(id: "d1", userID: user, publicKey: key),
                    "stale device key: \(label) is refused",
                    "\(String(describing: refused.outcome.refusal))")
                try require(
                    try await store.session(tokenHash: refused.session.tokenHash) == nil, "stale device key: \(label) stores no session")
                try require(try await store.device(id: "d1")?.lastUsedAt == touched, "stale device key: \(label) does not touch the device")
                try require(
                    try await store.auditEvents(userID: "alice", limit: 50).count == afterRekey, "stale device key: \(label) audits nothing"
                )
                let again = Captured<TakenChallenge?>()
                try await finish(store, refused.challenge) { taken in
                    again.set(taken); return .events([])
                }
                try require(again.value == .some(nil), "stale device key: \(label) still spends the challenge")
            }
        }
        try require(afterRekey > audited, "stale device key: the re-key was audited")
        try require(try await login(key: Data([8])).outcome.wasApplied, "stale device key: the new key passes")
        _ = try await store.apply(
            .revokeDevice(id: "d1", userID: "alice", at: t0.addingTimeInterval(50), audit: event("device.revoked", device: "d1")))
        for queued in [false, true] {
            let revoked = try await login(key: Data([8]), queued: queued)
            try require(revoked.outcome.refusal != nil, "stale device key: a revoked device is refused (queued: \(queued))")
            try require(
                try await store.session(tokenHash: revoked.session.tokenHash) == nil, "stale device key: a revoked device gets no session")
        }
    }

    /// Password attempts are decided and counted before the hash, atomically: a race from one
    /// address gets exactly the (user, address) limit through, other addresses keep their own
    /// budget, a refusal counts nothing and says when to come back, the run outlives the window
    /// and slows only addresses the user never signed in from, and a successful login clears both.
    public func passwordAttempts(_ store: any BioAuthStore) async throws {
        _ = try await store.apply(
            .createUser(
                UserRecord(id: "alice", passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2]), createdAt: t0),
                audit: event("user.created")))
        let attacker = "192.0.2.1", owner = "203.0.113.50", elsewhere = "198.51.100.7"
        func attempt(from client: String, at now: Date? = nil, window: Date? = nil) async throws -> PasswordAttempt {
            try await store.run(BeginPasswordAttempt(username: "alice", limits: passwordLimits(window, client: client), now: now ?? t0))
        }
        let raced = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 { group.addTask { try await attempt(from: attacker).refusedUntil == nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(raced == 3, "password attempts: exactly the (user, address) limit passes a race", "\(raced)")
        let refused = try await attempt(from: attacker)
        try require(
            refused.refusedUntil == t0.addingTimeInterval(300) && refused.user?.id == "alice",
            "password attempts: refused until the window ends")
        // Another address has its own budget; the run reaches its threshold at the fifth attempt.
        try require(try await attempt(from: elsewhere).refusedUntil == nil, "password attempts: another address is not refused")
        let fifth = try await attempt(from: elsewhere)
        try require(
            fifth.refusedUntil == nil && fifth.reached == [.passwordRun("alice")], "password attempts: the run reaches its threshold",
            "\(fifth.reached)")
        let slowed = try await attempt(from: elsewhere, at: t0.addingTimeInterval(59))
        try require(
            slowed.refusedUntil == t0.addingTimeInterval(60), "password attempts: back-off after the threshold",
            "\(String(describing: slowed.refusedUntil))")
        let both = try await attempt(from: attacker, at: t0.addingTimeInterval(59))
        try require(
            both.refusedUntil == t0.addingTimeInterval(300), "password attempts: the longer of two waits",
            "\(String(describing: both.refusedUntil))")
        // An address the user signed in from is not slowed by the run.
        _ = try await store.apply(.login(session("s-known", device: "d1"), from: owner, audit: event("login.succeeded")))
        try require(
            try await attempt(from: owner, at: t0.addingTimeInterval(10)).refusedUntil == nil,
            "password attempts: a known address is not slowed")
        let longer = try await attempt(from: elsewhere, at: t0.addingTimeInterval(60))
        try require(
            longer.refusedUntil == t0.addingTimeInterval(10 + 120), "password attempts: each attempt doubles the wait",
            "\(String(describing: longer.refusedUntil))")
        try require(
            try await attempt(from: elsewhere, at: t0.addingTimeInterval(130)).refusedUntil == nil,
            "password attempts: admitted when the back-off ends")
        // The next window: the (user, address) counter starts again; the run goes on.
        let next = t0.addingTimeInterval(300)
        try require(
            try await attempt(from: attacker, at: next.addingTimeInterval(500), window: next).refusedUntil == nil,
            "password attempts: a new window's budget")

        _ = try await store.apply(
            .login(
                session("p", device: nil), clearing: [.password("alice", client: attacker), .passwordRun("alice")],
                audit: event("password.login.succeeded")))
        for _ in 0..<3 {
            try require(
                try await attempt(from: attacker, at: next, window: next).refusedUntil == nil,
                "password attempts: a success clears the window and the run")
        }
        let unknown = try await store.run(BeginPasswordAttempt(username: "nobody", limits: passwordLimits(client: elsewhere), now: t0))
        try require(unknown.user == nil && unknown.refusedUntil == nil, "password attempts: unknown users are counted alike")
        // A known address is forgotten with the audit rows of its time.
        for _ in 0..<2 { _ = try await attempt(from: elsewhere, at: next, window: next) }
        _ = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: t0.addingTimeInterval(100), sessionsBefore: t0)
        let forgotten = try await attempt(from: owner, at: next.addingTimeInterval(1), window: next)
        try require(
            forgotten.refusedUntil == next.addingTimeInterval(60), "password attempts: a swept known address is slowed again",
            "\(String(describing: forgotten.refusedUntil))")
        // A known address's time moves at most once per refresh interval: a login half an hour
        // later leaves it, so a sweep just after the first login forgets the address.
        let roaming = "198.51.100.77"
        let roamingState = LockoutQuery(windowStart: next, client: roaming, clientLimit: 30)
        try require(
            !(try await store.passwordLoginState(username: "alice", lockout: roamingState).knownClient),
            "password attempts: an address is unknown until a login")
        for (id, offset) in [("s-r1", 2.0), ("s-r2", 2 + WritePlan.knownClientRefresh / 2)] {
            var login = session(SessionID(id), device: "d1")
            login.createdAt = next.addingTimeInterval(offset)
            _ = try await store.apply(.login(login, from: roaming, audit: event("login.succeeded")))
        }
        let known = try await store.passwordLoginState(username: "alice", lockout: roamingState)
        try require(known.knownClient && known.lane == .proven, "password attempts: the state read tells a known address")
        _ = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: next.addingTimeInterval(3), sessionsBefore: t0)
        let stale = try await attempt(from: roaming, at: next.addingTimeInterval(4), window: next)
        try require(stale.refusedUntil != nil, "password attempts: a known address's time is not rewritten within the refresh interval")
    }
}
