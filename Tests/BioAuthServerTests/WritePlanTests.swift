import BioAuthServer
import Foundation
import Testing

/// The lifecycle rules as plans: what each change withdraws, audits and delivers, decided once
/// for every store (the stores' side is `StoreConformance`).
struct WritePlanTests {
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    func event(_ kind: AuditKind) -> AuditEvent { AuditEvent(at: at, kind: kind.description, userID: "alice", deviceID: "d1") }

    @Test func revokingADeviceEndsItsSessionsAndWithdrawsItsApprovalsOnlyWhileItIsActive() {
        let plan = WritePlan.revokeDevice(id: "d1", userID: "alice", at: at, audit: event(.deviceRevoked))
        #expect(plan.guards == [.activeDevice(id: "d1", userID: "alice")])
        #expect(
            plan.mutations == [
                .revokeDevice(id: "d1", at: at), .withdrawApprovals(.ofDevice(id: "d1", userID: "alice")),
                .revokeSessions(.openedBy(deviceID: "d1", userID: "alice"), at: at), .appendAudit(event(.deviceRevoked)),
                .enqueueEvent(event(.deviceRevoked).delivered),
            ])
    }

    @Test func aReplacedKeyTakesTheSameSessionsAndApprovalsAsARevocation() {
        let replaced = WritePlan.replacedKey(deviceID: "d1", userID: "alice", at: at).mutations
        let revoked = WritePlan.revokeDevice(id: "d1", userID: "alice", at: at, audit: event(.deviceRevoked)).mutations
        #expect(replaced == [.withdrawApprovals(.ofDevice(id: "d1", userID: "alice")), .revokeSessions(.openedBy(deviceID: "d1", userID: "alice"), at: at)])
        #expect(replaced.allSatisfy(revoked.contains))
    }

    @Test func endingSessionsWithdrawsTheApprovalsTheyObtained() {
        let one = WritePlan.revokeSession(id: "s1", userID: "alice", at: at, audit: event(.sessionRevoked))
        #expect(one.guards == [.activeSession(id: "s1", userID: "alice")])
        #expect(one.mutations.prefix(2) == [.withdrawApprovals(.obtainedBy(sessionID: "s1")), .revokeSessions(.one(id: "s1", userID: "alice"), at: at)])
        let reused = WritePlan.reusedRefreshToken(sessionID: "s1", userID: "alice", at: at, audit: event(.refreshTokenReused))
        #expect(reused.guards.isEmpty, "a reused token ends its session whatever its state")
        #expect(reused.mutations.prefix(2) == one.mutations.prefix(2))
        let all = WritePlan.revokeSessions(userID: "alice", at: at, audit: event(.sessionsRevoked))
        #expect(all.guards.isEmpty)
        #expect(all.mutations.prefix(2) == [.withdrawApprovals(.allOf(userID: "alice")), .revokeSessions(.allOf(userID: "alice"), at: at)])
    }

    @Test func onlyDeliveredKindsGoToTheOutbox() {
        for kind in [AuditKind.deviceRevoked, .deviceRenamed, .sessionRevoked, .loginSucceeded, .loginFailed] {
            var plan = WritePlan()
            plan.audit(event(kind))
            let delivered = AuditKind.deliveredEvents.contains(kind.description)
            #expect(plan.mutations == [.appendAudit(event(kind))] + (delivered ? [.enqueueEvent(event(kind).delivered)] : []), "\(kind)")
        }
        #expect(AuditKind.deliveredEvents.contains(AuditKind.deviceRevoked.description))
        #expect(!AuditKind.deliveredEvents.contains(AuditKind.loginFailed.description))
    }
}
