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
/// logins run on, so a flood of guesses slows only password requests. Each request waits in the
/// lane of what it can be (``PasswordHashLane``): a lane with every place taken answers 503 with
/// `Retry-After`, and a free thread serves the proven lane first.
public struct PasswordHashingPolicy: Sendable, Hashable {
    /// Threads that hash passwords; nothing else runs on them. Default: half the cores, at least
    /// one, so hashing can never take every core from device logins.
    public var threads: Int
    /// Password requests of one lane that may wait for a thread; the anonymous lane has a quarter
    /// of it. Default: 8 per thread — at OWASP's 600 000 rounds, about 1.2 s of waiting on this
    /// project's benchmark machine (0.15 s per hash).
    public var queueLimit: Int

    public init(threads: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2), queueLimit: Int? = nil) {
        self.threads = max(1, threads)
        self.queueLimit = max(0, queueLimit ?? 8 * self.threads)
    }

    /// Requests of `lane` that may hold a place at once: hashing or waiting.
    public func places(_ lane: PasswordHashLane) -> Int {
        switch lane {
        case .proven, .existingUser: threads + queueLimit
        case .anonymous: threads + queueLimit / 4
        }
    }
}

/// What a password request can be, decided before its hash: the lane it waits in. Hashing capacity
/// goes to attempts that can succeed, so a flood of guesses from strangers' addresses never takes
/// the owner's place.
public enum PasswordHashLane: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// An existing user's attempt from an address the user signed in from (or one a backend
    /// vouched for), one that carries a second proof, or a signed-in user's new password: served first.
    case proven
    /// An existing user's attempt from an address the user never signed in from.
    case existingUser
    /// A username nobody has, and sign-ups: the smallest lane, served after the others (one in four
    /// hashes when both wait).
    case anonymous

    public var description: String {
        switch self {
        case .proven: "proven"
        case .existingUser: "existingUser"
        case .anonymous: "anonymous"
        }
    }
}

