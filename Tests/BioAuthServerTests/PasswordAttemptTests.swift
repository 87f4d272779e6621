import BioAuthServer
import Foundation
import Testing
import BioAuthServerTesting

/// The password-attempt rule on its own (``PasswordAttempt/decide(_:user:limits:now:)``): what
/// every store applies, decided once.
@Suite struct PasswordAttemptTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let limits: PasswordAttemptLimits

    init() {
        let lockout = LockoutQuery(windowStart: t0, client: "192.0.2.1", clientLimit: 30)
        limits = PasswordAttemptLimits(
            lockout: lockout, windowEnd: t0.addingTimeInterval(300), passwordsPerClient: 10,
            run: PasswordRunPolicy(threshold: 10, base: 60, cap: 3_600))
    }

    func decide(
        pair: Int = 0, client: Int = 0, run: (count: Int, last: Date)? = nil, known: Bool = false,
        code: (hash: TokenHash, sent: Bool)? = nil,
        at now: Date
    ) -> PasswordAttempt {
        decision(pair: pair, client: client, run: run, known: known, code: code, at: now).verdict
    }

    func decision(
        pair: Int = 0, client: Int = 0, run: (count: Int, last: Date)? = nil, known: Bool = false,
        code: (hash: TokenHash, sent: Bool)? = nil,
        at now: Date
    ) -> (verdict: PasswordAttempt, plan: WritePlan) {
        var counters: [FailureSubject: FailureCounter] = [:]
        var limits = self.limits
        if let code {
            limits.signInCode = code.hash
            if code.sent {
                counters[.signInCode("alice", client: "192.0.2.1", code: code.hash)] = FailureCounter(
                    since: t0.addingTimeInterval(900), count: 0)
            }
        }
        if pair > 0 { counters[.password("alice", client: "192.0.2.1")] = FailureCounter(since: t0, count: pair) }
        if client > 0 { counters[.client("192.0.2.1")] = FailureCounter(since: t0, count: client) }
        if let run { counters[.passwordRun("alice")] = FailureCounter(since: run.last, count: run.count) }
        return PasswordAttempt.decide(
            PasswordAttemptRows(user: nil, counters: counters, knownClient: known), user: "alice", limits: limits, now: now)
    }

    @Test func aCountedAttemptSetsThePairAndTheRunAndNothingElse() {
        let (verdict, plan) = PasswordAttempt.decide(
            PasswordAttemptRows(user: nil, counters: [:], knownClient: false), user: "alice", limits: limits, now: t0.addingTimeInterval(5))
        #expect(verdict.refusedUntil == nil && verdict.reached.isEmpty)
        #expect(
            plan.mutations == [
                .setCounter(.password("alice", client: "192.0.2.1"), FailureCounter(since: t0, count: 1)),
                .setCounter(.passwordRun("alice"), FailureCounter(since: t0.addingTimeInterval(5), count: 1)),
            ])
        #expect(plan.guards.isEmpty)
    }

    @Test func theRetryTimeIsTheRealEndOfTheLongestWait() {
        let now = t0.addingTimeInterval(40)
        #expect(decide(pair: 10, at: now).refusedUntil == t0.addingTimeInterval(300), "the pair's window ends at 300 s")
        #expect(decide(client: 30, at: now).refusedUntil == t0.addingTimeInterval(300), "so does the address's")
        // Fourteen attempts, the last at 30 s: 60 × 2⁴ = 960 s after it, beyond the window's end.
        #expect(decide(pair: 10, run: (14, t0.addingTimeInterval(30)), at: now).refusedUntil == t0.addingTimeInterval(990))
        #expect(decide(run: (10, t0.addingTimeInterval(30)), at: now).refusedUntil == t0.addingTimeInterval(90))
        #expect(decide(run: (40, t0), at: now).refusedUntil == t0.addingTimeInterval(3_600), "the cap")
    }

    @Test func aKnownAddressIsNeverSlowedByTheRunButKeepsItsOwnWindow() {
        let now = t0.addingTimeInterval(40)
        #expect(decide(run: (500, t0), known: true, at: now).refusedUntil == nil)
        #expect(decide(pair: 10, run: (500, t0), known: true, at: now).refusedUntil == t0.addingTimeInterval(300))
    }

    @Test func theRunNeverRefusesForGood() {
        #expect(decide(run: (10_000, t0), at: t0.addingTimeInterval(3_600)).refusedUntil == nil)
    }

    @Test func reachingALimitIsReportedOnce() {
        #expect(decide(pair: 9, at: t0).reached == [.password("alice", client: "192.0.2.1")])
        #expect(decide(run: (9, t0), at: t0).reached == [.passwordRun("alice")])
        #expect(decide(pair: 8, run: (10, t0.addingTimeInterval(-60)), at: t0).reached.isEmpty)
    }

    /// A sign-in code skips the back-off only when it is one sent for this address; a made-up one
    /// is refused while the back-off runs, and otherwise counts against the (user, address)
    /// window but never lengthens the run (40 made-up codes once pushed the owner's wait to 24 h).
    @Test func onlyAMatchingCodeSkipsTheBackOffAndAWrongOneNeverLengthensIt() {
        let now = t0.addingTimeInterval(40), hash = TokenHash(ofText: "code")
        let backingOff = (count: 10, last: t0.addingTimeInterval(30))
        #expect(decide(run: backingOff, code: (hash, sent: true), at: now).refusedUntil == nil, "the code the owner received")
        #expect(decide(run: backingOff, code: (hash, sent: false), at: now).refusedUntil == t0.addingTimeInterval(90), "a made-up one")
        let wrong = decision(run: (count: 3, last: t0), code: (hash, sent: false), at: now)
        #expect(wrong.verdict.rejectedCode && wrong.verdict.refusedUntil == nil)
        #expect(
            wrong.plan.mutations == [.setCounter(.password("alice", client: "192.0.2.1"), FailureCounter(since: t0, count: 1))],
            "the pair counts it, the run does not")
        let right = decision(run: (count: 3, last: t0), code: (hash, sent: true), at: now)
        #expect(!right.verdict.rejectedCode && right.plan.mutations.count == 2)
    }

    /// Thirty wrong passwords from one NAT address (or IPv6 /48) lock strangers there out, not a
    /// user who signed in from it before or carries a code sent for it; their own pair still counts.
    @Test func anAddressLockSparesItsKnownUsers() {
        let now = t0.addingTimeInterval(40)
        #expect(decide(client: 30, at: now).refusedUntil == t0.addingTimeInterval(300), "a stranger behind it waits")
        #expect(decide(client: 30, known: true, at: now).refusedUntil == nil, "a known user gets through")
        #expect(decide(client: 30, code: (TokenHash(ofText: "c"), sent: true), at: now).refusedUntil == nil, "so does a code's")
        #expect(
            decide(pair: 10, client: 30, known: true, at: now).refusedUntil == t0.addingTimeInterval(300), "the pair's own window holds")
    }
}
