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

/// Requests per client address per window, counted in this process only.
///
/// A pure request-rate limit protects this instance's CPU; it decides nothing about security, so
/// it costs no database write. With N instances behind a load balancer a client may send up to
/// N × ``RateLimitPolicy/requestsPerClient`` per window. Failure counters and lockouts, which do
/// decide, live in the store and are shared by every instance.
final class RequestLimiter: Sendable {
    private let windows: RateWindows
    private let limit: Int
    private let state = Mutex<(window: Date, counts: [String: Int])>((Date.distantPast, [:]))

    /// `limit` per window; ``RateLimitPolicy/requestsPerClient`` when nil.
    init(windows: RateWindows, limit: Int? = nil) {
        self.windows = windows
        self.limit = limit ?? windows.policy.requestsPerClient
    }

    /// Counts a request of `client` (``RequestInfo/requestSubject``: an IPv4 address or an IPv6
    /// /64); returns the seconds to wait when the client is over its limit.
    func admit(_ client: String, at now: Date) -> Int? {
        let count = state.withLock { state in
            reset(&state, now)
            state.counts[client, default: 0] += 1
            return state.counts[client, default: 0]
        }
        return count > limit ? windows.retryAfter(now) : nil
    }

    /// The seconds to wait if `client` is already over its limit, counting nothing.
    func refusal(_ client: String, at now: Date) -> Int? {
        let count = state.withLock { state in
            reset(&state, now)
            return state.counts[client, default: 0]
        }
        return count >= limit ? windows.retryAfter(now) : nil
    }

    private func reset(_ state: inout (window: Date, counts: [String: Int]), _ now: Date) {
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
