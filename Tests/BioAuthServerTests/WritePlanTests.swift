import BioAuthServer
import Foundation
import Testing
import BioAuthServerTesting

/// The lifecycle rules as plans: what each change withdraws, audits and delivers, decided once
/// for every store (the stores' side is `StoreConformance`).
struct WritePlanTests {
    let at = Date(timeIntervalSince1970: 1_800_000_000)
    func event(_ kind: AuditKind) -> AuditEvent { AuditEvent(at: at, kind: kind, userID: "alice", deviceID: "d1") }

    @Test func revokingADeviceEndsItsSessionsWithdrawsItsApprovalsAndChallengesOnlyWhileItIsActive() {
        let plan = WritePlan.revokeDevice(id: "d1", userID: "alice", at: at, audit: event(.deviceRevoked))
        #expect(plan.guards == [.activeDevice(id: "d1", userID: "alice")])
        #expect(
            plan.mutations == [
                .revokeDevice(id: "d1", at: at), .withdrawApprovals(.ofDevice(id: "d1", userID: "alice")),
                .revokeSessions(.openedBy(deviceID: "d1", userID: "alice"), at: at),
                .deleteChallenges(.ofDevice(id: "d1", userID: "alice")),
                .appendAudit(event(.deviceRevoked)),
            ])
        #expect(
            plan.publishing(AuditKind.deliveredEvents).mutations.suffix(2) == [
                .appendAudit(event(.deviceRevoked)), .enqueueEvent(event(.deviceRevoked).delivered),
            ], "published, the revocation is delivered in the same transaction")
    }

    @Test func aReplacedKeyTakesTheSameSessionsAndApprovalsAsARevocation() {
        let replaced = WritePlan.replacedKey(deviceID: "d1", userID: "alice", at: at).mutations
        let revoked = WritePlan.revokeDevice(id: "d1", userID: "alice", at: at, audit: event(.deviceRevoked)).mutations
        #expect(
            replaced == [
                .withdrawApprovals(.ofDevice(id: "d1", userID: "alice")),
                .revokeSessions(.openedBy(deviceID: "d1", userID: "alice"), at: at),
                .deleteChallenges(.ofDevice(id: "d1", userID: "alice")),
            ], "issue 42: a step-up challenge issued to the old key dies with it")
        #expect(replaced.allSatisfy(revoked.contains))
    }

    @Test func endingSessionsWithdrawsTheApprovalsTheyObtained() {
        let one = WritePlan.revokeSession(id: "s1", userID: "alice", at: at, audit: event(.sessionRevoked))
        #expect(one.guards == [.activeSession(id: "s1", userID: "alice")])
        #expect(
            one.mutations == [
                .withdrawApprovals(.obtainedBy(sessionID: "s1")), .revokeSessions(.one(id: "s1", userID: "alice"), at: at),
                .appendAudit(event(.sessionRevoked)),
            ], "revoking one session is audited (a regression of the plan refactor dropped its row)")
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
            #expect(plan.mutations == [.appendAudit(event(kind))], "an unpublished plan queues nothing: \(kind)")
            let delivered = AuditKind.deliveredEvents.contains(kind)
            #expect(
                plan.publishing([kind]).mutations
                    == [.appendAudit(event(kind))] + (delivered ? [.enqueueEvent(event(kind).delivered)] : []), "\(kind)")
        }
        #expect(AuditKind.deliveredEvents.contains(AuditKind.deviceRevoked))
        #expect(!AuditKind.deliveredEvents.contains(AuditKind.loginFailed))
    }

    @Test func onlyAPlanThatWritesNothingButChallengesIsEphemeral() {
        let challenge = ChallengeRecord(
            id: ChallengeID(bytes: Data(repeating: 1, count: 16)), binding: .login, relyingPartyID: "rp", userID: "alice", deviceID: "d1",
            nonce: Data(repeating: 2, count: 32),
            createdAt: at, expiresAt: at)
        let lockout = LockoutQuery(windowStart: at, client: "c", clientLimit: 3)
        #expect(WritePlan.issueChallenge(challenge, lockout: lockout).isEphemeral)
        var mixed = WritePlan.issueChallenge(challenge, lockout: lockout)
        mixed.audit(event(.loginFailed))
        #expect(!mixed.isEphemeral)
        #expect(!WritePlan().isEphemeral)
    }

    @Test func aPlanPublishesOnlyTheKindsDelivered() {
        var plan = WritePlan()
        plan.require(.activeDevice(id: "d1", userID: "alice"))
        plan.audit(event(.loginSucceeded))
        plan.audit(event(.deviceRevoked))
        let published = plan.publishing([.deviceRevoked])
        #expect(published.guards == plan.guards)
        #expect(
            published.mutations == [
                .appendAudit(event(.loginSucceeded)), .appendAudit(event(.deviceRevoked)), .enqueueEvent(event(.deviceRevoked).delivered),
            ])
        #expect(plan.publishing([]).mutations == [.appendAudit(event(.loginSucceeded)), .appendAudit(event(.deviceRevoked))])
        #expect(published.publishing([.deviceRevoked]) == published, "publishing twice queues each event once")
        #expect(published.publishing([]) == plan.publishing([]), "and the last publication decides")
        #expect(DeliveryPolicy().deliveredEvents == AuditKind.securityEvents)
        #expect(DeliveryPolicy(optionalEvents: [.lockout]).deliveredEvents == AuditKind.securityEvents.union([.lockout]))
    }

    @Test func aDeviceLoginMarksItsDeviceUsedAndAPrimaryLoginTouchesNoDevice() throws {
        let device = SessionRecord(
            id: "s1", tokenHash: TokenHash(digest: Data([1])), userID: "alice", deviceID: "d1", kind: .device, createdAt: at, expiresAt: at)
        #expect(WritePlan.login(device, audit: event(.loginSucceeded)).mutations.first == .insertSession(device, touchingDevice: "d1"))
        var grant = device
        grant.kind = .enrolmentGrant
        #expect(WritePlan.login(grant, audit: event(.loginSucceeded)).mutations.first == .insertSession(grant, touchingDevice: nil))
        let password = WritePlan.login(
            grant, from: "c1", clearing: [.password("alice", client: "c1")], audit: event(.passwordLoginSucceeded))
        #expect(password.mutations.contains(.clearFailures([.password("alice", client: "c1")])))
        #expect(password.mutations.contains(.rememberClient(userID: "alice", client: "c1", at: at)), "the address becomes known")
        #expect(
            !WritePlan.login(device, audit: event(.loginSucceeded)).mutations.contains {
                if case .clearFailures = $0 { true } else { false }
            })
    }

    @Test func aReEnrolmentNeedsTheActiveDeviceAndWithdrawsWhatTheOldKeyOpened() {
        let device = DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([7]), createdAt: at)
        let rekey = WritePlan.enrolment(device, replacing: .approval, approvedRequest: "r1", audit: event(.deviceReenrolled))
        #expect(rekey.guards == [.approvedEnrolmentRequest(id: "r1"), .activeDevice(id: "d1", userID: "alice")])
        #expect(
            Array(rekey.mutations.prefix(4)) == [
                .deleteEnrolmentRequest(id: "r1"),
                .replaceDeviceKey(id: "d1", publicKey: Data([7]), attestation: nil, at: at, how: .approval),
                .withdrawApprovals(.ofDevice(id: "d1", userID: "alice")),
                .revokeSessions(.openedBy(deviceID: "d1", userID: "alice"), at: at),
            ])
        let first = WritePlan.enrolment(device, replacing: nil, approvedRequest: nil, audit: event(.deviceEnrolled))
        #expect(first.guards.isEmpty)
        #expect(first.mutations.first == .insertDevice(device))
    }

    @Test func aFailureBecomesLockoutEventsExactlyWhenACounterReachesItsLimit() {
        let lockout = LockoutQuery(windowStart: at, client: "c1", clientLimit: 3)
        let failure = FailureRecord(.badSignature, lockout: lockout, audit: event(.loginFailed))
        #expect(WritePlan.failure(failure).mutations == [.countFailure(failure)])
        let below = failure.consequences(ofCounts: [.client("c1"): 2])
        #expect(below.locked.isEmpty)
        #expect(below.plan.mutations == [.appendAudit(event(.loginFailed))])
        let reached = failure.consequences(ofCounts: [.client("c1"): 3])
        #expect(reached.locked == [.client("c1")])
        let lockoutEvent = failure.lockoutEvent(.client("c1"))
        #expect(
            reached.plan.mutations == [.appendAudit(event(.loginFailed)), .appendAudit(lockoutEvent)],
            "a deployment that does not deliver lockouts pays no outbox row for one (anyone can cause them)")
        guard case .countFailure(let published) = WritePlan.failure(failure).publishing([.lockout]).mutations.first else {
            Issue.record("a published failure is still counted")
            return
        }
        #expect(
            published.consequences(ofCounts: [.client("c1"): 3]).plan.mutations == [
                .appendAudit(event(.loginFailed)), .appendAudit(lockoutEvent), .enqueueEvent(lockoutEvent.delivered),
            ])
        #expect(failure.consequences(ofCounts: [.client("c1"): 4]).locked.isEmpty, "only the failure that reaches the limit reports it")
    }
}
