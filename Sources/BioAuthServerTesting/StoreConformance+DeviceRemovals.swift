import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// Device removals: the lost-phone case, from the code budget to the revocation.
extension StoreConformance {
    /// A device removal (the lost-phone case): asked for within the requester's daily code budget
    /// and only for an active device; a wrong code counts, the last allowed one ends it; the right
    /// code schedules it; it is listed and due at its time; a cancelled one is never due; executing
    /// one revokes the device with its sessions, once.
    public func deviceRemovals(_ store: any BioAuthStore) async throws {
        try await enrol(store, DeviceRecord(id: "d1", userID: "alice", name: "Lost phone", publicKey: Data([4]), createdAt: t0))
        _ = try await store.apply(.login(session("s1", device: "d1"), audit: event("login.succeeded", device: "d1")))
        let code = TokenHash(ofText: "the code"), limits = RecoveryCodeLimits(perRequest: 3, interval: 60, perRequesterPerDay: 2)
        func removal(_ id: DeviceRemovalID, device: DeviceID = "d1", at: Date) -> DeviceRemovalRecord {
            DeviceRemovalRecord(
                id: id, userID: "alice", deviceID: device, sessionID: "p1", requester: "192.0.2.7", createdAt: at,
                codeExpiresAt: at.addingTimeInterval(900), codeHash: code)
        }
        func request(_ r: DeviceRemovalRecord) async throws -> (Date?, Bool) {
            let decided = try await store.decide(locking: RowLocks(counters: [.recoveryCodes(r.userID, client: r.requester)])) { rows in
                WritePlan.requestDeviceRemoval(r, rows, limits: limits, audit: event("device.removal.requested", device: r.deviceID))
            }
            return (decided.verdict, decided.outcome.wasApplied)
        }
        let refusedForGone = try await request(removal("r0", device: "nope", at: t0))
        try require(refusedForGone.0 == nil && !refusedForGone.1, "removals: only an active device can be removed")
        try require(try await store.deviceRemovals(userID: "alice").isEmpty, "removals: nothing written for a device that is not active")
        let first = try await request(removal("r1", at: t0))
        let second = try await request(removal("r2", at: t0.addingTimeInterval(1)))
        try require(first.1 && second.1, "removals: asked for within the budget")
        let third = try await request(removal("r3", at: t0.addingTimeInterval(2)))
        try require(
            third.0 == t0.addingTimeInterval(RecoveryCodeLimits.day), "removals: the requester's daily budget holds",
            "\(String(describing: third.0))")
        let listed = try await store.deviceRemovals(userID: "alice")
        try require(
            listed.map(\.id) == ["r1", "r2"] && listed[0] == removal("r1", at: t0), "removals: listed in order as written",
            "\(listed.map(\.id))")

        func confirm(_ id: DeviceRemovalID, _ entered: TokenHash, session: SessionID = "p1", at: Date) async throws
            -> DeviceRemovalConfirmation
        {
            try await store.decide(locking: RowLocks(deviceRemoval: id)) { rows in
                WritePlan.confirmDeviceRemoval(
                    rows, sessionID: session, entered: entered, maxAttempts: 2, delay: 86_400, at: at,
                    audit: event("device.removal.scheduled", device: "d1"))
            }.verdict
        }
        try require(
            try await confirm("r1", code, session: "other", at: t0.addingTimeInterval(10)) == .unavailable,
            "removals: only the asking session confirms")
        try require(
            try await confirm("r2", TokenHash(ofText: "wrong"), at: t0.addingTimeInterval(10)) == .wrongCode(attemptsLeft: 1),
            "removals: a wrong code counts")
        try require(
            try await confirm("r2", TokenHash(ofText: "wrong"), at: t0.addingTimeInterval(11)) == .wrongCode(attemptsLeft: 0),
            "removals: the last wrong code")
        try require(
            try await confirm("r2", code, at: t0.addingTimeInterval(12)) == .unavailable,
            "removals: ended by wrong codes, the right one does nothing")
        try require(
            try await confirm("r1", code, at: t0.addingTimeInterval(1000)) == .unavailable, "removals: a code entered too late does nothing"
        )
        let fresh = try await request(removal("r4", at: t0.addingTimeInterval(RecoveryCodeLimits.day + 1)))
        try require(fresh.1, "removals: the budget frees up after a day")
        let day1 = t0.addingTimeInterval(RecoveryCodeLimits.day + 10)
        guard case .scheduled(let scheduled) = try await confirm("r4", code, at: day1) else {
            throw ConformanceFailure("removals: the right code schedules it", "")
        }
        try require(
            scheduled.executesAt == day1.addingTimeInterval(86_400) && scheduled.status(at: day1) == .scheduled,
            "removals: scheduled after the delay")
        let stored = try await store.deviceRemovals(userID: "alice").first { $0.id == "r4" }
        try require(stored == scheduled, "removals: the schedule is stored", "\(String(describing: stored))")
        try require(
            try await store.deviceRemovals(userID: "alice").first { $0.id == "r2" }?.ending == .wrongCodes, "removals: the ending is stored"
        )

        try require(
            try await store.dueDeviceRemovals(now: day1.addingTimeInterval(86_399), limit: 10).isEmpty, "removals: not due before its time")
        let due = try await store.dueDeviceRemovals(now: day1.addingTimeInterval(86_400), limit: 10)
        try require(due.map(\.id) == ["r4"], "removals: due at its time", "\(due.map(\.id))")

        func execute(_ id: DeviceRemovalID, at: Date) async throws -> Bool {
            let decided = try await store.decide(locking: RowLocks(deviceRemoval: id)) { rows in
                WritePlan.executeDeviceRemoval(rows, deviceActive: true, at: at, audit: event("device.revoked", device: "d1"))
            }
            return decided.verdict && decided.outcome.wasApplied
        }
        // A cancelled removal is never due and executes nothing.
        _ = try await request(removal("r5", at: day1))
        guard case .scheduled = try await confirm("r5", code, at: day1.addingTimeInterval(1)) else {
            throw ConformanceFailure("removals: r5 scheduled", "")
        }
        let cancelled = try await store.decide(locking: RowLocks(deviceRemoval: "r5")) { rows in
            WritePlan.cancelDeviceRemoval(
                rows, userID: "alice", at: day1.addingTimeInterval(2), audit: event("device.removal.cancelled", device: "d1"))
        }
        try require(cancelled.verdict && cancelled.outcome.wasApplied, "removals: an open one is cancelled")
        let again = try await store.decide(locking: RowLocks(deviceRemoval: "r5")) { rows in
            WritePlan.cancelDeviceRemoval(
                rows, userID: "alice", at: day1.addingTimeInterval(3), audit: event("device.removal.cancelled", device: "d1"))
        }
        try require(!again.verdict, "removals: an ended one is not cancelled again")
        try require(
            try await store.dueDeviceRemovals(now: day1.addingTimeInterval(200_000), limit: 10).map(\.id) == ["r4"],
            "removals: a cancelled one is never due")
        try require(!(try await execute("r5", at: day1.addingTimeInterval(200_000))), "removals: a cancelled one executes nothing")

        try require(try await execute("r4", at: day1.addingTimeInterval(86_400)), "removals: executed at its time")
        try require(try await store.device(id: "d1")?.revokedAt != nil, "removals: executing revokes the device")
        try require(try await store.session(id: "s1")?.session.revokedAt != nil, "removals: and the sessions it opened")
        try require(
            try await store.dueDeviceRemovals(now: day1.addingTimeInterval(200_000), limit: 10).isEmpty,
            "removals: an executed one is not due again")
        try require(
            try await store.deviceRemovals(userID: "alice").first { $0.id == "r4" }?.ending == .executed, "removals: ended as executed")
        // Retention: ended removals and codes never entered go with the audit rows of their time.
        _ = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: day1.addingTimeInterval(86_399), sessionsBefore: t0)
        let kept = try await store.deviceRemovals(userID: "alice").map(\.id)
        try require(kept == ["r4"], "removals: swept with the audit once ended or never confirmed, and only then", "\(kept)")
        _ = try await store.sweep(windowsBefore: t0, runsBefore: t0, auditBefore: day1.addingTimeInterval(86_401), sessionsBefore: t0)
        try require(try await store.deviceRemovals(userID: "alice").isEmpty, "removals: the executed one goes with the audit of its time")
    }
}
