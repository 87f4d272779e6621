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
        let bound = TokenHash(ofText: "Add device Pad, key …, code K3QF7M2X")
        func request(_ id: EnrolmentRequestID, user: UserID = "alice", device: DeviceID = "d2", expires: TimeInterval = 900)
            -> EnrolmentRequestRecord
        {
            EnrolmentRequestRecord(
                id: id, userID: user, deviceID: device, name: "Pad", publicKey: key, replacing: false,
                sessionID: SessionID("s-" + id.rawValue),
                createdAt: t0.addingTimeInterval(Double(id.rawValue.count)), expiresAt: t0.addingTimeInterval(expires), approvalHash: bound)
        }
        func ask(_ record: EnrolmentRequestRecord) async throws {
            try require(
                try await store.run(
                    RequestEnrolment(record, maxPending: 5, now: t0, audit: event("enrolment.requested", user: record.userID)))
                    == nil, "requests: stored")
        }
        try await ask(request("r1"))
        try await ask(request("r22", expires: 10))
        try await ask(request("r333", user: "bob"))
        try require(await isDuplicate { try await ask(request("r1")) }, "requests: duplicate id")
        try require(
            try await store.enrolmentRequests(userID: "alice", now: t0).map(\.id) == ["r1", "r22"], "requests: the user's, oldest first")
        try require(
            try await store.enrolmentRequests(userID: "alice", now: t0.addingTimeInterval(10)).map(\.id) == ["r1"],
            "requests: unexpired only")
        try require(try await store.enrolmentRequest(id: "r1") == request("r1"), "requests: stored as given")

        // Approvals: a step-up approval of alice's device d1 for the request's text. Only an
        // approval whose device is still enrolled and active approves.
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        let text = bound.digest, unbound = Data(SHA256.hash(data: Data(request("r1").approvalText.utf8)))
        func grant(_ token: UInt8, device: DeviceID, user: UserID = "alice", operation: Data) async throws {
            let step = challenge(user: user, device: device)
            _ = try await issue(store, step)
            let approval = ApprovalRecord(
                tokenHash: TokenHash(digest: Data([token])), userID: user, deviceID: device, operationHash: operation, createdAt: t0,
                expiresAt: t0.addingTimeInterval(300))
            try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved", user: user)) }
        }
        try await grant(1, device: "d1", operation: text)
        try await grant(2, device: "d1", operation: Data(repeating: 7, count: 32))
        try await grant(3, device: "d2", operation: text)
        try await grant(4, device: "b1", user: "bob", operation: text)
        try await grant(5, device: "d1", operation: unbound)
        let approved = event("enrolment.approved")
        func approve(_ token: UInt8, id: EnrolmentRequestID = "r1", user: UserID = "alice") async throws -> Bool {
            try await store.run(
                ApproveEnrolmentRequest(
                    id: id, userID: user, approvalTokenHash: TokenHash(digest: Data([token])), excludingDevice: "d2", now: t0,
                    audit: approved))
        }
        try require(try await !approve(2), "requests: an approval for other text")
        try require(try await !approve(5), "requests: an approval for the text without its binding code")
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
            try await store.run(
                RedeemApproval(
                    tokenHash: TokenHash(digest: Data([1])), operationHash: text, userID: "alice", now: t0,
                    audit: event("approval.redeemed")))
                == nil,
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
        func send(_ id: EnrolmentRequestID, user: UserID = "bob", at now: Date? = nil) async throws -> RecoveryCodeDelivery {
            try await store.run(
                SetRecoveryCode(
                    requestID: id, userID: user, requester: "203.0.113.9", codeHash: code, limits: RecoveryCodeLimits(), now: now ?? t0,
                    audit: event("enrolment.recovery.sent", user: user)))
        }
        try require(
            try await store.run(RecoverEnrolmentRequest(id: "r333", codeHash: code, maxAttempts: 3, now: t0, audit: approved))
                == .unavailable,
            "recovery: no code sent")
        try require(try await send("r333") == .send, "recovery: code set")
        try require(try await store.enrolmentRequest(id: "r333")?.codesSent == 1, "recovery: the code is counted")
        try require(try await send("nope") == .notPending, "recovery: unknown request")
        try require(try await send("r333", user: "alice") == .notPending, "recovery: another user's request")
        try require(
            try await store.run(RecoverEnrolmentRequest(id: "r333", codeHash: wrong, maxAttempts: 3, now: t0, audit: approved))
                == .wrongCode(attemptsLeft: 2), "recovery: wrong code counted")
        try require(
            try await store.run(
                RecoverEnrolmentRequest(
                    id: "r333", codeHash: code, maxAttempts: 3, now: t0.addingTimeInterval(900), audit: approved)) == .unavailable,
            "recovery: expired")
        try require(
            try await store.run(RecoverEnrolmentRequest(id: "r333", codeHash: code, maxAttempts: 3, now: t0, audit: approved)) == .approved,
            "recovery: the code approves")
        try require(
            try await store.run(RecoverEnrolmentRequest(id: "r333", codeHash: code, maxAttempts: 3, now: t0, audit: approved))
                == .unavailable,
            "recovery: once")
        try await ask(request("r4444", user: "bob"))
        try require(try await send("r4444") == .send, "recovery: a code for another request")
        for left in [1, 0] {
            try require(
                try await store.run(RecoverEnrolmentRequest(id: "r4444", codeHash: wrong, maxAttempts: 2, now: t0, audit: approved))
                    == .wrongCode(attemptsLeft: left), "recovery: attempts count down")
        }
        let dead = try await store.enrolmentRequest(id: "r4444")
        try require(
            dead?.endedAt == t0 && dead?.ending == .wrongCodes && dead?.isPending(at: t0) == false,
            "recovery: the last wrong code ends the request")
        try require(
            try await store.run(RecoverEnrolmentRequest(id: "r4444", codeHash: code, maxAttempts: 2, now: t0, audit: approved))
                == .unavailable,
            "recovery: no attempts left")
        try require(try await send("r4444", at: t0.addingTimeInterval(120)) == .notPending, "recovery: no code for an ended request")
        let rejected = try await store.auditEvents(userID: nil, limit: 50).filter { $0.kind == .recoveryCodeRejected }.reduce(0) {
            $0 + $1.count
        }
        try require(rejected == 3, "recovery: each wrong code audited", "\(rejected)")
        try require(
            try await store.auditEvents(userID: nil, limit: 50).contains {
                $0.kind == .enrolmentRequestEnded && $0.reason == AuditReason(EnrolmentRequestEnding.wrongCodes)
            },
            "recovery: the end audited")

        let swept = try await store.sweep(windowsBefore: t0.addingTimeInterval(901), runsBefore: t0, auditBefore: t0, sessionsBefore: t0)
        try require(swept.enrolmentRequests == 3, "requests: expired ones swept", "\(swept.enrolmentRequests)")
    }

    /// The pending-request cap is decided on the user's requests read under a per-user lock, per
    /// requester: at the limit a request is refused with nothing written and told when a slot
    /// frees; expired, approved and ended ones do not count, another user's or another requester's
    /// never do, and of 32 parallel requests exactly enough to reach the limit land.
    public func pendingEnrolmentRequestCap(_ store: any BioAuthStore) async throws {
        let key = Data(P256.Signing.PrivateKey().publicKey.derRepresentation)
        func request(_ id: EnrolmentRequestID, user: UserID, expires: TimeInterval, requester: String) -> EnrolmentRequestRecord {
            EnrolmentRequestRecord(
                id: id, userID: user, deviceID: DeviceID("d-" + id.rawValue), name: "Pad", publicKey: key, replacing: false, sessionID: "s",
                createdAt: t0,
                expiresAt: t0.addingTimeInterval(expires), requester: requester)
        }
        func ask(
            _ id: EnrolmentRequestID, user: UserID = "carol", expires: TimeInterval = 900, at now: Date? = nil,
            from requester: String = "198.51.100.1"
        )
            async throws -> Date?
        {
            try await store.run(
                RequestEnrolment(
                    request(id, user: user, expires: expires, requester: requester), maxPending: 3, now: now ?? t0,
                    audit: event("enrolment.requested", user: user)))
        }
        try require(try await ask("short", expires: 10) == nil, "request cap: below the limit")
        let second = try await ask("c2"), third = try await ask("c3")
        try require(second == nil && third == nil, "request cap: up to the limit")
        let refused = try await ask("c4")
        try require(
            refused == t0.addingTimeInterval(10), "request cap: refused at the limit, until the first pending one expires",
            "\(String(describing: refused))")
        try require(try await store.enrolmentRequest(id: "c4") == nil, "request cap: nothing written when refused")
        try require(try await ask("b1", user: "bob") == nil, "request cap: another user's count is their own")
        try require(try await ask("owner", from: "203.0.113.1") == nil, "request cap: another requester's count is its own (issue 42)")
        try require(try await store.enrolmentRequest(id: "owner")?.requester == "203.0.113.1", "request cap: the requester is stored")
        try require(try await ask("c5", at: t0.addingTimeInterval(10)) == nil, "request cap: an expired request does not count")
        try require(try await ask("c6", at: t0.addingTimeInterval(10)) != nil, "request cap: full again")
        let code = TokenHash(digest: Data(repeating: 5, count: 32))
        let later = t0.addingTimeInterval(10)
        _ = try await store.run(
            SetRecoveryCode(
                requestID: "c2", userID: "carol", requester: "203.0.113.9", codeHash: code, limits: RecoveryCodeLimits(), now: later,
                audit: event("enrolment.recovery.sent")))
        try require(
            try await store.run(
                RecoverEnrolmentRequest(
                    id: "c2", codeHash: code, maxAttempts: 5, now: later, audit: event("enrolment.approved"))) == .approved,
            "request cap: approved")
        try require(try await ask("c7", at: later) == nil, "request cap: an approved request does not count")
        try require(
            try await store.run(
                OwnedRequestDecision.cancel(id: "c3", userID: "carol", now: later, audit: event("enrolment.request.ended"))),
            "request cap: cancelled")
        try require(try await ask("c8", at: later) == nil, "request cap: an ended request does not count")
        let landed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<32 { group.addTask { try await ask(EnrolmentRequestID("dave-\(n)"), user: "dave") == nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(landed == 3, "request cap: 32 parallel requests stop at the limit", "\(landed) landed")
        try require(try await store.enrolmentRequests(userID: "dave", now: t0).count == 3, "request cap: 3 stored")
    }

    /// Recovery-code limits are decided in one transaction with the request and the requester's
    /// daily counter: 3 codes per request, 60 s apart, 10 per user and requester per day across requests; parallel
    /// sends cannot pass a limit; a day later the count starts again; the sweep keeps the daily
    /// count for its day.
    public func recoveryCodeLimits(_ store: any BioAuthStore) async throws {
        let key = Data(P256.Signing.PrivateKey().publicKey.derRepresentation)
        let limits = RecoveryCodeLimits(perRequest: 3, interval: 60, perRequesterPerDay: 10)
        func ask(_ id: EnrolmentRequestID, at now: Date) async throws {
            let record = EnrolmentRequestRecord(
                id: id, userID: "frank", deviceID: DeviceID("d-" + id.rawValue), name: "Pad", publicKey: key, replacing: false,
                sessionID: "s", createdAt: now,
                expiresAt: now.addingTimeInterval(900))
            try require(
                try await store.run(RequestEnrolment(record, maxPending: 100, now: now, audit: event("enrolment.requested", user: "frank")))
                    == nil, "codes: request stored")
        }
        func send(_ id: EnrolmentRequestID, at seconds: TimeInterval) async throws -> RecoveryCodeDelivery {
            try await store.run(
                SetRecoveryCode(
                    requestID: id, userID: "frank", requester: "203.0.113.9", codeHash: TokenHash(digest: Data(repeating: 5, count: 32)),
                    limits: limits, now: t0.addingTimeInterval(seconds),
                    audit: event("enrolment.recovery.sent", user: "frank")))
        }
        try await ask("q0", at: t0)
        try require(try await send("q0", at: 0) == .send, "codes: the first")
        try require(try await send("q0", at: 30) == .limited(until: t0.addingTimeInterval(60)), "codes: 60 s apart, with the real wait")
        try require(try await send("q0", at: 60) == .send, "codes: the second after 60 s")
        try require(try await send("q0", at: 120) == .send, "codes: the third")
        try require(try await send("q0", at: 180) == .limited(until: nil), "codes: 3 per request, then none for it")
        try require(try await store.enrolmentRequest(id: "q0")?.codesSent == 3, "codes: counted on the request")
        // Parallel sends for fresh requests: the daily count (3 so far) stops at 10.
        for n in 1...8 { try await ask(EnrolmentRequestID("q\(n)"), at: t0.addingTimeInterval(200)) }
        let sent = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 1...8 { group.addTask { try await send(EnrolmentRequestID("q\(n)"), at: 200) == .send } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(sent == 7, "codes: parallel sends stop at the daily limit", "\(sent) sent")
        let refused = try await withThrowingTaskGroup(of: RecoveryCodeDelivery.self) { group in
            for n in 1...8 { group.addTask { try await send(EnrolmentRequestID("q\(n)"), at: 300) } }
            return try await group.reduce(into: [RecoveryCodeDelivery]()) { $0.append($1) }
        }
        try require(
            refused.allSatisfy { $0 == .limited(until: t0.addingTimeInterval(RecoveryCodeLimits.day)) }, "codes: the day's end is the wait",
            "\(refused)")
        _ = try await store.sweep(
            windowsBefore: t0.addingTimeInterval(3600), runsBefore: t0.addingTimeInterval(-RecoveryCodeLimits.day), auditBefore: t0,
            sessionsBefore: t0)
        try await ask("q9", at: t0.addingTimeInterval(3600))
        try require(
            try await send("q9", at: 3600) == .limited(until: t0.addingTimeInterval(RecoveryCodeLimits.day)),
            "codes: a sweep keeps the day's count")
        // The owner, from their own address, has a budget of their own (issue 42).
        let owner = try await store.run(
            SetRecoveryCode(
                requestID: "q9", userID: "frank", requester: "203.0.113.1", codeHash: TokenHash(digest: Data(repeating: 6, count: 32)),
                limits: limits,
                now: t0.addingTimeInterval(3600), audit: event("enrolment.recovery.sent", user: "frank")))
        try require(owner == .send, "codes: another requester's daily count is its own", "\(owner)")
        let tomorrow = RecoveryCodeLimits.day
        try await ask("q10", at: t0.addingTimeInterval(tomorrow))
        try require(try await send("q10", at: tomorrow) == .send, "codes: a new day starts again")
    }

    /// The owner cancels a request, pending or approved but unused: it ends (cancelled), cannot
    /// be approved, take a code, or enrol; another user's request and an ended one cannot be cancelled.
    public func cancelledRequests(_ store: any BioAuthStore) async throws {
        let key = Data(P256.Signing.PrivateKey().publicKey.derRepresentation)
        func ask(_ id: EnrolmentRequestID) async throws {
            let record = EnrolmentRequestRecord(
                id: id, userID: "gina", deviceID: DeviceID("d-" + id.rawValue), name: "Pad", publicKey: key, replacing: false,
                sessionID: "s", createdAt: t0,
                expiresAt: t0.addingTimeInterval(900))
            _ = try await store.run(RequestEnrolment(record, maxPending: 5, now: t0, audit: event("enrolment.requested", user: "gina")))
        }
        let code = TokenHash(digest: Data(repeating: 5, count: 32))
        let ended = event("enrolment.request.ended", user: "gina")
        try await ask("p1")
        try await ask("p2")
        try require(
            try await !store.run(OwnedRequestDecision.cancel(id: "p1", userID: "mallory", now: t0, audit: ended)),
            "cancel: another user's request")
        try require(
            try await store.run(OwnedRequestDecision.cancel(id: "p1", userID: "gina", now: t0, audit: ended)), "cancel: a pending request")
        let p1 = try await store.enrolmentRequest(id: "p1")
        try require(p1?.ending == .cancelled && p1?.endedAt == t0, "cancel: ended as cancelled")
        try require(try await !store.run(OwnedRequestDecision.cancel(id: "p1", userID: "gina", now: t0, audit: ended)), "cancel: once")
        try require(
            try await store.run(
                SetRecoveryCode(
                    requestID: "p1", userID: "gina", requester: "203.0.113.9", codeHash: code, limits: RecoveryCodeLimits(), now: t0,
                    audit: event("x"))) == .notPending,
            "cancel: no code for it")
        // Approved, then cancelled before the enrolment: the enrolment is refused.
        _ = try await store.run(
            SetRecoveryCode(
                requestID: "p2", userID: "gina", requester: "203.0.113.9", codeHash: code, limits: RecoveryCodeLimits(), now: t0,
                audit: event("x")))
        _ = try await store.run(
            RecoverEnrolmentRequest(id: "p2", codeHash: code, maxAttempts: 5, now: t0, audit: event("enrolment.approved")))
        try require(
            try await store.run(OwnedRequestDecision.cancel(id: "p2", userID: "gina", now: t0, audit: ended)),
            "cancel: an approved, unused request")
        var registration = challenge(.registration(publicKey: key, deviceName: "Pad", replacing: false), user: "gina", device: "d-p2")
        registration.enrolmentRequestID = "p2"
        try require(try await issue(store, registration), "cancel: challenge issued")
        let device = DeviceRecord(id: "d-p2", userID: "gina", name: "Pad", publicKey: key, createdAt: t0)
        try require(try await enrolled(store, registration, device, replacing: nil) == nil, "cancel: a cancelled request enrols nothing")
        try require(
            try await store.auditEvents(userID: "gina", limit: 10).filter { $0.kind == .enrolmentRequestEnded }.count == 2,
            "cancel: audited")
        // A password change ends every request of the user still open, and no one else's.
        try await ask("p3")
        try await ask("p4")
        let later = t0.addingTimeInterval(60)
        guard var other = try await store.enrolmentRequest(id: "p3") else { throw ConformanceFailure("cancel: p3 stored", "") }
        other.id = "q1"
        other.userID = "hal"
        _ = try await store.run(RequestEnrolment(other, maxPending: 5, now: t0, audit: event("enrolment.requested", user: "hal")))
        var plan = WritePlan()
        plan.add(.endOpenEnrolmentRequests(userID: "gina", at: later, ending: .cancelled))
        try require(try await store.apply(plan).wasApplied, "cancel: every open request")
        for id in ["p3", "p4"] as [EnrolmentRequestID] {
            let ended = try await store.enrolmentRequest(id: id)
            try require(ended?.ending == .cancelled && ended?.endedAt == later, "cancel: \(id) ended with the others")
        }
        try require(try await store.enrolmentRequest(id: "p1")?.endedAt == t0, "cancel: an ended request keeps its ending")
        try require(try await store.enrolmentRequest(id: "q1")?.endedAt == nil, "cancel: another user's request stays")
    }
}
