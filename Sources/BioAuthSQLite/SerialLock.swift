import BioAuthServer
import Synchronization

/// An async lock that admits one holder at a time, in arrival order. It serialises transactions
/// on the store's single SQLite connection, across suspension points (which an actor would not).
final class SerialLock: Sendable {
    private let state = Mutex<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// True while someone is queued for the lock: the holder can leave work for them to finish.
    var hasWaiters: Bool { state.withLock { !$0.waiters.isEmpty } }

    func withLock<T>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                if state.held {
                    state.waiters.append(continuation)
                    return false
                }
                state.held = true
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    /// Hands the lock to the next waiter, or frees it.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

/// The outcome of one group commit, awaited by every transaction in the group. Resolved once.
final class CommitTicket: Sendable {
    private let state = Mutex<(outcome: Result<Void, StoreError>?, waiters: [CheckedContinuation<Void, any Error>])>((nil, []))

    func resolve(_ outcome: Result<Void, StoreError>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard case .none = state.outcome else { return [] }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: outcome.mapError { $0 }) }
    }

    /// Returns when the group committed; throws if it did not.
    func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome = state.withLock { state -> Result<Void, StoreError>? in
                if case .none = state.outcome { state.waiters.append(continuation) }
                return state.outcome
            }
            if let outcome { continuation.resume(with: outcome.mapError { $0 }) }
        }
    }
}
