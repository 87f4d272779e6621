import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

/// The event outbox and its dead letters (``OutboxStatements``).
extension PostgresStore {
    public func claimOutbox(now: Date, leaseUntil: Date, limit: Int, first: Set<AuditKind>) async throws -> [OutboxEvent] {
        let claim = OutboxStatements.claim(now: now, leaseUntil: leaseUntil, limit: limit, first: first)
        return try await transaction { c in
            try await self.rows(claim, c).map { try OutboxEvent(row: PostgresStoredRow($0)) }.sorted { $0.id < $1.id }
        }
    }

    public func completeOutbox(id: Int64) async throws {
        try await write(OutboxStatements.complete(id: id))
    }

    public func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) async throws {
        try await write(OutboxStatements.retry(id: id, attempts: attempts, nextAttemptAt: nextAttemptAt))
    }

    public func deadLetterOutbox(id: Int64, attempts: Int, at: Date) async throws {
        try await write(OutboxStatements.deadLetter(id: id, attempts: attempts, at: at))
    }

    public func deadLetters(limit: Int) async throws -> [OutboxEvent] {
        try await read(OutboxStatements.deadLetters(limit: limit)).map { try OutboxEvent(row: $0) }
    }

    public func outboxStatus() async throws -> OutboxStatus {
        try OutboxStatus(row: try await read(OutboxStatements.status).first)
    }

    public func replayDeadLetters(ids: [Int64], now: Date) async throws -> Int {
        try await transaction { c in
            var replayed = 0
            for id in ids { replayed += try await self.rows(OutboxStatements.replay(id: id, now: now), c).count }
            return replayed
        }
    }

    /// Runs one write in a transaction of its own.
    private func write(_ statement: SQL) async throws {
        _ = try await transaction { c in try await self.rows(statement, c) }
    }
}
