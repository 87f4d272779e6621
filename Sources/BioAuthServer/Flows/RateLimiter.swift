import BioAuthCore
import Foundation
import Synchronization

/// Fixed windows of ``RateLimitPolicy/window`` seconds, shared by the request limiter and the
/// failure counters.
struct RateWindows: Sendable {
    let policy: RateLimitPolicy

    func windowStart(_ now: Date) -> Date {
        Date(timeIntervalSince1970: (now.timeIntervalSince1970 / policy.window).rounded(.down) * policy.window)
    }

    /// Seconds until the current window ends (at least 1).
    func retryAfter(_ now: Date) -> Int {
        max(1, Int((windowStart(now).timeIntervalSince1970 + policy.window - now.timeIntervalSince1970).rounded(.up)))
    }

    /// When the current window ends.
    func windowEnd(_ now: Date) -> Date { windowStart(now).addingTimeInterval(policy.window) }

    /// The failure limit in force for a guessing factor (a password, a primary login) from
    /// `client` at `now`: such failures count against the sending address, and a wrong password
    /// also against the user from that address (``RateLimitPolicy/passwordFailuresPerClient``)
    /// and the user's run.
    func lockout(client: String, at now: Date) -> LockoutQuery {
        LockoutQuery(windowStart: windowStart(now), client: client, clientLimit: policy.failuresPerClient)
    }

    /// The failure limit for a device proof — a signature over a challenge, or an attestation —
    /// from `client`: none. A forged signature cannot succeed by repetition, so it is no guessing
    /// factor: it counts against nobody (``FailureRecord/init(unguessable:lockout:audit:)``), and a
    /// valid signature gets through whatever other failures the address (a NAT, a /48 shared
    /// with strangers) has. The request limit throttles whoever sends forgeries.
    func deviceProof(client: String, at now: Date) -> LockoutQuery {
        LockoutQuery(windowStart: windowStart(now), client: client, clientLimit: .max)
    }
}

/// Requests per subject (a client's IPv4 address or IPv6 /64, or a user's failed redemptions) per
/// window, shared by every instance through the store's counters.
///
/// Each instance counts in memory and adds what it counted to the subject's counter in the store
/// (``FailureSubject/requests(_:)``) when it has counted ``batch`` since it last did, or a second
/// has passed; the store answers with the total of every instance, which the next decision
/// starts from. A request costs no database write of its own, and N instances behind a load
/// balancer allow at most the limit plus what the other instances counted and have not added
/// yet: (N − 1) × ``batch`` (a twentieth of the limit each) within a second. A store that cannot
/// be reached leaves each instance counting alone until it can.
final class RequestLimiter: Sendable {
    private struct Entry {
        /// The store's total at the last exchange, every instance's requests included.
        var known = 0
        /// Requests counted here since then.
        var pending = 0
        var exchangedAt: Date
        var exchanging = false
    }

    private let windows: RateWindows
    private let limit: Int
    private let writer: PlanWriter?
    private let subject: @Sendable (String) -> FailureSubject
    /// Requests an instance counts before it adds them to the store's counter.
    let batch: Int
    /// The longest an instance keeps a subject's count to itself.
    static let exchangeInterval: TimeInterval = 1
    private let state = Mutex<(window: Date, entries: [String: Entry])>((Date.distantPast, [:]))

    /// `limit` per window (``RateLimitPolicy/requestsPerClient`` when nil), shared through `writer`
    /// under `subject`'s counter (per instance without a store).
    init(
        windows: RateWindows, limit: Int? = nil, writer: PlanWriter? = nil,
        subject: @escaping @Sendable (String) -> FailureSubject = { .requests($0) }
    ) {
        self.windows = windows
        self.limit = limit ?? windows.policy.requestsPerClient
        self.writer = writer
        self.subject = subject
        batch = max(1, self.limit / 20)
    }

    /// Counts a request of `client` (as `weight` requests); returns the seconds to wait when the
    /// client is over its limit.
    func admit(_ client: String, at now: Date, weight: Int = 1) async -> Int? {
        let due = state.withLock { state in
            reset(&state, now)
            // A client seen for the first time is counted here for up to a second or a batch: a
            // botnet's one-off addresses cost no database write each.
            state.entries[client, default: Entry(exchangedAt: now)].pending += weight
            return isDue(state.entries[client]!, now)
        }
        if due { await exchange(client, at: now) }
        return count(client, now) > limit ? windows.retryAfter(now) : nil
    }

    /// The seconds to wait if `client` is already over its limit, counting nothing.
    func refusal(_ client: String, at now: Date) async -> Int? {
        let due = state.withLock { state in
            reset(&state, now)
            // A subject this instance has not seen yet: what the others counted is read first.
            return isDue(state.entries[client] ?? Entry(exchangedAt: .distantPast), now)
        }
        if due { await exchange(client, at: now) }
        return count(client, now) >= limit ? windows.retryAfter(now) : nil
    }

    private func count(_ client: String, _ now: Date) -> Int {
        state.withLock { state in
            reset(&state, now)
            return state.entries[client].map { $0.known + $0.pending } ?? 0
        }
    }

    private func isDue(_ entry: Entry, _ now: Date) -> Bool {
        writer != nil && !entry.exchanging && (entry.pending >= batch || now.timeIntervalSince(entry.exchangedAt) >= Self.exchangeInterval)
    }

    /// Adds this instance's pending count to the store's counter and takes its total.
    private func exchange(_ client: String, at now: Date) async {
        guard let writer else { return }
        let window = windows.windowStart(now)
        let delta = state.withLock { state -> Int in
            state.entries[client, default: Entry(exchangedAt: now)].exchanging = true
            defer { state.entries[client]!.pending = 0 }
            return state.entries[client]!.pending
        }
        let subject = subject(client)
        let total = try? await writer.decide(locking: RowLocks(counters: [subject])) { rows -> (verdict: Int, plan: WritePlan) in
            let stored = rows.counters[subject].flatMap { $0.since == window ? $0.count : nil } ?? 0
            var plan = WritePlan()
            if delta > 0 { plan.add(.setCounter(subject, FailureCounter(since: window, count: stored + delta))) }
            return (stored + delta, plan)
        }.verdict
        state.withLock { state in
            guard state.window == window, var entry = state.entries[client] else { return }
            entry.exchanging = false
            entry.exchangedAt = now
            if let total { entry.known = total } else { entry.pending += delta }  // unreachable: keep counting here
            state.entries[client] = entry
        }
    }

    private func reset(_ state: inout (window: Date, entries: [String: Entry]), _ now: Date) {
        let window = windows.windowStart(now)
        if state.window != window { state = (window, [:]) }  // a new window forgets every client
    }
}

/// Requests per backend API key: a token bucket of ``RateLimitPolicy/apiKeyRequestsPerSecond``
/// and ``RateLimitPolicy/apiKeyBurst``, counted in this process only (keys are few: one entry
/// each).
final class ApiKeyLimiter: Sendable {
    private let rate: Double
    private let burst: Double
    private let buckets = Mutex<[ApiKeyID: (tokens: Double, at: Date)]>([:])

    init(policy: RateLimitPolicy) {
        rate = max(policy.apiKeyRequestsPerSecond, 0.001)
        burst = Double(max(policy.apiKeyBurst, 1))
    }

    /// Takes one request from `key`'s bucket; returns the whole seconds to wait when it is empty.
    func admit(_ key: ApiKeyID, at now: Date) -> Int? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? (burst, now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * rate)
            bucket.at = now
            defer { buckets[key] = bucket }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }
}
