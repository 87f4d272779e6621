import BioAuthCore
import BioAuthServer
import BioAuthTesting
import Foundation

extension StoreConformance {
    /// Cross-device sign-ins: a start is decided on the user's recent requests under a per-user
    /// lock (the per-address cap, the announcements, whether the address is known); the phone's
    /// list has the known addresses first, then the newest, and only pending requests; the
    /// screen's collection opens the session once, only while the approving device is active.
    public func crossDeviceRequests(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        _ = try await store.apply(
            {
                var plan = WritePlan()
                plan.add(.rememberClient(userID: "alice", client: "192.0.2.7", at: t0))
                return plan
            }())
        let policy = CrossDevicePolicy(maxPendingPerRequester: 2, announcementsPerUser: 1)
        func request(_ id: CrossDeviceRequestID, from client: String, at offset: TimeInterval, screenKey: String? = nil)
            -> CrossDeviceRequestRecord
        {
            CrossDeviceRequestRecord(
                id: id, userID: "alice", requester: client, screen: ScreenLabel(userAgent: "Firefox/140"),
                createdAt: t0.addingTimeInterval(offset),
                expiresAt: t0.addingTimeInterval(offset + 180), approvalHash: TokenHash(ofText: "text \(id)"),
                pollTokenHash: TokenHash(ofText: "poll \(id)"), announced: false, screenKey: screenKey)
        }
        func start(_ r: CrossDeviceRequestRecord) async throws -> CrossDeviceAdmission {
            let locks = RowLocks(
                crossDeviceRequestsOf: CrossDeviceRequestsOf(
                    "alice", since: t0.addingTimeInterval(-600), client: r.requester, screenKey: r.screenKey))
            return try await store.decide(locking: locks) { rows in
                WritePlan.requestCrossDevice(rows, r, announceable: true, policy: policy, audit: event("crossdevice.requested"))
            }.verdict
        }
        let first = try await start(request("x1", from: "10.0.0.1", at: 1))
        let second = try await start(request("x2", from: "10.0.0.1", at: 2))
        let capped = try await start(request("x3", from: "10.0.0.1", at: 3))
        let known = try await start(request("x4", from: "192.0.2.7", at: 4))
        let stranger = try await start(request("x5", from: "10.0.0.2", at: 5))
        guard case .stored(let r1) = first, case .stored(let r2) = second, case .stored(let r4) = known, case .stored(let r5) = stranger
        else { throw ConformanceFailure("crossDevice", "requests within the caps are stored") }
        try require(capped == .limited(until: t0.addingTimeInterval(181)), "crossDevice: an address's pending requests are capped")
        try require(
            r1.announced && !r2.announced && r4.announced && !r5.announced,
            "crossDevice: announcements are limited per user, but a known address is always announced")

        let listed = try await store.pendingCrossDeviceRequests(userID: "alice", now: t0.addingTimeInterval(10), limit: 10)
        try require(
            listed.map(\.id) == ["x4", "x5", "x2", "x1"], "crossDevice: known addresses first, then the newest", "\(listed.map(\.id))")
        try require(listed.first == r4, "crossDevice: a request reads back as written")

        var approved = r1
        approved.approvedAt = t0.addingTimeInterval(20)
        approved.approvedByDevice = "d1"
        var denied = r2
        denied.endedAt = t0.addingTimeInterval(20)
        denied.ending = .denied
        for update in [approved, denied] {
            var plan = WritePlan()
            plan.add(.updateCrossDeviceRequest(update))
            _ = try await store.apply(plan)
        }
        try require(try await store.crossDeviceRequest(id: "x2") == denied, "crossDevice: an ending is stored")
        let pending = try await store.pendingCrossDeviceRequests(userID: "alice", now: t0.addingTimeInterval(21), limit: 10)
        try require(pending.map(\.id) == ["x4", "x5"], "crossDevice: only pending requests are listed", "\(pending.map(\.id))")
        try require(
            try await store.pendingCrossDeviceRequests(userID: "alice", now: t0.addingTimeInterval(400), limit: 10).isEmpty,
            "crossDevice: expired requests are not listed")

        let screenToken = SecretBytes(Data(repeating: 3, count: 32))
        func collect(_ token: String, at offset: TimeInterval) async throws -> (CrossDeviceCollection?, Bool) {
            let decided = try await store.decide(locking: RowLocks(crossDeviceRequest: "x1")) { rows in
                WritePlan.collectCrossDevice(
                    rows, pollTokenHash: TokenHash(ofText: token),
                    session: { request in
                        var opened = session("c1", device: request.approvedByDevice)
                        opened.kind = .crossDevice
                        return SessionGrant(token: "t", session: opened)
                    }, screenToken: screenToken, at: t0.addingTimeInterval(offset), audit: event("crossdevice.signed.in"))
            }
            return (decided.verdict, decided.outcome.wasApplied)
        }
        try require(try await collect("not the token", at: 30).0 == nil, "crossDevice: another poll token collects nothing")
        let collected = try await collect("poll x1", at: 30)
        guard case .session(let grant, let kept)? = collected.0, collected.1 else {
            throw ConformanceFailure("crossDevice", "an approval is collected")
        }
        try require(
            try await store.session(id: grant.session.id)?.session.kind == .crossDevice, "crossDevice: the collected session is stored")
        try require(try await collect("poll x1", at: 31).0 == .ended(.collected), "crossDevice: a session is collected once")
        try require(kept == Base64URL.encode(screenToken.data), "crossDevice: the screen gets its token")

        // That screen, at an address the user never used, is the user's own: announced though the
        // announcements are spent, and listed before strangers' newer requests.
        let screenKey = CrossDevicePolicy.screenKey(screenToken)
        let remembered = try await start(request("x6", from: "10.0.0.6", at: 40, screenKey: screenKey))
        let strangerAfter = try await start(
            request("x7", from: "10.0.0.7", at: 41, screenKey: CrossDevicePolicy.screenKey(SecretBytes(Data(count: 32)))))
        guard case .stored(let r6) = remembered, case .stored(let r7) = strangerAfter else {
            throw ConformanceFailure("crossDevice", "the remembered screen's request is stored")
        }
        try require(r6.announced && !r7.announced, "crossDevice: a remembered screen is always announced, a made-up token is not")
        let withScreen = try await store.pendingCrossDeviceRequests(userID: "alice", now: t0.addingTimeInterval(42), limit: 10)
        try require(
            withScreen.prefix(2).map(\.id).sorted() == ["x4", "x6"] && withScreen.contains { $0.id == "x7" },
            "crossDevice: a remembered screen is listed with the known addresses, first", "\(withScreen.map(\.id))")
        try require(try await store.crossDeviceRequest(id: "x6")?.screenKey == screenKey, "crossDevice: the screen key reads back")
    }

    /// A DPoP proof's key and `jti` are remembered once: the second time is a duplicate, so
    /// every instance accepts a proof once.
    public func dpopProofs(_ store: any BioAuthStore) async throws {
        func remember(_ text: String) async throws {
            var plan = WritePlan()
            plan.add(.rememberDPoPProof(TokenHash(ofText: text), until: t0.addingTimeInterval(360)))
            _ = try await store.apply(plan)
        }
        try await remember("jkt|jti-1")
        try await remember("jkt|jti-2")
        try require(await isDuplicate { try await remember("jkt|jti-1") }, "dpop: a proof seen before is a duplicate")
    }
}
