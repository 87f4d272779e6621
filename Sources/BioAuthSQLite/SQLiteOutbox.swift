import BioAuthSQL
import BioAuthServer
import Foundation

/// The event outbox and its dead letters.
extension SQLiteStore {
    public func claimOutbox(now: Date, leaseUntil: Date, limit: Int, first: Set<AuditKind>) async throws -> [OutboxEvent] {
        let kinds = first.map(\.description).sorted()
        let order = kinds.isEmpty ? "id" : "CASE WHEN kind IN (\(kinds.map { _ in "?" }.joined(separator: ", "))) THEN 0 ELSE 1 END, id"
        return try await writer.write { db in
            try db.query(
                """
                UPDATE outbox SET lease_until = ? WHERE id IN (
                  SELECT id FROM outbox WHERE next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?) AND dead_at IS NULL ORDER BY \(order) LIMIT ?)
                RETURNING *
                """, [.date(leaseUntil), .date(now), .date(now)] + kinds.map { .text($0) } + [.integer(limit)]
            ).map { row in
                OutboxEvent(
                    id: Int64(try row.int("id")),
                    event: try AuditEvent(row: row, withOrigin: false),
                    attempts: try row.int("attempts"))
            }.sorted { $0.id < $1.id }
        }
    }

    public func completeOutbox(id: Int64) async throws {
        try await writer.write { db in try db.query("DELETE FROM outbox WHERE id = ?", [.integer(Int(id))]) }
    }

    public func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) async throws {
        try await writer.write { db in
            try db.query(
                "UPDATE outbox SET attempts = ?, next_attempt_at = ?, lease_until = NULL WHERE id = ?",
                [.integer(attempts), .date(nextAttemptAt), .integer(Int(id))])
        }
    }

    public func deadLetterOutbox(id: Int64, attempts: Int, at: Date) async throws {
        try await writer.write { db in
            try db.query(
                "UPDATE outbox SET attempts = ?, dead_at = ?, lease_until = NULL WHERE id = ?",
                [.integer(attempts), .date(at), .integer(Int(id))])
        }
    }

    public func deadLetters(limit: Int) async throws -> [OutboxEvent] {
        try await reader.read { db in
            try db.query("SELECT * FROM outbox WHERE dead_at IS NOT NULL ORDER BY id LIMIT ?", [.integer(limit)]).map { row in
                OutboxEvent(
                    id: Int64(try row.int("id")), event: try AuditEvent(row: row, withOrigin: false), attempts: try row.int("attempts"))
            }
        }
    }

    public func outboxStatus() async throws -> OutboxStatus {
        try await reader.read { db in
            let row = try db.query(
                "SELECT SUM(CASE WHEN dead_at IS NULL THEN 1 ELSE 0 END) AS pending, MIN(CASE WHEN dead_at IS NULL THEN at END) AS oldest, SUM(CASE WHEN dead_at IS NULL THEN 0 ELSE 1 END) AS dead FROM outbox"
            ).first
            return OutboxStatus(
                pending: (try? row?.int("pending")) ?? 0, oldestPendingAt: (try? row?.optionalDate("oldest")) ?? nil,
                deadLetters: (try? row?.int("dead")) ?? 0)
        }
    }

    public func replayDeadLetters(ids: [Int64], now: Date) async throws -> Int {
        try await writer.write { db in
            try ids.reduce(0) { count, id in
                count
                    + (try db.query(
                        "UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = ?, lease_until = NULL WHERE id = ? AND dead_at IS NOT NULL RETURNING id",
                        [.date(now), .integer(Int(id))]
                    ).count)
            }
        }
    }
}
