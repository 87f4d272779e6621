import BioAuthServer
import Synchronization

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
