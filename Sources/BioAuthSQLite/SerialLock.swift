import Synchronization

/// An async lock that admits one holder at a time, in arrival order. It serialises transactions
/// on the store's single SQLite connection, across suspension points (which an actor would not).
final class SerialLock: Sendable {
    private let state = Mutex<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

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
