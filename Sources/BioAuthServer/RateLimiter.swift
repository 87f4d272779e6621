import BioAuthCore
import Foundation

/// Fixed-window counters in the store: request rates per client address, and failure counts per
/// user, device and client address that lock out for the rest of the window once reached.
struct RateLimiter: Sendable {
    let store: any BioAuthStore
    let policy: RateLimitPolicy
    let clock: any WallClock

    private func windowStart(_ now: Date) -> Date {
        Date(timeIntervalSince1970: (now.timeIntervalSince1970 / policy.window).rounded(.down) * policy.window)
    }

    private func retryAfter(_ now: Date) -> Int {
        max(1, Int((windowStart(now).timeIntervalSince1970 + policy.window - now.timeIntervalSince1970).rounded(.up)))
    }

    /// Counts a request from `client`; throws `rateLimited` past the limit.
    func admit(_ client: String) async throws -> ServerError? {
        let now = clock.now()
        let count = try await store.incrementCounter(key: "req:client:" + client, windowStart: windowStart(now))
        return count > policy.requestsPerClient ? ServerError(.rateLimited, retryAfter: retryAfter(now)) : nil
    }

    /// The lockout in force for any of these subjects, if one is.
    func lockout(user: String?, device: String?, client: String) async throws -> ServerError? {
        let now = clock.now()
        let window = windowStart(now)
        for (key, limit) in keys(user: user, device: device, client: client) {
            if try await store.counter(key: key, windowStart: window) >= limit {
                return ServerError(.rateLimited, retryAfter: retryAfter(now))
            }
        }
        return nil
    }

    /// Counts a failure; returns the subjects that just reached their limit.
    func recordFailure(user: String?, device: String?, client: String) async throws -> [String] {
        let window = windowStart(clock.now())
        var locked: [String] = []
        for (key, limit) in keys(user: user, device: device, client: client) {
            if try await store.incrementCounter(key: key, windowStart: window) == limit { locked.append(key) }
        }
        return locked
    }

    /// Clears the user's and device's failure counts after a success.
    func recordSuccess(user: String, device: String?) async throws {
        try await store.resetCounter(key: "fail:user:" + user)
        if let device { try await store.resetCounter(key: "fail:device:" + device) }
    }

    private func keys(user: String?, device: String?, client: String) -> [(String, Int)] {
        var keys: [(String, Int)] = [("fail:client:" + client, policy.failuresPerClient)]
        if let user { keys.append(("fail:user:" + user, policy.failuresPerUser)) }
        if let device { keys.append(("fail:device:" + device, policy.failuresPerDevice)) }
        return keys
    }
}
