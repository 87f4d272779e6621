import BioAuthSQL
import BioAuthServer
import Foundation

/// The event outbox and its dead letters (``OutboxStatements``).
extension SQLiteStore {
    public func claimOutbox(now: Date, leaseUntil: Date, limit: Int, first: Set<AuditKind>) async throws -> [OutboxEvent] {
        let claim = OutboxStatements.claim(now: now, leaseUntil: leaseUntil, limit: limit, first: first)
        return try await writer.write { db in try db.all(claim) { try OutboxEvent(row: $0) }.sorted { $0.id < $1.id } }
    }

    public func completeOutbox(id: Int64) async throws {
        try await writer.write { db in try db.query(OutboxStatements.complete(id: id)) }
    }

    public func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) async throws {
        try await writer.write { db in try db.query(OutboxStatements.retry(id: id, attempts: attempts, nextAttemptAt: nextAttemptAt)) }
    }

    public func deadLetterOutbox(id: Int64, attempts: Int, at: Date) async throws {
        try await writer.write { db in try db.query(OutboxStatements.deadLetter(id: id, attempts: attempts, at: at)) }
    }

    public func deadLetters(limit: Int) async throws -> [OutboxEvent] {
        try await reader.read { db in try db.all(OutboxStatements.deadLetters(limit: limit)) { try OutboxEvent(row: $0) } }
    }

    public func outboxStatus() async throws -> OutboxStatus {
        try await reader.read { db in try OutboxStatus(row: db.query(OutboxStatements.status).first) }
    }

    public func replayDeadLetters(ids: [Int64], now: Date) async throws -> Int {
        try await writer.write { db in
            try ids.reduce(0) { count, id in count + (try db.query(OutboxStatements.replay(id: id, now: now)).count) }
        }
    }
}
