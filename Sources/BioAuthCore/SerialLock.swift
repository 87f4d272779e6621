import Synchronization

/// An async lock that admits one holder at a time, in arrival order, across suspension points
/// (which an actor alone does not): the SQLite store's transactions on its one connection, and
/// `AppLock`'s read-modify-write of the passcode and vault key.
package final class SerialLock: Sendable {
    private let state = Mutex<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// True while someone is queued for the lock: the holder can leave work for them to finish.
    package var hasWaiters: Bool { state.withLock { !$0.waiters.isEmpty } }

    package init() {}

    package func withLock<T, E: Error>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws(E) -> T) async throws(E) -> T
    {
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
