import BioAuthAttestation
import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// Devices, sessions, step-up approvals, refresh tokens, and what revoking withdraws.
extension StoreConformance {
    public func devices(_ store: any BioAuthStore) async throws {
        let device = DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4, 5]), createdAt: t0, enrolledBy: .approval)
        try await enrol(store, device)
        try await enrol(
            store, DeviceRecord(id: "d2", userID: "alice", name: "Pad", publicKey: Data([6]), createdAt: t0.addingTimeInterval(1)))
        try await enrol(store, DeviceRecord(id: "d3", userID: "bob", name: "Other", publicKey: Data([7]), createdAt: t0))
        try require(await isDuplicate { try await self.enrol(store, device) }, "devices: duplicate")
        try require(try await store.device(id: "d1") == device, "devices: round trip")
        try require(try await store.devices(userID: "alice").map(\.id) == ["d1", "d2"], "devices: list in creation order")
        try require(
            try await store.apply(.renameDevice(id: "d1", userID: "alice", name: "Work phone", audit: event("device.renamed"))).wasApplied,
            "devices: rename")
        try require(
            !(try await store.apply(.renameDevice(id: "d3", userID: "alice", name: "x", audit: event("device.renamed"))).wasApplied),
            "devices: rename another user's")
        _ = try await store.apply(.login(session("s1", device: "d1"), audit: event("login.succeeded")))
        try require(
            try await store.apply(.revokeDevice(id: "d1", userID: "alice", at: t0.addingTimeInterval(9), audit: event("device.revoked")))
                .wasApplied, "devices: revoke")
        try require(
            !(try await store.apply(.revokeDevice(id: "d1", userID: "alice", at: t0, audit: event("device.revoked"))).wasApplied),
            "devices: revoke twice")
        try require(
            !(try await store.apply(.revokeDevice(id: "d3", userID: "alice", at: t0, audit: event("device.revoked"))).wasApplied),
            "devices: revoke another user's")
        let revoked = try await store.device(id: "d1")
        try require(revoked?.revokedAt == t0.addingTimeInterval(9) && revoked?.name == "Work phone", "devices: revoked state")
        let revived = try await enrol(
            store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([9]), createdAt: t0), replacing: .recovery)
        let still = try await store.device(id: "d1")
        try require(
            revived == nil && still?.revokedAt != nil && still?.publicKey == Data([4, 5]),
            "devices: a revoked device's key is never replaced (it never comes back)")
        let state = try await store.session(tokenHash: session("s1", device: "d1").tokenHash)
        try require(
            state?.deviceActive == false && state?.session.revokedAt == t0.addingTimeInterval(9), "devices: revoking revokes its sessions")
        let kinds = try await store.auditEvents(userID: "alice", limit: 10).map(\.kind.description)
        try require(
            kinds.filter { $0 == "device.revoked" }.count == 1 && kinds.filter { $0 == "device.renamed" }.count == 1,
            "devices: one audit per write", "\(kinds)")

        // Every device of a user at once (the backend's "I lost my phone"): the active ones are
        // counted, their sessions and the user's primary sessions end, another user keeps hers.
        _ = try await store.apply(.login(session("s2", device: "d2"), audit: event("login.succeeded")))
        _ = try await store.apply(.login(session("s4", device: nil), audit: event("login.succeeded")))
        _ = try await store.apply(.login(session("s5", device: "d3", user: "bob"), audit: event("login.succeeded")))
        let all = try await store.apply(.revokeDevices(userID: "alice", at: t0.addingTimeInterval(20), audit: event("device.revoked")))
        try require(all.wasApplied && all.revokedDevices == 1 && all.revokedSessions == 2, "devices: revoke all of a user", "\(all)")
        try require(try await store.devices(userID: "alice").allSatisfy { $0.revokedAt != nil }, "devices: all revoked")
        try require(
            try await store.device(id: "d1")?.revokedAt == t0.addingTimeInterval(9),
            "devices: revoking all keeps an earlier revocation's time")
        try require(
            try await store.sessions(userID: "alice").allSatisfy { $0.revokedAt != nil }, "devices: revoking all ends every session")
        let bobs = try await store.sessions(userID: "bob")
        try require(
            try await store.device(id: "d3")?.revokedAt == nil && bobs.allSatisfy { $0.revokedAt == nil },
            "devices: another user's are kept")
        try require(
            try await store.apply(.revokeDevices(userID: "alice", at: t0, audit: event("device.revoked"))).revokedDevices == 0,
            "devices: revoke all again")
    }

    /// An App Attest assertion's counter is stored only above the stored one, for the same key:
    /// a replay, an out-of-order assertion or one of a replaced key is refused with nothing
    /// written, and of concurrent assertions with one counter exactly one is stored.
    public func appAttestCounters(_ store: any BioAuthStore) async throws {
        let key = StoredAppAttestKey(keyID: Data(repeating: 1, count: 32), publicKey: Data([4]), counter: 0, receipt: Data([9]))
        let attested = DeviceAttestation(
            format: .appleAppAttest, securityLevel: .secureEnclave, appID: "TEAM.app", environment: "production", verifiedAt: t0,
            appAttestKey: key)
        try await enrol(
            store,
            DeviceRecord(
                id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0, credential: .appKey(attestation: attested)))
        try await enrol(store, DeviceRecord(id: "d2", userID: "alice", name: "Pad", publicKey: Data([5]), createdAt: t0))
        func advance(_ device: DeviceID, keyID: Data = key.keyID, to counter: UInt32) async throws -> Bool {
            var advanced = attested
            advanced.appAttestKey = StoredAppAttestKey(keyID: keyID, publicKey: key.publicKey, counter: counter, receipt: key.receipt)
            var plan = WritePlan.events([event("login.succeeded", device: device)])
            plan.assertion(advanced, device: device)
            return try await store.apply(plan).wasApplied
        }
        try require(try await advance("d1", to: 2), "app attest: an assertion above the stored counter")
        try require(
            try await store.device(id: "d1")?.credential.attestation?.appAttestKey?.counter == 2, "app attest: the counter is stored")
        try require(!(try await advance("d1", to: 2)), "app attest: a replayed counter")
        try require(!(try await advance("d1", to: 1)), "app attest: an earlier counter")
        try require(!(try await advance("d1", keyID: Data(repeating: 2, count: 32), to: 9)), "app attest: another key's assertion")
        try require(!(try await advance("d2", to: 9)), "app attest: a device without an attested key")
        try require(!(try await advance("gone", to: 9)), "app attest: an unknown device")
        let stored = try await store.device(id: "d1")?.credential.attestation
        try require(stored?.appAttestKey?.counter == 2 && stored?.appID == "TEAM.app", "app attest: refusals write nothing")
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 { group.addTask { try await advance("d1", to: 3) } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "app attest: concurrent assertions with one counter", "\(winners) were stored")
    }

    /// A passkey's signature counter is stored behind its guard (`WritePlan.Guard.passkeyCounter`):
    /// above the stored one it is written; the same or an earlier one, another credential's, or
    /// parallel sign-ins with one value beyond the first write nothing — the counter never goes
    /// back. Two zeros (an authenticator that keeps none) pass every time.
    public func passkeyCounters(_ store: any BioAuthStore) async throws {
        let credential = PasskeyCredential(
            credentialID: Data(repeating: 7, count: 16), publicKey: Data([4]), signCount: 5, backupEligible: false, backedUp: false,
            format: "none", attestation: .none, aaguid: Data(count: 16))
        var zero = credential
        zero.signCount = 0
        try await enrol(
            store,
            DeviceRecord(id: "d1", userID: "alice", name: "Key", publicKey: Data([4]), createdAt: t0, credential: .passkey(credential)))
        try await enrol(
            store, DeviceRecord(id: "d2", userID: "alice", name: "Synced", publicKey: Data([5]), createdAt: t0, credential: .passkey(zero)))
        func advance(_ device: DeviceID, _ stored: PasskeyCredential, to counter: UInt32, credentialID: Data? = nil) async throws -> Bool {
            var next = stored
            next.signCount = counter
            var plan = WritePlan.events([event("login.succeeded", device: device)])
            plan.require(.passkeyCounter(deviceID: device, credentialID: credentialID ?? stored.credentialID, below: counter))
            plan.add(.storePasskey(deviceID: device, next))
            return try await store.apply(plan).wasApplied
        }
        try require(try await advance("d1", credential, to: 6), "passkey: a counter above the stored one")
        try require(try await store.device(id: "d1")?.credential.passkey?.signCount == 6, "passkey: the counter is stored")
        try require(!(try await advance("d1", credential, to: 6)), "passkey: the same counter again")
        try require(!(try await advance("d1", credential, to: 4)), "passkey: an earlier counter")
        try require(
            !(try await advance("d1", credential, to: 9, credentialID: Data(repeating: 8, count: 16))), "passkey: another credential")
        try require(!(try await advance("gone", credential, to: 9)), "passkey: an unknown device")
        try require(try await store.device(id: "d1")?.credential.passkey?.signCount == 6, "passkey: refusals write nothing")
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await advance("d1", credential, to: 7) } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "passkey: parallel sign-ins with one counter", "\(winners) were stored")
        try require(try await store.device(id: "d1")?.credential.passkey?.signCount == 7, "passkey: the counter never went back")
        let first = try await advance("d2", zero, to: 0), second = try await advance("d2", zero, to: 0)
        try require(first && second, "passkey: two zeros pass every time")
    }

    public func sessions(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        for (id, device) in [("s1", nil), ("s22", "d1"), ("s333", "gone")] as [(SessionID, DeviceID?)] {
            _ = try await store.apply(.login(session(id, device: device), audit: event("login.succeeded")))
        }
        try require(
            try await store.session(tokenHash: session("s22", device: "d1").tokenHash)
                == SessionState(session: session("s22", device: "d1"), deviceActive: true), "sessions: round trip")
        try require(
            try await store.session(tokenHash: session("s1", device: nil).tokenHash)?.deviceActive == true,
            "sessions: primary sessions have no device")
        try require(
            try await store.session(tokenHash: session("s333", device: "gone").tokenHash)?.deviceActive == false,
            "sessions: a missing device is not active")
        try require(try await store.session(tokenHash: TokenHash(digest: Data(count: 32))) == nil, "sessions: unknown")
        try require(try await store.sessions(userID: "alice").map(\.id) == ["s1", "s22", "s333"], "sessions: list")
        try require(
            try await store.apply(.revokeSession(id: "s1", userID: "alice", at: t0, audit: event("session.revoked"))).wasApplied,
            "sessions: revoke one")
        try require(
            !(try await store.apply(.revokeSession(id: "s1", userID: "alice", at: t0, audit: event("session.revoked"))).wasApplied),
            "sessions: revoke twice")
        try require(
            !(try await store.apply(.revokeSession(id: "s22", userID: "bob", at: t0, audit: event("session.revoked"))).wasApplied),
            "sessions: revoke another user's")
        try require(
            try await store.apply(.revokeSessions(userID: "alice", at: t0, audit: event("sessions.revoked")))
                == .applied(revokedSessions: 2), "sessions: revoke all")
        try require(try await store.sessions(userID: "alice").allSatisfy { $0.revokedAt == self.t0 }, "sessions: all revoked")
    }

    public func approvals(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        let step = challenge()
        _ = try await issue(store, step)
        let approval = ApprovalRecord(
            tokenHash: TokenHash(digest: Data([1])), userID: "alice", deviceID: "d1", operationHash: Data([2]), createdAt: t0,
            expiresAt: t0.addingTimeInterval(300))
        try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved")) }
        let redeemed = event("approval.redeemed", user: nil)
        try require(
            try await store.run(
                RedeemApproval(
                    tokenHash: TokenHash(digest: Data([1])), operationHash: Data([3]), userID: "alice", now: t0, audit: redeemed)) == nil,
            "approvals: other operation")
        try require(
            try await store.run(
                RedeemApproval(
                    tokenHash: TokenHash(digest: Data([1])), operationHash: Data([2]), userID: "bob", now: t0, audit: redeemed)) == nil,
            "approvals: another user expected")
        try require(
            try await store.run(
                RedeemApproval(
                    tokenHash: TokenHash(digest: Data([1])), operationHash: Data([2]), userID: "alice", now: t0.addingTimeInterval(300),
                    audit: redeemed)) == nil,
            "approvals: expired")
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await store.run(
                        RedeemApproval(
                            tokenHash: TokenHash(digest: Data([1])), operationHash: Data([2]), userID: "alice", now: self.t0,
                            audit: redeemed))
                        != nil
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try require(winners == 1, "approvals: consumed once under races", "\(winners)")
        let audit = try await store.auditEvents(userID: "alice", limit: 10).filter { $0.kind.description == "approval.redeemed" }
        try require(audit.count == 1 && audit.first?.deviceID == "d1", "approvals: one redemption audited, about its user and device")
    }

    /// Refresh tokens: the current one rotates once (under races, the losers are reuse); a spent
    /// one revokes its session and withdraws its approvals; an ended session refreshes nothing;
    /// sessions are found by id with their device's state.
    public func refreshTokens(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0))
        func token(_ byte: UInt8) -> Data { Data(repeating: byte, count: 32) }
        func hash(_ byte: UInt8) -> TokenHash { TokenHash(of: token(byte)) }
        var live = session("s1", device: "d1")
        live.refreshTokenHash = hash(1)
        _ = try await store.apply(.login(live, audit: event("login.succeeded")))
        _ = try await store.apply(.login(session("s22", device: nil), audit: event("login.succeeded")))
        try require(
            try await store.session(id: "s1") == SessionState(session: live, deviceActive: true),
            "refresh: a session by id, with its refresh hash")
        try require(try await store.session(id: "nope") == nil, "refresh: unknown session id")
        let rotated = event("token.refreshed", user: nil), reused = event("token.refresh.reused", user: nil)
        let boundTo = live.dpopThumbprint
        func rotate(_ presented: UInt8, to next: UInt8, at offset: TimeInterval = 0) async throws -> RefreshRotation {
            try await store.run(
                RotateRefreshToken(
                    presented: token(presented), successor: SecretBytes(token(next)), grace: 10, now: t0.addingTimeInterval(offset),
                    audit: rotated, reuseAudit: reused, proofKey: boundTo))
        }
        try require(try await rotate(9, to: 10) == .refused, "refresh: unknown token")
        guard case .rotated(let state) = try await rotate(1, to: 2) else {
            throw ConformanceFailure("refresh: the current token rotates", "")
        }
        try require(
            state.session.id == "s1" && state.session.refreshTokenHash == hash(2) && state.deviceActive,
            "refresh: the session, with its new hash")
        try require(state.session.dpopThumbprint == live.dpopThumbprint, "refresh: the rotated session keeps its DPoP binding")
        // Ten parallel uses of one token: one rotates, the others (within the grace) get its successor.
        let outcomes = try await withThrowingTaskGroup(of: RefreshRotation.self) { group in
            for next in 3..<13 { group.addTask { try await rotate(2, to: UInt8(next)) } }
            return try await group.reduce(into: [RefreshRotation]()) { $0.append($1) }
        }
        let winners = outcomes.compactMap { if case .rotated(let state) = $0 { state.session.refreshTokenHash } else { nil } }
        try require(winners.count == 1, "refresh: one rotation under races", "\(winners.count)")
        let repeated = outcomes.compactMap { if case .repeated(_, let successor) = $0 { TokenHash(of: successor) } else { nil } }
        try require(
            repeated.count == 9 && repeated.allSatisfy { $0 == winners[0] }, "refresh: the others within the grace get the same successor",
            "\(outcomes)")
        try require(try await store.session(id: "s1")?.session.revokedAt == nil, "refresh: a retry is not theft")
        guard case .repeated = try await rotate(2, to: 30, at: 9.5) else {
            throw ConformanceFailure("refresh: a retry within the grace", "")
        }
        try require(try await rotate(2, to: 31, at: 10) == .reused(sessionID: "s1"), "refresh: after the grace, reuse")
        try require(try await store.session(id: "s1")?.session.revokedAt == t0.addingTimeInterval(10), "refresh: reuse revoked the session")
        try require(try await rotate(1, to: 20) == .reused(sessionID: "s1"), "refresh: an old token is still reuse")
        let current = try await store.session(id: "s1")?.session.refreshTokenHash
        try require(current == winners[0], "refresh: retries wrote no new token")

        // A successor that was used makes its predecessor reuse at once, grace or not.
        var used = session("s4444", device: "d1")
        used.refreshTokenHash = hash(50)
        used.dpopThumbprint = boundTo
        _ = try await store.apply(.login(used, audit: event("login.succeeded")))
        guard case .rotated = try await rotate(50, to: 51), case .rotated = try await rotate(51, to: 52, at: 1) else {
            throw ConformanceFailure("refresh: a chain of rotations", "")
        }
        try require(
            try await rotate(50, to: 53, at: 2) == .reused(sessionID: "s4444"), "refresh: a spent token whose successor was used is reuse")
        try require(try await rotate(52, to: 54, at: 3) == .refused, "refresh: a revoked session refreshes nothing")

        var ending = session("s333", device: "d1")
        ending.refreshTokenHash = hash(40)
        ending.dpopThumbprint = boundTo
        _ = try await store.apply(.login(ending, audit: event("login.succeeded")))
        try require(try await rotate(40, to: 41, at: 3600) == .refused, "refresh: an expired session refreshes nothing")
        let audit = try await store.auditEvents(userID: "alice", limit: 100)
        let refreshed = audit.filter { $0.kind.description == "token.refreshed" }
        try require(
            refreshed.filter { $0.reason != .refreshRetried }.count == 4
                && refreshed.filter { $0.reason == .refreshRetried }.map(\.count).reduce(0, +) == 10,
            "refresh: rotations and retries audited about the user", "\(refreshed)")
        let audited = audit.map(\.kind.description)
        try require(audited.contains("token.refresh.reused"), "refresh: reuse audited about the user")
    }

    /// Revocation is final for what was already granted: an approval cannot be redeemed once the
    /// session that obtained it is revoked or logged out, the user's sessions are revoked, or the
    /// device that signed it (or whose session obtained it) is revoked or re-keyed.
    public func approvalWithdrawal(_ store: any BioAuthStore) async throws {
        for (id, user) in [("d1", "alice"), ("d2", "alice"), ("d3", "alice"), ("d9", "bob")] as [(DeviceID, UserID)] {
            try await enrol(store, DeviceRecord(id: id, userID: user, name: id.rawValue, publicKey: Data(id.rawValue.utf8), createdAt: t0))
        }
        for (id, device, user) in [
            ("p1", nil, "alice"), ("s-d1", "d1", "alice"), ("s-d2", "d2", "alice"), ("p2", nil, "alice"), ("b1", nil, "bob"),
        ]
            as [(SessionID, DeviceID?, UserID)]
        {
            _ = try await store.apply(.login(session(id, device: device, user: user), audit: event("login.succeeded", user: user)))
        }
        func grant(_ token: UInt8, device: DeviceID, session: SessionID, user: UserID = "alice") async throws {
            let step = challenge(user: user, device: device)
            _ = try await issue(store, step)
            let approval = ApprovalRecord(
                tokenHash: TokenHash(digest: Data([token])), userID: user, deviceID: device, operationHash: Data([2]), createdAt: t0,
                expiresAt: t0.addingTimeInterval(300),
                sessionID: session)
            try await finish(store, step.id) { _ in .approval(approval, audit: self.event("stepup.approved", user: user)) }
        }
        func redeemable(_ token: UInt8, user: UserID = "alice") async throws -> Bool {
            try await store.run(
                RedeemApproval(
                    tokenHash: TokenHash(digest: Data([token])), operationHash: Data([2]), userID: user, now: t0,
                    audit: event("approval.redeemed", user: nil))) != nil
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
        try await enrol(
            store, DeviceRecord(id: "d2", userID: "alice", name: "d2", publicKey: Data([9, 9]), createdAt: t0), replacing: .recovery)
        try require(!(try await redeemable(4)), "withdrawal: replacing the signing device's key")
        try require(try await redeemable(5), "withdrawal: unrelated revocations leave an approval alone")
        try await grant(8, device: "d3", session: "p2")
        _ = try await store.apply(.revokeSessions(userID: "alice", at: t0, audit: event("sessions.revoked")))
        try require(!(try await redeemable(8)), "withdrawal: revoking every session of the user")
        try require(try await redeemable(6, user: "bob"), "withdrawal: another user's approval is untouched")
    }

    /// Revoking or re-keying a device deletes the challenges issued to it in the same
    /// transaction (a step-up asked of the old key is never finished); other devices' challenges
    /// and other users' stay.
    public func challengeWithdrawal(_ store: any BioAuthStore) async throws {
        for (id, user) in [("d1", "alice"), ("d2", "alice"), ("d3", "alice"), ("d9", "bob")] as [(DeviceID, UserID)] {
            try await enrol(store, DeviceRecord(id: id, userID: user, name: id.rawValue, publicKey: Data(id.rawValue.utf8), createdAt: t0))
        }
        let issued = [
            challenge(device: "d1"), challenge(.login, device: "d2"), challenge(device: "d3"), challenge(user: "bob", device: "d9"),
        ]
        for challenge in issued { try require(try await issue(store, challenge), "challenge withdrawal: issued") }
        func outstanding(_ index: Int) async throws -> Bool { try await store.challenge(id: issued[index].id) != nil }

        _ = try await store.apply(.revokeDevice(id: "d1", userID: "alice", at: t0, audit: event("device.revoked")))
        try require(!(try await outstanding(0)), "challenge withdrawal: revoking the device deletes its challenge")
        let secondStays = try await outstanding(1), thirdStays = try await outstanding(2)
        let othersStay = secondStays && thirdStays
        try require(othersStay, "challenge withdrawal: other devices' challenges stay")
        try await enrol(
            store, DeviceRecord(id: "d2", userID: "alice", name: "d2", publicKey: Data([9, 9]), createdAt: t0), replacing: .recovery)
        try require(!(try await outstanding(1)), "challenge withdrawal: replacing the key deletes the old key's challenge")
        try require(try await outstanding(2), "challenge withdrawal: a re-key of another device leaves this one's")
        _ = try await store.apply(.revokeDevices(userID: "alice", at: t0, audit: event("devices.revoked")))
        try require(!(try await outstanding(2)), "challenge withdrawal: revoking every device deletes every challenge of the user")
        try require(try await outstanding(3), "challenge withdrawal: another user's challenge stays")
    }
}
