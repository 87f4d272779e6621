import BioAuthServer
import Foundation
import Synchronization
// The sqlite3 amalgamation SQLiteNIO vendors (symbols prefixed `sqlite_nio_`). SQLiteNIO runs every
// statement on a thread pool and resumes on the event loop: two thread switches per statement. The
// store needs one per transaction, so it drives sqlite3 itself on one thread of its own.
import VaporCSQLite

/// One SQLite connection owned by one thread, the single writer: every transaction and read of a
/// ``SQLiteStore`` runs there, synchronously, with prepared statements kept for reuse.
///
/// **Group commit.** The thread takes every transaction queued since its last turn (at most
/// ``maxGroupSize``) and runs them in one `BEGIN IMMEDIATE … COMMIT`, each inside its own savepoint,
/// so a failing one rolls back alone. A transaction is acknowledged (its `write` returns) only after
/// that `COMMIT` is on disk; if the commit fails, every member fails. Alone, a transaction commits at
/// once; under concurrency many share one fsync. Reads queued with a group run before it begins, so
/// they never see unacknowledged writes and never wait for the group's fsync.
final class SQLiteWriter: Sendable {
    private let queue: JobQueue
    private let counts: Counts

    /// Most transactions one commit acknowledges, so a steady stream cannot hold a group open.
    static let maxGroupSize = 256

    /// Hands `connection` to a new thread (named `name`, at most 15 bytes on Linux), which owns it from now on.
    init(connection: SQLiteHandle, name: String = "sqlite-writer") {
        let queue = JobQueue()
        let counts = Counts()
        self.queue = queue
        self.counts = counts
        let thread = Thread { Self.run(queue: queue, connection: connection, counts: counts) }
        thread.name = name
        thread.start()
    }

    deinit { queue.close() }

    var statistics: SQLiteStore.Statistics { counts.value.withLock { $0 } }

