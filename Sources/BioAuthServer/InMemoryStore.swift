import BioAuthCore
import Foundation

/// A ``BioAuthStore`` in memory: for tests, demos and single-process servers without persistence.
public actor InMemoryStore: BioAuthStore {
    private var users: [String: UserRecord] = [:]
    private var challenges: [Data: ChallengeRecord] = [:]
    private var devicesByID: [String: DeviceRecord] = [:]
    private var sessionsByHash: [Data: SessionRecord] = [:]
    private var approvals: [Data: ApprovalRecord] = [:]
    private var counters: [String: (window: Date, count: Int)] = [:]
    private var audit: [AuditEvent] = []

    public init() {}

    public func insertUser(_ user: UserRecord) throws {
        guard users[user.id] == nil else { throw StoreError(.duplicate) }
        users[user.id] = user
    }

    public func user(id: String) -> UserRecord? { users[id] }

    public func insertChallenge(_ challenge: ChallengeRecord, outstandingLimit limit: Int, now: Date) throws {
        guard challenges[challenge.id] == nil else { throw StoreError(.duplicate) }
        let outstanding = challenges.values.filter { $0.deviceID == challenge.deviceID && $0.expiresAt > now }.count
        guard outstanding < limit else { throw StoreError(.tooManyChallenges) }
        challenges[challenge.id] = challenge
    }

    public func consumeChallenge(id: Data) -> ChallengeRecord? { challenges.removeValue(forKey: id) }

    public func deleteChallenges(expiredBefore date: Date) -> Int {
        let expired = challenges.filter { $0.value.expiresAt < date }.map(\.key)
        for id in expired { challenges[id] = nil }
        return expired.count
    }

    public func insertDevice(_ device: DeviceRecord) throws {
        guard devicesByID[device.id] == nil else { throw StoreError(.duplicate) }
        devicesByID[device.id] = device
    }

    public func device(id: String) -> DeviceRecord? { devicesByID[id] }

    public func devices(userID: String) -> [DeviceRecord] {
        devicesByID.values.filter { $0.userID == userID }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func replaceDeviceKey(id: String, userID: String, publicKey: Data, at: Date) -> Bool {
        guard var device = devicesByID[id], device.userID == userID else { return false }
        device.publicKey = publicKey
        device.revokedAt = nil
        device.lastUsedAt = at
        devicesByID[id] = device
        return true
    }

    public func renameDevice(id: String, userID: String, name: String) -> Bool {
        guard devicesByID[id]?.userID == userID else { return false }
        devicesByID[id]?.name = name
        return true
    }

    public func revokeDevice(id: String, userID: String, at: Date) -> Bool {
        guard let device = devicesByID[id], device.userID == userID, device.revokedAt == nil else { return false }
        devicesByID[id]?.revokedAt = at
        return true
    }

    public func touchDevice(id: String, at: Date) { devicesByID[id]?.lastUsedAt = at }

    public func insertSession(_ session: SessionRecord) throws {
        guard sessionsByHash[session.tokenHash] == nil else { throw StoreError(.duplicate) }
        sessionsByHash[session.tokenHash] = session
    }

    public func session(tokenHash: Data) -> SessionRecord? { sessionsByHash[tokenHash] }

    public func sessions(userID: String) -> [SessionRecord] {
        sessionsByHash.values.filter { $0.userID == userID }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func revokeSession(id: String, userID: String, at: Date) -> Bool {
        guard let entry = sessionsByHash.first(where: { $0.value.id == id && $0.value.userID == userID && $0.value.revokedAt == nil }) else {
            return false
        }
        sessionsByHash[entry.key]?.revokedAt = at
        return true
    }

    public func revokeSessions(userID: String, deviceID: String?, at: Date) -> Int {
        var count = 0
        for (hash, session) in sessionsByHash
        where session.userID == userID && session.revokedAt == nil && (deviceID == nil || session.deviceID == deviceID) {
            sessionsByHash[hash]?.revokedAt = at
            count += 1
        }
        return count
    }

    public func insertApproval(_ approval: ApprovalRecord) throws {
        guard approvals[approval.tokenHash] == nil else { throw StoreError(.duplicate) }
        approvals[approval.tokenHash] = approval
    }

    public func consumeApproval(tokenHash: Data, operationHash: Data, now: Date) -> ApprovalRecord? {
        guard var approval = approvals[tokenHash], approval.consumedAt == nil, approval.expiresAt > now,
            approval.operationHash == operationHash
        else { return nil }
        approval.consumedAt = now
        approvals[tokenHash] = approval
        return approval
    }

    public func incrementCounter(key: String, windowStart: Date) -> Int {
        let count = counters[key].map { $0.window == windowStart ? $0.count + 1 : 1 } ?? 1
        counters[key] = (windowStart, count)
        return count
    }

    public func counter(key: String, windowStart: Date) -> Int {
        guard let entry = counters[key], entry.window == windowStart else { return 0 }
        return entry.count
    }

    public func resetCounter(key: String) { counters[key] = nil }

    public func appendAudit(_ event: AuditEvent) { audit.append(event) }

    public func close() {}

    public func auditEvents(userID: String?, limit: Int) -> [AuditEvent] {
        Array(audit.reversed().filter { userID == nil || $0.userID == userID }.prefix(limit))
    }
}
