import BioAuthCore
import BioAuthServer
import Foundation

/// The behaviour every ``BioAuthStore`` must have, run against the in-memory, SQLite and
/// PostgreSQL stores alike (modelled on swift-configuration's `ProviderCompatTest`).
///
/// ```swift
/// @Test func sqliteConforms() async throws {
///     try await StoreConformance { try await SQLiteStore.open(path: temporaryPath) }.run()
/// }
/// ```
public struct StoreConformance: Sendable {
    public let makeStore: @Sendable () async throws -> any BioAuthStore
    let t0 = Date(timeIntervalSince1970: 1_767_225_600)

    public init(makeStore: @escaping @Sendable () async throws -> any BioAuthStore) { self.makeStore = makeStore }

    /// Runs every check, each on a fresh store.
    public func run() async throws {
        let checks: [@Sendable (StoreConformance, any BioAuthStore) async throws -> Void] = [
            { try await $0.users($1) }, { try await $0.challenges($1) }, { try await $0.challengeRace($1) },
            { try await $0.devices($1) }, { try await $0.sessions($1) }, { try await $0.approvals($1) },
            { try await $0.counters($1) }, { try await $0.audit($1) },
        ]
        for check in checks {
            let store = try await makeStore()
            do {
                try await check(self, store)
                try await store.close()
            } catch {
                try? await store.close()
                throw error
            }
        }
    }

    func challenge(device: String = "d1", expires: TimeInterval = 60, id: Data = SecretBytes.random(count: 16).data) -> ChallengeRecord {
        ChallengeRecord(
            id: id, purpose: .stepUp, relyingPartyID: "example.com", userID: "alice", deviceID: device,
            nonce: SecretBytes.random(count: 32).data, createdAt: t0, expiresAt: t0.addingTimeInterval(expires),
            operationHash: Data(repeating: 9, count: 32), registrationKey: Data([1, 2, 3]), deviceName: "Phone")
    }

    func isDuplicate(_ body: () async throws -> Void) async -> Bool {
        do { try await body() } catch let error as StoreError { return error.code == .duplicate } catch { return false }
        return false
    }

    public func users(_ store: any BioAuthStore) async throws {
        let user = UserRecord(id: "alice", passwordSalt: Data([1]), passwordRounds: 7, passwordHash: Data([2, 3]), createdAt: t0)
        try await store.insertUser(user)
        try require(await isDuplicate { try await store.insertUser(user) }, "users: duplicate insert")
        try require(try await store.user(id: "alice") == user, "users: round trip")
        try require(try await store.user(id: "bob") == nil, "users: unknown")
    }

    public func challenges(_ store: any BioAuthStore) async throws {
        let first = challenge()
        try await store.insertChallenge(first, outstandingLimit: 2, now: t0)
        try require(await isDuplicate { try await store.insertChallenge(first, outstandingLimit: 5, now: self.t0) }, "challenges: duplicate id")
        try await store.insertChallenge(challenge(), outstandingLimit: 2, now: t0)
        do {
            try await store.insertChallenge(challenge(), outstandingLimit: 2, now: t0)
            throw ConformanceFailure("challenges: cap", "third challenge accepted with limit 2")
        } catch let error as StoreError {
            try require(error.code == .tooManyChallenges, "challenges: cap", "\(error)")
        }
        try await store.insertChallenge(challenge(device: "d2"), outstandingLimit: 2, now: t0)  // other device
        // Expired challenges do not count toward the cap.
        try await store.insertChallenge(challenge(expires: 120), outstandingLimit: 2, now: t0.addingTimeInterval(61))
        try require(try await store.consumeChallenge(id: first.id) == first, "challenges: consume returns the record")
        try require(try await store.consumeChallenge(id: first.id) == nil, "challenges: consumed once")
        try require(try await store.consumeChallenge(id: Data(count: 16)) == nil, "challenges: unknown")
        let swept = try await store.deleteChallenges(expiredBefore: t0.addingTimeInterval(61))
        try require(swept == 2, "challenges: sweep", "swept \(swept), expected 2")
        try require(try await store.deleteChallenges(expiredBefore: t0.addingTimeInterval(1_000)) == 1, "challenges: sweep rest")
    }