    /// Runs `body` as one transaction of a group commit: committed if it returns, rolled back if it
    /// throws; returns only after the group's `COMMIT` is durable — unless it is `ephemeral` (its
    /// writes may be lost in a power cut) and so is every other member of its group: then that
    /// commit skips its fsync (`synchronous=NORMAL`; the next durable commit syncs it too).
    @discardableResult
    func write<T: Sendable>(ephemeral: Bool = false, _ body: @escaping @Sendable (SQLiteHandle) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job.write(
                ephemeral: ephemeral,
                run: { connection in
                    do {
                        let value = try body(connection)
                        return .ran { outcome in continuation.resume(with: outcome.map { value }) }
                    } catch {
                        return .threw { continuation.resume(throwing: error) }
                    }
                },
                notRun: { continuation.resume(throwing: $0) })
            if !queue.enqueue(job) { continuation.resume(throwing: StoreError(.unavailable, detail: "sqlite store closed")) }
        }
    }

    /// Runs `body` outside any transaction: it sees every write acknowledged before it was called,
    /// and none that is not acknowledged yet.
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteHandle) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job.read { connection in continuation.resume(with: Result { try body(connection) }) }
            if !queue.enqueue(job) { continuation.resume(throwing: StoreError(.unavailable, detail: "sqlite store closed")) }
        }
    }

    /// Finishes every queued job, closes the connection and ends the thread. Later calls fail with
    /// `unavailable`. Idempotent.
    func close() async {
        await withCheckedContinuation { continuation in
            if !queue.enqueue(.close { continuation.resume() }) { continuation.resume() }
        }
    }

    // MARK: The thread

    private static func run(queue: JobQueue, connection: SQLiteHandle, counts: Counts) {
        while true {
            let jobs = queue.take(maxWrites: maxGroupSize)
            // Reads first, outside any transaction: they see every acknowledged write (committed
            // before they were queued) and none of this group's, and do not wait for its fsync.
            for case .read(let body) in jobs { body(connection) }
            let writes = jobs.compactMap { job -> WriteJob? in
                if case .write(let ephemeral, let run, let notRun) = job { (ephemeral, run, notRun) } else { nil }
            }
            if !writes.isEmpty { commit(writes, on: connection, counts: counts) }
            for case .close(let done) in jobs {
                connection.close()
                done()
                return
            }
        }
    }

    typealias WriteJob = (ephemeral: Bool, run: @Sendable (SQLiteHandle) -> Transaction, notRun: @Sendable (any Error) -> Void)

    /// One group: `BEGIN IMMEDIATE`, each member in a savepoint (a lone member needs none), `COMMIT`.
    private static func commit(_ writes: [WriteJob], on connection: SQLiteHandle, counts: Counts) {
        // Only a group of ephemeral writes commits without fsync; any other group is FULL again
        // before it begins, or does not begin.
        let synchronous = writes.allSatisfy(\.ephemeral) ? "NORMAL" : "FULL"
        do {
            try connection.execute("PRAGMA synchronous=\(synchronous)")
            try connection.execute("BEGIN IMMEDIATE")
        } catch {
            for write in writes { write.notRun(error) }
            return
        }
        let alone = writes.count == 1
        var members: [@Sendable (Result<Void, any Error>) -> Void] = []
        for write in writes {
            if !alone {
                do { try connection.execute("SAVEPOINT member") } catch {
                    write.notRun(error)
                    continue
                }
            }
            switch write.run(connection) {
            case .ran(let acknowledge):
                if alone { members.append(acknowledge); break }
                do {
                    try connection.execute("RELEASE member")
                    members.append(acknowledge)
                } catch {
                    _ = try? connection.execute("ROLLBACK TO member")
                    _ = try? connection.execute("RELEASE member")
                    acknowledge(.failure(error))
                }
            case .threw(let report):
                if alone {
                    _ = try? connection.execute("ROLLBACK")
                    report()
                    return
                }
                _ = try? connection.execute("ROLLBACK TO member")
                _ = try? connection.execute("RELEASE member")
                report()
            }
        }
        do {
            try connection.execute("COMMIT")
            counts.value.withLock {
                if synchronous == "FULL" { $0.commits += 1 }
                $0.transactions += members.count
            }
            for acknowledge in members { acknowledge(.success(())) }
        } catch {
            _ = try? connection.execute("ROLLBACK")
            for acknowledge in members { acknowledge(.failure(error)) }
        }
    }
}

/// What running one transaction's body gave: a value to acknowledge once the group's commit is
/// known, or an error to report at once (its savepoint is rolled back).
enum Transaction: Sendable {
    case ran(@Sendable (Result<Void, any Error>) -> Void)
    case threw(@Sendable () -> Void)
}

/// The writer's tally, shared with the store.
final class Counts: Sendable {
    let value = Mutex(SQLiteStore.Statistics())
}

enum Job: Sendable {
    case write(ephemeral: Bool, run: @Sendable (SQLiteHandle) -> Transaction, notRun: @Sendable (any Error) -> Void)
    case read(@Sendable (SQLiteHandle) -> Void)
    case close(@Sendable () -> Void)
}

/// The jobs waiting for the writer thread, in arrival order.
final class JobQueue: Sendable {
    private let condition = NSCondition()
    private nonisolated(unsafe) var pending: [Job] = []
    private nonisolated(unsafe) var closed = false

    /// Queues `job`; false once the queue has taken a close (the job is not queued).
    func enqueue(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        if case .close = job { closed = true }
        pending.append(job)
        condition.signal()
        return true
    }

    /// Closes the queue without waiting (the thread closes the connection when it gets there).
    func close() { _ = enqueue(.close {}) }

    /// Waits for jobs and takes them in order: all of them, or up to the `maxWrites`-th write.
    func take(maxWrites: Int) -> [Job] {
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty { condition.wait() }
        var writes = 0
        var count = 0
        for job in pending {
            if case .write = job {
                if writes == maxWrites { break }
                writes += 1
            }
            count += 1
        }
        let taken = Array(pending[..<count])
        pending.removeFirst(count)
        return taken
    }
}
