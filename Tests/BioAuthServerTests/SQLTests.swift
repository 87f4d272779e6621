import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import Testing
import BioAuthServerTesting

/// The statements both stores run are written once (``SQL``) and rendered per dialect: values
/// become parameters in order, never text; the dialect words differ and nothing else does.
struct SQLTests {
    private let at = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func valuesBecomeParametersInOrderNumberedOnlyForPostgreSQL() {
        let user: UserID = "alice'; DROP TABLE users; --"
        let statement: SQL = "UPDATE devices SET revoked_at = \(at) WHERE user_id = \(user) AND name = \(String?.none)"
        let sqlite = statement.rendered(in: .sqlite), postgres = statement.rendered(in: .postgres)
        #expect(sqlite.text == "UPDATE devices SET revoked_at = ? WHERE user_id = ? AND name = ?")
        #expect(postgres.text == "UPDATE devices SET revoked_at = $1 WHERE user_id = $2 AND name = $3")
        #expect(sqlite.values == [.date(at), .text(user.rawValue), .text(nil)])
        #expect(postgres.values == sqlite.values)
    }

    /// A statement interpolated into a log line or an error by mistake shows its text, never a value.
    @Test func aStatementsDescriptionHoldsNoValue() {
        let secret = Data("password-hash-bytes".utf8)
        let statement: SQL = "UPDATE users SET password_hash = \(secret) WHERE id = \(UserID("alice"))"
        for text in ["\(statement)", String(reflecting: statement), "\(Mirror(reflecting: statement).children.map(\.value))"] {
            #expect(text.contains("UPDATE users SET password_hash = ? WHERE id = ?"), "\(text)")
            #expect(!text.contains("alice") && !text.contains(secret.base64EncodedString()) && !text.contains("password-hash"), "\(text)")
        }
    }

    @Test func aListIsOneArrayInPostgreSQLAndOneParameterEachInSQLite() {
        let statement: SQL = "DELETE FROM counters WHERE key \(oneOf: ["a", "b", "c"]) AND count > \(1)"
        #expect(statement.rendered(in: .sqlite).text == "DELETE FROM counters WHERE key IN (?, ?, ?) AND count > ?")
        #expect(statement.rendered(in: .sqlite).values == [.text("a"), .text("b"), .text("c"), .integer(1)])
        #expect(statement.rendered(in: .postgres).text == "DELETE FROM counters WHERE key = ANY($1) AND count > $2")
        #expect(statement.rendered(in: .postgres).values == [.texts(["a", "b", "c"]), .integer(1)])
    }

    @Test func nullSafeEqualityAndRowLocksAreTheDialectsOwnWords() {
        let statement: SQL = "SELECT 1 FROM audit WHERE client \(.isNotDistinctFrom) \(String?.none)\(.forUpdate)"
        #expect(statement.rendered(in: .sqlite).text == "SELECT 1 FROM audit WHERE client IS ?")
        #expect(statement.rendered(in: .postgres).text == "SELECT 1 FROM audit WHERE client IS NOT DISTINCT FROM $1 FOR UPDATE")
    }

    @Test func anEmbeddedStatementKeepsItsParametersInPlace() {
        let inner: SQL = "SELECT id FROM sessions WHERE user_id = \(UserID("bob"))"
        let outer: SQL = "DELETE FROM approvals WHERE device_id = \(DeviceID("d1")) AND session_id IN (\(inner)) AND at < \(at)"
        let rendered = outer.rendered(in: .postgres)
        #expect(
            rendered.text
                == "DELETE FROM approvals WHERE device_id = $1 AND session_id IN (SELECT id FROM sessions WHERE user_id = $2) AND at < $3")
        #expect(rendered.values == [.text("d1"), .text("bob"), .date(at)])
    }

    @Test func onlyTrustedTextIsInsertedAsText() {
        let statement: SQL = "SELECT seq FROM audit WHERE \(trusted: Schema.mergedAuditKindsCondition) AND reason = \("x")"
        let rendered = statement.rendered(in: .sqlite)
        #expect(rendered.text.hasPrefix("SELECT seq FROM audit WHERE kind IN ('apikey.rejected', "))
        #expect(rendered.text.hasSuffix(" AND reason = ?"))
        #expect(rendered.values == [.text("x")])
    }

    /// A login writes its session and touches its device: one statement where the dialect may
    /// write in a `WITH` clause, two otherwise, with the same values.
    @Test func theLoginsTwoWritesShareAStatementOnlyWhereTheDialectAllowsIt() {
        let session = SessionRecord(
            id: "s1", tokenHash: TokenHash(digest: Data(repeating: 1, count: 32)), userID: "alice", deviceID: "d1", kind: .device,
            createdAt: at, expiresAt: at.addingTimeInterval(60), revokedAt: nil, refreshTokenHash: nil)
        let mutation = WritePlan.Mutation.insertSession(session, touchingDevice: "d1")
        guard case .run(let sqlite) = mutation.statements(in: .sqlite), case .run(let postgres) = mutation.statements(in: .postgres)
        else {
            Issue.record("an insertSession runs plain statements")
            return
        }
        #expect(sqlite.count == 2)
        #expect(postgres.count == 1)
        let fused = postgres[0].rendered(in: .postgres).text
        #expect(fused.hasPrefix("WITH touched AS (UPDATE devices SET last_used_at = $1 WHERE id = $2) INSERT INTO sessions"))
        #expect(Set(postgres[0].rendered(in: .postgres).values) == Set(sqlite.flatMap { $0.rendered(in: .sqlite).values }))
    }
}
