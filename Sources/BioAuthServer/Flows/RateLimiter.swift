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

    /// Which factor a request proves; each has its own failure counters.
    enum Factor {
        /// The demo password: counted per user and per client address.
        case password
        /// A device signature: counted per client address only. Nobody can forge one, so failures
        /// say nothing against the device or its owner, and counting them there would let anyone
        /// who knows a device id lock its owner out.
        case signature
    }

    /// The failure limits in force for a request from `client` at `now`.
    func lockout(client: String, at now: Date, factor: Factor) -> LockoutQuery {
        LockoutQuery(
            windowStart: windowStart(now), client: client, clientLimit: policy.failuresPerClient,
            passwordLimit: factor == .password ? policy.failuresPerUser : nil)
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
    private let state = Mutex<(window: Date, counts: [String: Int])>((Date.distantPast, [:]))

    init(windows: RateWindows) { self.windows = windows }

    /// Counts a request; returns the seconds to wait when the client is over its limit.
    func admit(_ client: String, at now: Date) -> Int? {
        let window = windows.windowStart(now)
        let count = state.withLock { state in
            if state.window != window { state = (window, [:]) }  // a new window forgets every client
            state.counts[client, default: 0] += 1
            return state.counts[client, default: 0]
        }
        return count > windows.policy.requestsPerClient ? windows.retryAfter(now) : nil
    }
}
