import BioAuthServer
import Logging
import PostgresNIO
import Synchronization

/// Answers 503 at once while the database is unreachable, instead of letting every request wait
/// out ``PostgresStore/Options/operationTimeout`` on a pool that cannot connect.
///
/// A request that fails the way an outage looks (no connection within the bound, a refused or
/// dropped connection, SQLSTATE class 08 or 57P) does not decide anything by itself: load can
/// time a request out too. It starts one probe — a fresh connection made outside the pool. Only if
/// that connection fails the same way is the database taken for unreachable; from then on
/// requests fail at once, and a probe every ``retryInterval`` lets them through again as soon as
/// one connects. A probe that connects (the database is only busy) changes nothing.
final class PostgresReachability: Sendable {
    enum State: Equatable {
        case reachable
        /// A request suspected an outage; one probe is out.
        case probing
        /// A probe failed: requests are refused until one connects.
        case unreachable
    }

    /// How often the gate probes while the database is unreachable.
    static let retryInterval = Duration.seconds(1)

    private let state = Mutex(State.reachable)
    private let probes = Mutex<Task<Void, Never>?>(nil)
    private let connect: @Sendable () async throws -> Void
    private let logger: Logger

    /// `connect`: one connection outside the pool, closed again; throws what connecting threw.
    init(logger: Logger, connect: @escaping @Sendable () async throws -> Void) {
        self.connect = connect
        self.logger = logger
    }

    var current: State { state.withLock { $0 } }

    /// Throws ``StoreError`` `unavailable` at once while the database is known to be unreachable.
    func admit() throws {
        if current == .unreachable { throw StoreError(.unavailable, detail: "postgres unreachable") }
    }

    /// Called with the raw error of a failed request; probes if it looks like an outage.
    func observe(_ error: any Error) {
        guard Self.looksLikeOutage(error) else { return }
        let start = state.withLock { state in
            guard state == .reachable else { return false }
            state = .probing
            return true
        }
        guard start else { return }
        let task = Task { await self.probeUntilReachable() }
        probes.withLock { $0 = task }
    }

    /// Stops probing (the store is closing).
    func stop() {
        probes.withLock { $0?.cancel() }
    }

    private func probeUntilReachable() async {
        var announced = false
        while !Task.isCancelled {
            do {
                try await connect()
                state.withLock { $0 = .reachable }
                if announced { logger.notice("database reachable again; requests go through") }
                return
            } catch  where Self.looksLikeOutage(error) {
                if !announced {
                    state.withLock { $0 = .unreachable }
                    logger.error(
                        "database unreachable; answering 503 at once until a probe connects", metadata: ["cause": "\(Self.kind(of: error))"]
                    )
                    announced = true
                }
            } catch {
                // Connected far enough to be refused for another reason (too many connections,
                // a password changed): not an outage of the kind this gate answers for.
                state.withLock { $0 = .reachable }
                if announced { logger.notice("database answers again; requests go through") }
                return
            }
            try? await Task.sleep(for: Self.retryInterval)
        }
    }

    /// Connection failures and shutdowns; never a serialisation failure, a deadlock, a full
    /// server (53xxx) or a statement error, which a reachable but busy database gives.
    static func looksLikeOutage(_ error: any Error) -> Bool {
        if let error = error as? StoreError { return error.detail == PostgresStore.timeoutDetail }
        if let transaction = error as? PostgresTransactionError {
            guard let cause = transaction.beginError ?? transaction.closureError ?? transaction.commitError else { return false }
            return looksLikeOutage(cause)
        }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown: return true
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default: return false
        }
    }

    /// What kind of failure, for the log: never a message that could carry a connection string.
    private static func kind(of error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(describing: type(of: error)) }
        if error.code == .server { return "SQLSTATE \(error.serverInfo?[.sqlState] ?? "?")" }
        return "\(error.code)"
    }
}
