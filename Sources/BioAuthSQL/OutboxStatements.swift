import BioAuthServer
import Foundation

/// The webhook outbox's statements, written once: both stores run these as they are.
package enum OutboxStatements {
    /// Leases up to `limit` due events until `leaseUntil`, the kinds in `first` before the others,
    /// and returns them (`RETURNING *`). Where the dialect has row locks, instances claiming at
    /// once skip each other's rows and take different events.
    package static func claim(now: Date, leaseUntil: Date, limit: Int, first: Set<AuditKind>) -> SQL {
        let kinds = first.map(\.description).sorted()
        let order: SQL = kinds.isEmpty ? "id" : "CASE WHEN kind \(oneOf: kinds) THEN 0 ELSE 1 END, id"
        return """
            UPDATE outbox SET lease_until = \(leaseUntil) WHERE id IN (
              SELECT id FROM outbox WHERE next_attempt_at <= \(now) AND (lease_until IS NULL OR lease_until <= \(now)) AND dead_at IS NULL
              ORDER BY \(order) LIMIT \(limit)\(.forUpdateSkipLocked))
            RETURNING *
            """
    }

    package static func complete(id: Int64) -> SQL { "DELETE FROM outbox WHERE id = \(Int(id))" }

    package static func retry(id: Int64, attempts: Int, nextAttemptAt: Date) -> SQL {
        "UPDATE outbox SET attempts = \(attempts), next_attempt_at = \(nextAttemptAt), lease_until = NULL WHERE id = \(Int(id))"
    }

    package static func deadLetter(id: Int64, attempts: Int, at: Date) -> SQL {
        "UPDATE outbox SET attempts = \(attempts), dead_at = \(at), lease_until = NULL WHERE id = \(Int(id))"
    }

    package static func deadLetters(limit: Int) -> SQL { "SELECT * FROM outbox WHERE dead_at IS NOT NULL ORDER BY id LIMIT \(limit)" }

    /// One row: `pending` and `dead` counts (NULL for an empty outbox) and the `oldest` pending event's time.
    package static let status: SQL = """
        SELECT SUM(CASE WHEN dead_at IS NULL THEN 1 ELSE 0 END) AS pending, MIN(CASE WHEN dead_at IS NULL THEN at END) AS oldest,
          SUM(CASE WHEN dead_at IS NULL THEN 0 ELSE 1 END) AS dead
        FROM outbox
        """

    /// Returns the dead letter to the queue, due at `now` (a row when it was one).
    package static func replay(id: Int64, now: Date) -> SQL {
        """
        UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = \(now), lease_until = NULL
        WHERE id = \(Int(id)) AND dead_at IS NOT NULL RETURNING id
        """
    }
}

extension OutboxEvent {
    /// An outbox row (``OutboxStatements``): its id, the event as delivered, its attempts so far.
    package init(row r: some StoredRow) throws(StoreError) {
        self.init(id: Int64(try r.int("id")), event: try AuditEvent(row: r, withOrigin: false), attempts: try r.int("attempts"))
    }
}

extension OutboxStatus {
    /// The row ``OutboxStatements/status`` returns (nil: no row).
    package init(row r: (some StoredRow)?) throws(StoreError) {
        self.init(
            pending: try r?.optionalInt("pending") ?? 0, oldestPendingAt: try r?.optionalDate("oldest"),
            deadLetters: try r?.optionalInt("dead") ?? 0)
    }
}
