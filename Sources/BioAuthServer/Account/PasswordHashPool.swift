import BioAuthCore
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How much password hashing (PBKDF2, ``ServerConfiguration/passwordRounds``) one instance does
/// at once, and how many password requests it lets wait.
///
/// Password requests hash on threads of their own, never on the cooperative pool that device
/// logins run on, so a flood of guesses slows only password requests. A request that finds every
/// thread busy and `queueLimit` requests already waiting is answered 503 with `Retry-After` before
/// anything is counted or hashed.
public struct PasswordHashingPolicy: Sendable, Hashable {
    /// Threads that hash passwords; nothing else runs on them. Default: half the cores, at least
    /// one, so hashing can never take every core from device logins.
    public var threads: Int
    /// Password requests that may wait for a thread. Default: 8 per thread — at OWASP's 600 000
    /// rounds, about 1.2 s of waiting on this project's benchmark machine (0.15 s per hash).
    public var queueLimit: Int

    public init(threads: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2), queueLimit: Int? = nil) {
        self.threads = max(1, threads)
        self.queueLimit = max(0, queueLimit ?? 8 * self.threads)
    }
}

/// The threads of ``PasswordHashingPolicy``, with a bounded number of places: a password request
/// takes a place before it is counted (``reserve()``), hashes on one of the threads, and gives the
/// place back when it ends. Threads start when work arrives and end after ten idle seconds.
package final class PasswordHashPool: @unchecked Sendable {
    /// Derives the hash of a password: PBKDF2-HMAC-SHA256 (``SlowHash``), or a test's stand-in.
    package typealias Derive = @Sendable (_ password: String, _ salt: Data, _ rounds: Int) throws -> Data

    private let policy: PasswordHashingPolicy
    private let derive: Derive
    private let idleExit: TimeInterval
    private let promoteAfter: TimeInterval
    /// Guards every variable below; idle threads wait on it.
    private let condition = NSCondition()
    private var places = 0
    private var jobs: [@Sendable () -> Void] = []
    private var threads = 0
    private var idleThreads = 0
    /// Moving average of one hash's duration, for `Retry-After`.
    private var secondsPerHash = 0.0

    package init(
        policy: PasswordHashingPolicy, idleExit: TimeInterval = 10, promoteAfter: TimeInterval = 5,
        derive: @escaping Derive = { try SlowHash.derive($0, salt: $1, rounds: $2) }
    ) {
        self.policy = policy
        self.idleExit = idleExit
        self.promoteAfter = promoteAfter
        self.derive = derive
    }

    /// A place for one password request, or nil when `threads + queueLimit` requests hold one.
    package func reserve() -> Place? {
        condition.lock()
        defer { condition.unlock() }
        guard places < policy.threads + policy.queueLimit else { return nil }
        places += 1
        return Place(pool: self)
    }

    /// Whole seconds, at least 1, until the requests holding places now have been hashed, at the
    /// average hash duration seen so far.
    package var retryAfter: Int {
        condition.lock()
        defer { condition.unlock() }
        let seconds = Double(places) * max(secondsPerHash, 0.1) / Double(policy.threads)
        return max(1, min(60, Int(seconds.rounded(.up))))
    }

    /// Threads running now (idle ones included); for tests.
    package var runningThreads: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads
    }

    /// A password request's place in the pool; given back when it goes out of scope.
    package struct Place: ~Copyable, Sendable {
        fileprivate let pool: PasswordHashPool

        /// The password's hash, derived on one of the pool's threads.
        package func derive(_ password: String, salt: Data, rounds: Int) async throws -> Data {
            try await pool.run(password, salt: salt, rounds: rounds)
        }

        deinit { pool.release() }
    }

    private func release() {
        condition.lock()
        places -= 1
        condition.unlock()
    }

    private func run(_ password: String, salt: Data, rounds: Int) async throws -> Data {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            let derive = derive
            enqueue { [self] in
                let start = ContinuousClock.now
                let result = Result { try derive(password, salt, rounds) }
                let elapsed = start.duration(to: .now)
                record(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                continuation.resume(with: result)
            }
        }
    }

    private func record(_ seconds: Double) {
        condition.lock()
        secondsPerHash = secondsPerHash == 0 ? seconds : 0.8 * secondsPerHash + 0.2 * seconds
        condition.unlock()
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        let startThread = jobs.count > idleThreads && threads < policy.threads
        if startThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startThread {
            Thread { [self] in work() }.start()
        }
    }

    /// The name of the pool's threads in `top -H`, debuggers and crash reports (15 bytes at most on Linux).
    package static let threadName = "bioauth-pbkdf2"

    private func work() {
        let worker = Worker()
        condition.lock()
        while true {
            while jobs.isEmpty {
                idleThreads += 1
                let signalled = condition.wait(until: Date(timeIntervalSinceNow: idleExit))
                idleThreads -= 1
                if !signalled, jobs.isEmpty {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let job = jobs.removeFirst()
            condition.unlock()
            worker.run(job, promotedAfter: promoteAfter)
            condition.lock()
        }
    }

    /// A hashing thread's scheduling. Each hash starts at the lowest priority, so a device login
    /// never waits for it; one still running after `promotedAfter` — the machine is busy with other
    /// work — is promoted, so it still finishes.
    ///
    /// Linux: `SCHED_IDLE` (sched(7): "for running very low priority background jobs"; a thread of
    /// the normal policy that wakes preempts it at once), promoted to `SCHED_OTHER` at nice 19.
    /// `SCHED_IDLE` is 5 in `<bits/sched.h>`, hidden behind `_GNU_SOURCE`. Measured beside a flood
    /// (docs/Performance.md): nice 19 alone made device-login p99 5.5× slower, `SCHED_IDLE` alone
    /// 2.2× but starved hashes under a parallel build, this 2.6×. Elsewhere: the utility quality
    /// of service, which does not starve.
    private final class Worker: Sendable {
        /// Moves at every start and every end of a hash: a promotion due for one hash finds it moved
        /// if that hash has ended.
        private let generation = Atomic<UInt64>(0)
        #if os(Linux)
            private let thread = pthread_self()
        #endif

        init() {
            #if os(Linux)
                // pthread_setname_np is hidden behind _GNU_SOURCE too; the kernel's file is the same call.
                try? Data(PasswordHashPool.threadName.utf8).write(to: URL(fileURLWithPath: "/proc/thread-self/comm"))
                // The nice value a promoted hash runs at (per thread under NPTL: setpriority(2), NOTES).
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
            #else
                Thread.current.name = PasswordHashPool.threadName
                Thread.current.qualityOfService = .utility
            #endif
        }

        func run(_ job: () -> Void, promotedAfter delay: TimeInterval) {
            #if os(Linux)
                let started = generation.add(1, ordering: .sequentiallyConsistent).newValue
                schedule(idle: true)
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                    if generation.load(ordering: .sequentiallyConsistent) == started { schedule(idle: false) }
                }
                job()
                _ = generation.add(1, ordering: .sequentiallyConsistent)
            #else
                job()
            #endif
        }

        #if os(Linux)
            private func schedule(idle: Bool) {
                var parameters = sched_param()
                _ = pthread_setschedparam(thread, idle ? 5 : SCHED_OTHER, &parameters)
            }
        #endif
    }
}
