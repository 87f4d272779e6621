import BioAuthCore
import Foundation

/// A ``BioAuthStore`` in memory: for tests, demos and single-process servers without persistence.
/// Each method runs without suspension on the actor, so each is atomic.
public actor InMemoryStore: BioAuthStore {
    private var users: [String: UserRecord] = [:]
    private var challenges: [Data: ChallengeRecord] = [:]
    private var devicesByID: [String: DeviceRecord] = [:]
    private var sessionsByHash: [Data: SessionRecord] = [:]
    private var approvals: [Data: ApprovalRecord] = [:]
    private var enrolmentRequestsByID: [String: EnrolmentRequestRecord] = [:]
    private var apiKeysByID: [String: ApiKeyRecord] = [:]
    private var signingKeyList: [SigningKeyRecord] = []
    private var outbox: [(event: OutboxEvent, nextAttempt: Date, leaseUntil: Date?)] = []
    private var nextOutboxID: Int64 = 1
    /// Spent refresh-token hashes and the session each belonged to.
    private var spentRefreshTokens: [Data: String] = [:]
    private var counters: [String: (window: Date, count: Int)] = [:]
    private var audit: [AuditEvent] = []

    public init() {}

    // MARK: Users

    public func createUser(_ user: UserRecord, audit event: AuditEvent) throws {
        guard users[user.id] == nil else { throw StoreError(.duplicate, detail: "users") }
        users[user.id] = user
        append(event)
    }

    public func passwordLoginState(username: String, lockout: LockoutQuery) -> PasswordLoginState {
        PasswordLoginState(user: users[username], lockedOut: isLockedOut(lockout, user: username))
    }

    public func beginPasswordAttempt(username: String, lockout: LockoutQuery, run: PasswordRunPolicy, now: Date) -> PasswordAttempt {
        func entry(_ subject: FailureSubject) -> (Date, Int)? { counters[subject.storageKey].map { ($0.window, $0.count) } }
        let decision = run.decide(
            lockout: lockout, user: username, now: now, client: entry(.client(lockout.client)), password: entry(.password(username)),
            run: entry(.passwordRun(username)))
        switch decision {
        case .refused(let until): return PasswordAttempt(user: users[username], refusedUntil: until, reached: [])
        case .counted(let password, let runCount, let reached):
            counters[FailureSubject.password(username).storageKey] = (lockout.windowStart, password)
            counters[FailureSubject.passwordRun(username).storageKey] = (now, runCount)
            return PasswordAttempt(user: users[username], refusedUntil: nil, reached: reached)
        }
    }

    // MARK: Challenges

    public func issueChallenge(_ challenge: ChallengeRecord, limits: ChallengeLimits) throws -> ChallengeIssue {
        guard challenges[challenge.id] == nil else { throw StoreError(.duplicate, detail: "challenges") }
        if isLockedOut(limits.lockout, user: challenge.userID) { return .lockedOut }
        let outstanding =
            devicesByID[challenge.deviceID] == nil
            ? 0 : challenges.values.count { $0.deviceID == challenge.deviceID && $0.userID == challenge.userID && $0.expiresAt > limits.now }
        guard outstanding < limits.outstandingPerDevice else { return .tooManyChallenges }
        challenges[challenge.id] = challenge
        return .issued
    }

    public func finishChallenge(id: Data, lockout: LockoutQuery, verdict decide: @escaping @Sendable (TakenChallenge?) -> ChallengeVerdict) throws -> RecordedVerdict {
        let taken = challenges.removeValue(forKey: id).map {
            TakenChallenge(challenge: $0, device: devicesByID[$0.deviceID], lockedOut: isLockedOut(lockout, user: $0.userID))
        }
        let verdict = decide(taken)
        switch verdict {
        case .refused(let events):
            for event in events { append(event) }
            return RecordedVerdict(verdict)
        case .failed(let failure):
            return RecordedVerdict(verdict, lockedSubjects: recordFailure(failure))
        case .login(let session, let clearing, let event):
            recordLogin(session, clearing: clearing, rehashed: nil, audit: event)
            return RecordedVerdict(verdict)
        case .enrolment(let device, let replacing, let event):
            if let requestID = taken?.challenge.enrolmentRequestID {
                guard enrolmentRequestsByID[requestID]?.isApproved == true else { return RecordedVerdict(verdict) }
                if !replacing, devicesByID[device.id] != nil {
                    challenges[id] = taken?.challenge
                    throw StoreError(.duplicate, detail: "devices")
                }
                enrolmentRequestsByID[requestID] = nil
            }
            if replacing {
                guard var stored = devicesByID[device.id], stored.userID == device.userID, stored.revokedAt == nil else { return RecordedVerdict(verdict) }
                stored.publicKey = device.publicKey
                stored.lastUsedAt = device.createdAt
                devicesByID[device.id] = stored
                revokeSessions(where: { $0.userID == device.userID && $0.deviceID == device.id }, at: device.createdAt)
                withdrawApprovals { $0.deviceID == device.id }
                append(event)
                return RecordedVerdict(verdict, device: stored)
            }
            guard devicesByID[device.id] == nil else {
                challenges[id] = taken?.challenge  // as a rolled-back transaction would
                throw StoreError(.duplicate, detail: "devices")
            }
            devicesByID[device.id] = device
            append(event)
            return RecordedVerdict(verdict, device: device)
        case .approval(let approval, let clearing, let event):
            approvals[approval.tokenHash] = approval
            clear(clearing)
            append(event)
            return RecordedVerdict(verdict)
        }
    }

    public func deleteChallenges(expiredBefore date: Date) -> Int {
        let expired = challenges.filter { $0.value.expiresAt < date }.map(\.key)
        for id in expired { challenges[id] = nil }
        return expired.count
    }

    // MARK: Outcomes

    @discardableResult
    public func recordFailure(_ failure: FailureRecord) -> [FailureSubject] {
        var counts: [FailureSubject: Int] = [:]
        for subject in failure.subjects {
            let key = subject.storageKey
            let count = counters[key].map { $0.window == failure.windowStart ? $0.count + 1 : 1 } ?? 1
            counters[key] = (failure.windowStart, count)
            counts[subject] = count
        }
        let locked = failure.newlyLocked(counts)
        append(failure.audit)
        for subject in locked { append(failure.lockoutEvent(subject)) }
        return locked
    }

    public func recordLogin(_ session: SessionRecord, clearing: [FailureSubject], rehashed: UserRecord?, audit event: AuditEvent) {
        sessionsByHash[session.tokenHash] = session
        if let rehashed, users[rehashed.id] != nil { users[rehashed.id] = rehashed }
        if session.kind == .device, let deviceID = session.deviceID { devicesByID[deviceID]?.lastUsedAt = session.createdAt }
        clear(clearing)
        append(event)
    }

    // MARK: Devices

    public func device(id: String) -> DeviceRecord? { devicesByID[id] }

    public func devices(userID: String) -> [DeviceRecord] {
        devicesByID.values.filter { $0.userID == userID }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func renameDevice(id: String, userID: String, name: String, audit event: AuditEvent) -> Bool {
        guard devicesByID[id]?.userID == userID else { return false }
        devicesByID[id]?.name = name
        append(event)
        return true
    }

    public func revokeDevice(id: String, userID: String, at: Date, audit event: AuditEvent) -> Bool {
        guard let device = devicesByID[id], device.userID == userID, device.revokedAt == nil else { return false }
        devicesByID[id]?.revokedAt = at
        revokeSessions(where: { $0.userID == userID && $0.deviceID == id }, at: at)
        withdrawApprovals { $0.deviceID == id }
        append(event)
        return true
    }

    // MARK: Sessions

    public func session(tokenHash: Data) -> SessionState? {
        sessionsByHash[tokenHash].map { session in
            SessionState(session: session, deviceActive: session.deviceID.map { devicesByID[$0].map { !$0.isRevoked } ?? false } ?? true)
        }
    }

    public func session(id: String) -> SessionState? {
        sessionsByHash.values.first { $0.id == id }.flatMap { session(tokenHash: $0.tokenHash) }
    }

    public func rotateRefreshToken(tokenHash: Data, replacement: Data, now: Date, audit event: AuditEvent, reuseAudit: AuditEvent) -> RefreshRotation {
        if let (hash, session) = sessionsByHash.first(where: { $0.value.refreshTokenHash == tokenHash }), session.revokedAt == nil, session.expiresAt > now {
            sessionsByHash[hash]?.refreshTokenHash = replacement
            spentRefreshTokens[tokenHash] = session.id
            append(event.about(user: session.userID, device: session.deviceID))
            return self.session(tokenHash: hash).map { .rotated($0) } ?? .refused
        }
        guard let sessionID = spentRefreshTokens[tokenHash], let session = sessionsByHash.values.first(where: { $0.id == sessionID }) else { return .refused }
        _ = revokeSessions(where: { $0.id == sessionID }, at: now)
        append(reuseAudit.about(user: session.userID, device: session.deviceID))
        return .reused(sessionID: sessionID)
    }

    public func sessions(userID: String) -> [SessionRecord] {
        sessionsByHash.values.filter { $0.userID == userID }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func revokeSession(id: String, userID: String, at: Date, audit event: AuditEvent) -> Bool {
        let count = revokeSessions(where: { $0.id == id && $0.userID == userID }, at: at)
        if count > 0 { append(event) }
        return count > 0
    }

    public func revokeSessions(userID: String, at: Date, audit event: AuditEvent) -> Int {
        let count = revokeSessions(where: { $0.userID == userID }, at: at)
        append(event)
        return count
    }

    // MARK: Approvals

    public func redeemApproval(tokenHash: Data, operationHash: Data, userID: String, now: Date, audit event: AuditEvent) -> ApprovalRecord? {
        guard var approval = approvals[tokenHash], approval.consumedAt == nil, approval.expiresAt > now, approval.operationHash == operationHash,
            approval.userID == userID, let device = devicesByID[approval.deviceID], device.revokedAt == nil
        else { return nil }
        approval.consumedAt = now
        approvals[tokenHash] = approval
        append(event.about(user: approval.userID, device: approval.deviceID))
        return approval
    }

    // MARK: Outbox

    public func claimOutbox(now: Date, leaseUntil: Date, limit: Int) -> [OutboxEvent] {
        var claimed: [OutboxEvent] = []
        for index in outbox.indices where claimed.count < limit && outbox[index].nextAttempt <= now && (outbox[index].leaseUntil.map { $0 <= now } ?? true) {
            outbox[index].leaseUntil = leaseUntil
            claimed.append(outbox[index].event)
        }
        return claimed
    }

    public func completeOutbox(id: Int64) {
        outbox.removeAll { $0.event.id == id }
    }

    public func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) {
        guard let index = outbox.firstIndex(where: { $0.event.id == id }) else { return }
        outbox[index].event.attempts = attempts
        outbox[index].nextAttempt = nextAttemptAt
        outbox[index].leaseUntil = nil
    }

    // MARK: Signing keys

    public func signingKeys() -> [SigningKeyRecord] { signingKeyList }

    public func addSigningKey(_ key: SigningKeyRecord, audit event: AuditEvent) throws {
        guard !signingKeyList.contains(where: { $0.id == key.id }) else { throw StoreError(.duplicate, detail: "signing_keys") }
        signingKeyList.append(key)
        signingKeyList.sort { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        append(event)
    }

    // MARK: API keys

    public func createApiKey(_ key: ApiKeyRecord, audit event: AuditEvent) throws {
        guard apiKeysByID[key.id] == nil, !apiKeysByID.values.contains(where: { $0.secretHash == key.secretHash }) else {
            throw StoreError(.duplicate, detail: "api_keys")
        }
        apiKeysByID[key.id] = key
        append(event)
    }

    public func apiKey(secretHash: Data) -> ApiKeyRecord? {
        apiKeysByID.values.first { $0.secretHash == secretHash }
    }

    public func apiKeys() -> [ApiKeyRecord] {
        apiKeysByID.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func revokeApiKey(id: String, at: Date, audit event: AuditEvent) -> Bool {
        guard apiKeysByID[id]?.revokedAt == nil, apiKeysByID[id] != nil else { return false }
        apiKeysByID[id]?.revokedAt = at
        append(event)
        return true
    }

    // MARK: Enrolment requests

    public func createEnrolmentRequest(_ request: EnrolmentRequestRecord, audit event: AuditEvent) throws {
        guard enrolmentRequestsByID[request.id] == nil else { throw StoreError(.duplicate, detail: "enrolment_requests") }
        enrolmentRequestsByID[request.id] = request
        append(event)
    }

    public func enrolmentRequest(id: String) -> EnrolmentRequestRecord? { enrolmentRequestsByID[id] }

    public func enrolmentRequests(userID: String, now: Date) -> [EnrolmentRequestRecord] {
        enrolmentRequestsByID.values.filter { $0.userID == userID && $0.expiresAt > now }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func approveEnrolmentRequest(
        id: String, userID: String, approvalTokenHash: Data, operationHash: Data, excludingDevice: String, now: Date, audit event: AuditEvent
    ) -> ApprovalRecord? {
        guard let request = enrolmentRequestsByID[id], request.userID == userID, request.expiresAt > now, !request.isApproved,
            var approval = approvals[approvalTokenHash], approval.userID == userID, approval.deviceID != excludingDevice, approval.consumedAt == nil,
            approval.expiresAt > now, approval.operationHash == operationHash
        else { return nil }
        approval.consumedAt = now
        approvals[approvalTokenHash] = approval
        enrolmentRequestsByID[id]?.approvedAt = now
        enrolmentRequestsByID[id]?.approvedByDevice = approval.deviceID
        append(event)
        return approval
    }

    public func setRecoveryCode(requestID: String, codeHash: Data, now: Date, audit event: AuditEvent) -> Bool {
        guard let request = enrolmentRequestsByID[requestID], request.expiresAt > now, !request.isApproved else { return false }
        enrolmentRequestsByID[requestID]?.recoveryCodeHash = codeHash
        append(event)
        return true
    }

    public func recoverEnrolmentRequest(id: String, codeHash: Data, maxAttempts: Int, now: Date, audit event: AuditEvent) -> RecoveryOutcome {
        guard let request = enrolmentRequestsByID[id], request.expiresAt > now, !request.isApproved, let stored = request.recoveryCodeHash,
            request.recoveryAttempts < maxAttempts
        else { return .unavailable }
        if stored == codeHash {
            enrolmentRequestsByID[id]?.approvedAt = now
            append(event)
            return .approved
        }
        enrolmentRequestsByID[id]?.recoveryAttempts += 1
        append(event.rejectedRecovery)
        return .wrongCode(attemptsLeft: maxAttempts - request.recoveryAttempts - 1)
    }

    // MARK: Audit

    public func appendAudit(_ event: AuditEvent) { append(event) }

    public func sweep(windowsBefore: Date, runsBefore: Date, auditBefore: Date) -> SweepResult {
        let before = (counters.count, audit.count, approvals.count, enrolmentRequestsByID.count)
        counters = counters.filter { key, entry in
            key.hasPrefix(FailureSubject.passwordRun("").storageKey) ? entry.window >= runsBefore : entry.window >= windowsBefore
        }
        audit.removeAll { $0.at < auditBefore }
        outbox.removeAll { $0.event.event.at < auditBefore }
        approvals = approvals.filter { $0.value.expiresAt >= windowsBefore }
        enrolmentRequestsByID = enrolmentRequestsByID.filter { $0.value.expiresAt >= windowsBefore }
        let ended = Set(sessionsByHash.values.filter { $0.expiresAt < windowsBefore }.map(\.id))
        spentRefreshTokens = spentRefreshTokens.filter { !ended.contains($0.value) }
        return SweepResult(
            counters: before.0 - counters.count, auditRows: before.1 - audit.count, approvals: before.2 - approvals.count,
            enrolmentRequests: before.3 - enrolmentRequestsByID.count)
    }

    public func auditEvents(userID: String?, limit: Int) -> [AuditEvent] {
        Array(audit.reversed().filter { userID == nil || $0.userID == userID }.prefix(limit))
    }

    public func close() {}

    // MARK: Internals

    /// Appends an audit event, merging a repeated failure into the row it repeats.
    private func append(_ event: AuditEvent) {
        if AuditKind.deliveredEvents.contains(event.kind) {
            outbox.append((OutboxEvent(id: nextOutboxID, event: event.delivered, attempts: 0), event.at, nil))
            nextOutboxID += 1
        }
        if event.aggregates,
            let index = audit.indices.suffix(64).last(where: { audit[$0].at >= event.at.addingTimeInterval(-AuditEvent.aggregationWindow) && audit[$0].repeats(event) })
        {
            audit[index].count += 1  // the row keeps its place (as a row keeps its sequence number)
            audit[index].at = event.at
            return
        }
        audit.append(event)
    }

    private func isLockedOut(_ lockout: LockoutQuery, user: String?) -> Bool {
        var counts: [FailureSubject: Int] = [:]
        for (subject, _) in lockout.subjects(user: user) {
            if let entry = counters[subject.storageKey], entry.window == lockout.windowStart { counts[subject] = entry.count }
        }
        return lockout.isLockedOut(counts, user: user)
    }

    private func clear(_ subjects: [FailureSubject]) {
        for subject in subjects { counters[subject.storageKey] = nil }
    }

    /// Revokes the matching live sessions and withdraws the approvals they obtained.
    @discardableResult
    private func revokeSessions(where matches: (SessionRecord) -> Bool, at: Date) -> Int {
        var revoked: Set<String> = []
        for (hash, session) in sessionsByHash where session.revokedAt == nil && matches(session) {
            sessionsByHash[hash]?.revokedAt = at
            revoked.insert(session.id)
        }
        withdrawApprovals { $0.sessionID.map(revoked.contains) ?? false }
        return revoked.count
    }

    /// Deletes the matching approvals not yet redeemed.
    private func withdrawApprovals(where matches: (ApprovalRecord) -> Bool) {
        approvals = approvals.filter { $0.value.consumedAt != nil || !matches($0.value) }
    }
}
