import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// Enrolment requests: approval by another device, recovery codes, the pending cap under races.
extension StoreConformance {
    /// Enrolment requests: listed unexpired in order; approved only by an unconsumed approval of
    /// the same user for exactly their operation from another device, once under races; recovery
    /// codes count attempts and stop at the limit; an enrolment consumes an approved request only,
    /// in its own transaction; the sweep deletes expired ones.
    public func enrolmentRequests(_ store: any BioAuthStore) async throws {
        let key = Data(P256.Signing.PrivateKey().publicKey.derRepresentation)
        func request(_ id: EnrolmentRequestID, user: UserID = "alice", device: DeviceID = "d2", expires: TimeInterval = 900) -> EnrolmentRequestRecord {
            EnrolmentRequestRecord(
                id: id, userID: user, deviceID: device, name: "Pad", publicKey: key, replacing: false, sessionID: SessionID("s-" + id.rawValue),
                createdAt: t0.addingTimeInterval(Double(id.rawValue.count)), expiresAt: t0.addingTimeInterval(expires))
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
        func grant(_ token: UInt8, device: DeviceID, user: UserID = "alice", operation: Data) async throws {
            let step = challenge(user: user, device: device)
            _ = try await issue(store, step)
            let approval = ApprovalRecord(
                tokenHash: TokenHash(digest: Data([token])), userID: user, deviceID: device, operationHash: operation, createdAt: t0, expiresAt: t0.addingTimeInterval(300))
            try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved", user: user)) }
        }
        try await grant(1, device: "d1", operation: text)
        try await grant(2, device: "d1", operation: Data(repeating: 7, count: 32))
        try await grant(3, device: "d2", operation: text)
        try await grant(4, device: "b1", user: "bob", operation: text)
        let approved = event("enrolment.approved")
        func approve(_ token: UInt8, id: EnrolmentRequestID = "r1", user: UserID = "alice") async throws -> Bool {
            try await store.approveEnrolmentRequest(
                id: id, userID: user, approvalTokenHash: TokenHash(digest: Data([token])), operationHash: text, excludingDevice: "d2", now: t0, audit: approved)
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
            try await store.redeemApproval(tokenHash: TokenHash(digest: Data([1])), operationHash: text, userID: "alice", now: t0, audit: event("approval.redeemed")) == nil,
            "requests: the approval is consumed")

        // An enrolment naming a request: only an approved one, consumed with the device.
        func enrolThrough(_ requestID: EnrolmentRequestID, device: DeviceID) async throws -> DeviceRecord? {
            var registration = challenge(.registration(publicKey: key, deviceName: "Pad", replacing: false), device: device)
            registration.enrolmentRequestID = requestID
            try require(try await issue(store, registration), "requests: challenge issued")
            let device = DeviceRecord(id: device, userID: "alice", name: "Pad", publicKey: key, createdAt: t0)
            return try await enrolled(store, registration, device, replacing: nil)
        }
        try require(try await enrolThrough("r22", device: "d3") == nil, "requests: an unapproved request enrols nothing")
        try require(try await store.device(id: "d3") == nil, "requests: nothing written for it")
        try require(try await enrolThrough("r1", device: "d2")?.id == "d2", "requests: an approved request enrols")
        try require(try await store.enrolmentRequest(id: "r1") == nil, "requests: consumed by the enrolment")
        try require(try await enrolThrough("r1", device: "d4") == nil, "requests: consumed once")

        // Recovery codes.
        let code = TokenHash(digest: Data(repeating: 5, count: 32)), wrong = TokenHash(digest: Data(repeating: 6, count: 32))
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
        let rejected = try await store.auditEvents(userID: nil, limit: 50).filter { $0.kind == .recoveryCodeRejected }.reduce(0) { $0 + $1.count }
        try require(rejected == 3, "recovery: each wrong code audited", "\(rejected)")

        let swept = try await store.sweep(windowsBefore: t0.addingTimeInterval(901), runsBefore: t0, auditBefore: t0, sessionsBefore: t0)
        try require(swept.enrolmentRequests == 3, "requests: expired ones swept", "\(swept.enrolmentRequests)")
    }

    /// The pending-request cap is a guard evaluated in the transaction: at the limit a request is
    /// refused with nothing written, expired or approved ones do not count, another user's never
    /// do, and of parallel requests exactly enough to reach the limit land.
    public func pendingEnrolmentRequestCap(_ store: any BioAuthStore) async throws {
        let key = Data(P256.Signing.PrivateKey().publicKey.derRepresentation)
        func request(_ id: EnrolmentRequestID, user: UserID, expires: TimeInterval = 900) -> EnrolmentRequestRecord {
            EnrolmentRequestRecord(
                id: id, userID: user, deviceID: DeviceID("d-" + id.rawValue), name: "Pad", publicKey: key, replacing: false, sessionID: "s", createdAt: t0,
                expiresAt: t0.addingTimeInterval(expires))
        }
        func ask(_ id: EnrolmentRequestID, user: UserID = "carol", expires: TimeInterval = 900, at now: Date? = nil) async throws -> PlanOutcome {
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
            for n in 0..<10 { group.addTask { try await ask(EnrolmentRequestID("dave-\(n)"), user: "dave").wasApplied } }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        try require(outcomes.count(where: { $0 }) == 3, "request cap: parallel requests stop at the limit", "\(outcomes.count(where: { $0 })) landed")
    }

    /// The first-device rule is a guard evaluated in the finishing transaction under a per-user
    /// lock: of parallel first enrolments exactly one lands, another user's never interferes, and
    /// a revoked device still counts (revoking every device does not make the next one first).
    public func firstDevice(_ store: any BioAuthStore) async throws {
        func first(_ id: DeviceID, user: UserID) -> WritePlan {
            let device = DeviceRecord(id: id, userID: user, name: "Phone", publicKey: Data(id.rawValue.utf8), createdAt: t0)
            return .enrolment(device, replacing: nil, approvedRequest: nil, asFirstDevice: true, audit: event("device.enrolled", user: user, device: id))
        }
        let landed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<8 { group.addTask { try await store.apply(first(DeviceID("erin-\(n)"), user: "erin")).wasApplied } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(landed == 1, "first device: one of eight parallel enrolments", "\(landed) landed")
        try require(try await store.devices(userID: "erin").count == 1, "first device: nothing written for the others")
        try require(try await store.apply(first("frank-1", user: "frank")).wasApplied, "first device: another user's is their own")
        _ = try await store.apply(.revokeDevice(id: "frank-1", userID: "frank", at: t0, audit: event("device.revoked", user: "frank")))
        let refused = try await store.apply(first("frank-2", user: "frank"))
        try require(refused.refusal == .noDeviceEver(userID: "frank"), "first device: a revoked device still counts")
    }
}