/// The threads of ``PasswordHashingPolicy``, with a bounded number of places per lane: a password
/// request takes a place in its lane (``reserve(_:)``), hashes on one of the threads, and gives the
/// place back when it ends. The proven lane has threads of its own at normal priority — a flood of
/// cheap requests that keeps every core busy cannot starve the owner's hash — and the other lanes
/// share threads at the lowest priority, three of the existing-user lane's hashes for one of the
/// anonymous lane's. Threads start when work arrives and end after ten idle seconds.
package final class PasswordHashPool: @unchecked Sendable {
    /// Derives the hash of a password: PBKDF2-HMAC-SHA256 (``SlowHash``), or a test's stand-in.
    package typealias Derive = @Sendable (_ password: String, _ salt: Data, _ rounds: Int) throws -> Data

    private let policy: PasswordHashingPolicy
    private let derive: Derive
    private let idleExit: TimeInterval
    private let promoteAfter: TimeInterval
    /// Guards every variable below; idle threads wait on it.
    private let condition = NSCondition()
    private var places: [PasswordHashLane: Int] = [:]
    private var jobs: [PasswordHashLane: [@Sendable () -> Void]] = [:]
    /// Hashes taken from the existing-user lane since the anonymous lane's last one.
    private var existingUserRun = 0
    private var threads: [Crew: Int] = [:]
    private var idleThreads: [Crew: Int] = [:]

    /// Who hashes a lane's passwords: the proven lane's own threads, or the shared background ones.
    private enum Crew: Hashable {
        case proven, background
        init(_ lane: PasswordHashLane) { self = lane == .proven ? .proven : .background }
    }
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

    /// A place for one password request in `lane`, or nil when ``PasswordHashingPolicy/places(_:)`` requests hold one.
    package func reserve(_ lane: PasswordHashLane) -> Place? {
        condition.lock()
        defer { condition.unlock() }
        guard places[lane, default: 0] < policy.places(lane) else { return nil }
        places[lane, default: 0] += 1
        return Place(pool: self, lane: lane)
    }

    /// True if `lane` has a free place now (a hint: another request may take it first).
    package func hasRoom(_ lane: PasswordHashLane) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return places[lane, default: 0] < policy.places(lane)
    }

    /// Whole seconds, at least 1, until the requests holding places in `lane` and the lanes served
    /// before it have been hashed, at the average hash duration seen so far.
    package func retryAfter(_ lane: PasswordHashLane) -> Int {
        condition.lock()
        defer { condition.unlock() }
        let ahead = PasswordHashLane.allCases.filter { $0.rawValue <= lane.rawValue }.reduce(0) { $0 + places[$1, default: 0] }
        let seconds = Double(ahead) * max(secondsPerHash, 0.1) / Double(policy.threads)
        return max(1, min(60, Int(seconds.rounded(.up))))
    }

    /// Threads running now (idle ones included); for tests.
    package var runningThreads: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads.values.reduce(0, +)
    }

    /// A password request's place in the pool; given back when it goes out of scope.
    package struct Place: ~Copyable, Sendable {
        fileprivate let pool: PasswordHashPool
        package let lane: PasswordHashLane

        /// The password's hash, derived on one of the pool's threads.
        package func derive(_ password: String, salt: Data, rounds: Int) async throws -> Data {
            try await pool.run(password, salt: salt, rounds: rounds, lane: lane)
        }

        deinit { pool.release(lane) }
    }

    private func release(_ lane: PasswordHashLane) {
        condition.lock()
        places[lane, default: 0] -= 1
        condition.unlock()
    }

    private func run(_ password: String, salt: Data, rounds: Int, lane: PasswordHashLane) async throws -> Data {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            let derive = derive
            enqueue(lane) { [self] in
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

    private func enqueue(_ lane: PasswordHashLane, _ job: @escaping @Sendable () -> Void) {
        let crew = Crew(lane)
        condition.lock()
        jobs[lane, default: []].append(job)
        let startThread = waitingJobs(crew) > idleThreads[crew, default: 0] && threads[crew, default: 0] < policy.threads
        if startThread { threads[crew, default: 0] += 1 }
        condition.broadcast()
        condition.unlock()
        if startThread {
            Thread { [self] in work(crew) }.start()
        }
    }

    private func waitingJobs(_ crew: Crew) -> Int {
        switch crew {
        case .proven: jobs[.proven]?.count ?? 0
        case .background: (jobs[.existingUser]?.count ?? 0) + (jobs[.anonymous]?.count ?? 0)
        }
    }

    /// The next job for `crew`, under the lock: the proven lane's; else three of the existing-user
    /// lane's for each of the anonymous lane's, so neither starves the other.
    private func nextJob(_ crew: Crew) -> (@Sendable () -> Void)? {
        if crew == .proven { return jobs[.proven]?.isEmpty == false ? jobs[.proven]!.removeFirst() : nil }
        let existing = jobs[.existingUser]?.isEmpty == false
        let anonymous = jobs[.anonymous]?.isEmpty == false
        if existing && (!anonymous || existingUserRun < 3) {
            existingUserRun += 1
            return jobs[.existingUser]!.removeFirst()
        }
        guard anonymous else { return nil }
        existingUserRun = 0
        return jobs[.anonymous]!.removeFirst()
    }

    /// The name of the pool's threads in `top -H`, debuggers and crash reports (15 bytes at most on Linux).
    package static let threadName = "bioauth-pbkdf2"

    private func work(_ crew: Crew) {
        let worker = Worker(background: crew == .background)
        condition.lock()
        while true {
            let idleSince = Date()
            while waitingJobs(crew) == 0 {
                idleThreads[crew, default: 0] += 1
                _ = condition.wait(until: idleSince.addingTimeInterval(idleExit))
                idleThreads[crew, default: 0] -= 1
                if waitingJobs(crew) == 0, Date() >= idleSince.addingTimeInterval(idleExit) {
                    threads[crew, default: 0] -= 1
                    condition.unlock()
                    return
                }
            }
            guard let job = nextJob(crew) else { continue }
            condition.unlock()
            worker.run(job, promotedAfter: promoteAfter)
            condition.lock()
        }
    }

    /// A hashing thread's scheduling. A background hash (the existing-user and anonymous lanes)
    /// starts at the lowest priority, so a device login never waits for it; one still running
    /// after `promotedAfter` — the machine is busy with other work — is promoted, so it still
    /// finishes. A proven hash runs at normal priority: measured beside a flood of guesses that
    /// kept both cores busy, the owner's hash at the lowest priority waited for its promotion
    /// (p99 5.6 s against 0.13 s without the flood; docs/Performance.md).
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
        private let background: Bool
        #if os(Linux)
            private let thread = pthread_self()
        #endif

        init(background: Bool) {
            self.background = background
            #if os(Linux)
                // pthread_setname_np is hidden behind _GNU_SOURCE too; the kernel's file is the same call.
                try? Data(PasswordHashPool.threadName.utf8).write(to: URL(fileURLWithPath: "/proc/thread-self/comm"))
                // The nice value a promoted hash runs at (per thread under NPTL: setpriority(2), NOTES).
                if background { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
            #else
                Thread.current.name = PasswordHashPool.threadName
                Thread.current.qualityOfService = background ? .utility : .userInitiated
            #endif
        }

        func run(_ job: () -> Void, promotedAfter delay: TimeInterval) {
            guard background else { return job() }
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
