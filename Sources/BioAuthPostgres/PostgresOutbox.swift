import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO

/// The event outbox and its dead letters.
extension PostgresStore {
    public func claimOutbox(now: Date, leaseUntil: Date, limit: Int, first: Set<AuditKind>) async throws -> [OutboxEvent] {
        let kinds = first.map(\.description).sorted()
        return try await transaction { c in
            // SKIP LOCKED: instances claiming at once take different events.
            try await c.query(
                """
                UPDATE outbox SET lease_until = \(leaseUntil) WHERE id IN (
                  SELECT id FROM outbox WHERE next_attempt_at <= \(now) AND (lease_until IS NULL OR lease_until <= \(now)) AND dead_at IS NULL
                  ORDER BY kind = ANY(\(kinds)) DESC, id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING *
                """, logger: self.logger
            ).collect().map { row in
                let r = row.makeRandomAccess()
                return OutboxEvent(
                    id: try r.value("id"),
                    event: try AuditEvent(row: PostgresStoredRow(r), withOrigin: false),
                    attempts: Int(try r.value("attempts", Int32.self)))
            }.sorted { $0.id < $1.id }
        }
    }

    public func completeOutbox(id: Int64) async throws {
        _ = try await transaction { c in try await c.query("DELETE FROM outbox WHERE id = \(id)", logger: self.logger) }
    }

    public func retryOutbox(id: Int64, attempts: Int, nextAttemptAt: Date) async throws {
        _ = try await transaction { c in
            try await c.query(
                "UPDATE outbox SET attempts = \(attempts), next_attempt_at = \(nextAttemptAt), lease_until = NULL WHERE id = \(id)",
                logger: self.logger)
        }
    }

    public func deadLetterOutbox(id: Int64, attempts: Int, at: Date) async throws {
        _ = try await transaction { c in
            try await c.query(
                "UPDATE outbox SET attempts = \(attempts), dead_at = \(at), lease_until = NULL WHERE id = \(id)", logger: self.logger)
        }
    }

    public func deadLetters(limit: Int) async throws -> [OutboxEvent] {
        try await rows("SELECT * FROM outbox WHERE dead_at IS NOT NULL ORDER BY id LIMIT \(limit)").map { row in
            let r = row.makeRandomAccess()
            return OutboxEvent(
                id: try r.value("id"), event: try AuditEvent(row: PostgresStoredRow(r), withOrigin: false),
                attempts: Int(try r.value("attempts", Int32.self)))
        }
    }

    public func outboxStatus() async throws -> OutboxStatus {
        let rows = try await rows(
            "SELECT COUNT(*) FILTER (WHERE dead_at IS NULL) AS pending, MIN(at) FILTER (WHERE dead_at IS NULL) AS oldest, COUNT(*) FILTER (WHERE dead_at IS NOT NULL) AS dead FROM outbox"
        )
        guard let row = rows.first?.makeRandomAccess() else { return OutboxStatus(pending: 0, oldestPendingAt: nil, deadLetters: 0) }
        return OutboxStatus(
            pending: Int(try row.value("pending", Int64.self)), oldestPendingAt: try row.optional("oldest", Date.self),
            deadLetters: Int(try row.value("dead", Int64.self)))
    }

    public func replayDeadLetters(ids: [Int64], now: Date) async throws -> Int {
        try await transaction { c in
            try await c.query(
                "UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = \(now), lease_until = NULL WHERE id = ANY(\(ids)) AND dead_at IS NOT NULL RETURNING id",
                logger: self.logger
            ).collect().count
        }
    }
}