    /// Many concurrent consumers of one challenge: exactly one gets it.
    public func challengeRace(_ store: any BioAuthStore) async throws {
        let record = challenge()
        try await store.insertChallenge(record, outstandingLimit: 5, now: t0)
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<100 { group.addTask { try await store.consumeChallenge(id: record.id) != nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "challenges: race", "\(winners) consumers got the challenge")
    }

    public func devices(_ store: any BioAuthStore) async throws {
        let device = DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4, 5]), createdAt: t0)
        try await store.insertDevice(device)
        try require(await isDuplicate { try await store.insertDevice(device) }, "devices: duplicate")
        try await store.insertDevice(DeviceRecord(id: "d2", userID: "alice", name: "Pad", publicKey: Data([6]), createdAt: t0.addingTimeInterval(1)))
        try await store.insertDevice(DeviceRecord(id: "d3", userID: "bob", name: "Other", publicKey: Data([7]), createdAt: t0))
        try require(try await store.device(id: "d1") == device, "devices: round trip")
        try require(try await store.devices(userID: "alice").map(\.id) == ["d1", "d2"], "devices: list in creation order")
        try require(try await store.renameDevice(id: "d1", userID: "alice", name: "Work phone"), "devices: rename")
        try require(!(try await store.renameDevice(id: "d3", userID: "alice", name: "x")), "devices: rename another user's")
        try await store.touchDevice(id: "d1", at: t0.addingTimeInterval(5))
        try require(try await store.device(id: "d1")?.lastUsedAt == t0.addingTimeInterval(5), "devices: touch")
        try require(try await store.revokeDevice(id: "d1", userID: "alice", at: t0.addingTimeInterval(9)), "devices: revoke")
        try require(!(try await store.revokeDevice(id: "d1", userID: "alice", at: t0)), "devices: revoke twice")
        try require(!(try await store.revokeDevice(id: "d3", userID: "alice", at: t0)), "devices: revoke another user's")
        let revoked = try await store.device(id: "d1")
        try require(revoked?.revokedAt == t0.addingTimeInterval(9) && revoked?.name == "Work phone", "devices: revoked state")
        try require(try await store.replaceDeviceKey(id: "d1", userID: "alice", publicKey: Data([8]), at: t0.addingTimeInterval(10)), "devices: replace key")
        let replaced = try await store.device(id: "d1")
        try require(replaced?.publicKey == Data([8]) && replaced?.revokedAt == nil, "devices: replaced key clears revocation")
        try require(!(try await store.replaceDeviceKey(id: "d3", userID: "alice", publicKey: Data(), at: t0)), "devices: replace another user's")
    }

    public func sessions(_ store: any BioAuthStore) async throws {
        func session(_ id: String, device: String?) -> SessionRecord {
            SessionRecord(id: id, tokenHash: Data(id.utf8), userID: "alice", deviceID: device, kind: device == nil ? .primary : .device,
                          createdAt: t0.addingTimeInterval(Double(id.count)), expiresAt: t0.addingTimeInterval(3600))
        }
        for (id, device) in [("s1", nil), ("s22", "d1"), ("s333", "d2")] as [(String, String?)] { try await store.insertSession(session(id, device: device)) }
        try require(try await store.session(tokenHash: Data("s22".utf8)) == session("s22", device: "d1"), "sessions: round trip")
        try require(try await store.sessions(userID: "alice").map(\.id) == ["s1", "s22", "s333"], "sessions: list")
        try require(try await store.revokeSession(id: "s1", userID: "alice", at: t0), "sessions: revoke one")
        try require(!(try await store.revokeSession(id: "s1", userID: "alice", at: t0)), "sessions: revoke twice")
        try require(!(try await store.revokeSession(id: "s22", userID: "bob", at: t0)), "sessions: revoke another user's")
        try require(try await store.revokeSessions(userID: "alice", deviceID: "d1", at: t0) == 1, "sessions: revoke a device's")
        try require(try await store.revokeSessions(userID: "alice", deviceID: nil, at: t0) == 1, "sessions: revoke all")
        try require(try await store.sessions(userID: "alice").allSatisfy { $0.revokedAt == self.t0 }, "sessions: all revoked")
    }

    public func approvals(_ store: any BioAuthStore) async throws {
        let approval = ApprovalRecord(tokenHash: Data([1]), userID: "alice", deviceID: "d1", operationHash: Data([2]), createdAt: t0, expiresAt: t0.addingTimeInterval(300))
        try await store.insertApproval(approval)
        try require(try await store.consumeApproval(tokenHash: Data([1]), operationHash: Data([3]), now: t0) == nil, "approvals: other operation")
        try require(try await store.consumeApproval(tokenHash: Data([1]), operationHash: Data([2]), now: t0.addingTimeInterval(300)) == nil, "approvals: expired")
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 { group.addTask { try await store.consumeApproval(tokenHash: Data([1]), operationHash: Data([2]), now: self.t0) != nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "approvals: consumed once under races", "\(winners)")
    }

    public func counters(_ store: any BioAuthStore) async throws {
        let w1 = t0, w2 = t0.addingTimeInterval(300)
        try require(try await store.counter(key: "k", windowStart: w1) == 0, "counters: empty")
        for expected in 1...3 { try require(try await store.incrementCounter(key: "k", windowStart: w1) == expected, "counters: increment") }
        try require(try await store.counter(key: "k", windowStart: w1) == 3, "counters: read")
        try require(try await store.counter(key: "k", windowStart: w2) == 0, "counters: other window reads 0")
        try require(try await store.incrementCounter(key: "k", windowStart: w2) == 1, "counters: new window restarts")
        try await store.resetCounter(key: "k")
        try require(try await store.counter(key: "k", windowStart: w2) == 0, "counters: reset")
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { try await store.incrementCounter(key: "race", windowStart: w1) } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        try require(Set(total) == Set(1...50), "counters: concurrent increments are atomic")
    }

    public func audit(_ store: any BioAuthStore) async throws {
        for (index, user) in ["alice", "bob", "alice"].enumerated() {
            try await store.appendAudit(AuditEvent(at: t0.addingTimeInterval(Double(index)), kind: "k\(index)", userID: user, deviceID: "d", reason: "r", clientAddress: "c", requestID: "q"))
        }
        try require(try await store.auditEvents(userID: nil, limit: 10).map(\.kind) == ["k2", "k1", "k0"], "audit: newest first")
        try require(try await store.auditEvents(userID: "alice", limit: 1).map(\.kind) == ["k2"], "audit: filter and limit")
        try require(try await store.auditEvents(userID: "alice", limit: 10).first?.reason == "r", "audit: fields")
    }
}
