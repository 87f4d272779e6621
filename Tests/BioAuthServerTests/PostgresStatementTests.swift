@testable import BioAuthPostgres
import BioAuthSQL
import BioAuthServer
import Foundation
import PostgresNIO
import Testing
import BioAuthServerTesting

/// The login statements written with numbered parameters bind exactly the values their SQL
/// numbers (no database needed): a parameter the SQL uses and nobody binds, or a value bound and
/// never used, would fail here rather than as a database error at a login.
struct PostgresStatementTests {
    static let at = Date(timeIntervalSince1970: 1_767_225_600)

    static func parameters(of sql: String) -> Set<Int> {
        var numbers: Set<Int> = []
        var rest = Substring(sql)
        while let dollar = rest.firstIndex(of: "$") {
            rest = rest[rest.index(after: dollar)...]
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            if let number = Int(digits) { numbers.insert(number) }
        }
        return numbers
    }

    @Test func theChallengesInsertBindsEveryParameterItNumbers() throws {
        let challenge = ChallengeRecord(
            id: ChallengeID(bytes: Data(count: 16)), binding: .login, relyingPartyID: "rp", userID: "alice", deviceID: "d1",
            nonce: Data(count: 32),
            createdAt: Self.at,
            expiresAt: Self.at.addingTimeInterval(60))
        let lockout = LockoutQuery(windowStart: Self.at, client: "203.0.113.7", clientLimit: 20)
        let statement = try #require(IssueChallengeStatement(.issueChallenge(challenge, lockout: lockout)))
        let binds = try statement.makeBindings()
        #expect(Self.parameters(of: IssueChallengeStatement.sql) == Set(1...binds.count))
        #expect(try statement.query.sql == IssueChallengeStatement.sql && statement.query.binds == binds)
    }

    @Test func theDeviceLoginsStatementBindsEveryParameterItNumbers() throws {
        let session = SessionRecord(
            id: "s1", tokenHash: TokenHash(of: Data("token".utf8)), userID: "alice", deviceID: "d1", kind: .device, createdAt: Self.at,
            expiresAt: Self.at.addingTimeInterval(3600))
        var plan = WritePlan.login(session, from: "203.0.113.7", audit: AuditEvent(at: Self.at, kind: .loginSucceeded, userID: "alice"))
            .publishing([])
        plan.require(.activeDeviceKey(id: "d1", userID: "alice", publicKey: Data([4])))
        let lockout = LockoutQuery(windowStart: Self.at, client: "203.0.113.7", clientLimit: 20)
        let statement = try #require(FinishDeviceLogin(challengeID: ChallengeID(bytes: Data(count: 16)), lockout: lockout, plan: plan))
        let binds = try statement.makeBindings()
        #expect(Self.parameters(of: FinishDeviceLogin.sql) == Set(1...binds.count))
        #expect(try statement.query.sql == FinishDeviceLogin.sql && statement.query.binds == binds)
    }

    /// The columns each `INSERT INTO table (…)` of `sql` names, by table.
    static func insertedColumns(_ sql: String) -> [String: Set<String>] {
        var columns: [String: Set<String>] = [:]
        var rest = Substring(sql)
        while let insert = rest.range(of: "INSERT INTO ") {
            rest = rest[insert.upperBound...]
            let table = String(rest.prefix { $0 != " " && $0 != "(" })
            guard let open = rest.firstIndex(of: "("), let close = rest.firstIndex(of: ")") else { break }
            let names = rest[rest.index(after: open)..<close].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            columns[table, default: []].formUnion(names)
            rest = rest[close...]
        }
        return columns
    }

    /// The columns the kit's statements for `plan` insert, by table (PostgreSQL's dialect).
    static func kitColumns(_ plan: WritePlan) -> [String: Set<String>] {
        var columns: [String: Set<String>] = [:]
        for mutation in plan.mutations {
            let sql: [SQL]
            switch mutation.statements(in: .postgres) {
            case .run(let statements): sql = statements
            case .appendAudit(let merge, let insert): sql = [insert] + (merge.map { [$0] } ?? [])
            default: sql = []
            }
            for statement in sql { columns.merge(insertedColumns(statement.rendered(in: .postgres).text)) { $0.union($1) } }
        }
        return columns
    }

    /// A fused statement writes every column the kit writes for the same plan: a field added to
    /// a record and its kit statement, and forgotten here, fails (as the DPoP thumbprint once was).
    @Test func theFusedStatementsInsertEveryColumnTheKitInserts() throws {
        let session = SessionRecord(
            id: "s1", tokenHash: TokenHash(of: Data("token".utf8)), userID: "alice", deviceID: "d1", kind: .device, createdAt: Self.at,
            expiresAt: Self.at.addingTimeInterval(3600), refreshTokenHash: TokenHash(of: Data("refresh".utf8)), dpopThumbprint: "jkt")
        var plan = WritePlan.login(session, from: "203.0.113.7", audit: AuditEvent(at: Self.at, kind: .loginSucceeded, userID: "alice"))
            .publishing([])
        plan.require(.activeDeviceKey(id: "d1", userID: "alice", publicKey: Data([4])))
        let lockout = LockoutQuery(windowStart: Self.at, client: "203.0.113.7", clientLimit: 20)
        #expect(FinishDeviceLogin(challengeID: ChallengeID(bytes: Data(count: 16)), lockout: lockout, plan: plan) != nil)
        #expect(Self.insertedColumns(FinishDeviceLogin.sql) == Self.kitColumns(plan))
        #expect(Self.insertedColumns(FinishDeviceLogin.sql)["sessions"]?.contains("dpop_jkt") == true)

        let challenge = ChallengeRecord(
            id: ChallengeID(bytes: Data(count: 16)), binding: .login, relyingPartyID: "rp", userID: "alice", deviceID: "d1",
            nonce: Data(count: 32), createdAt: Self.at, expiresAt: Self.at.addingTimeInterval(60))
        let issue = WritePlan.issueChallenge(challenge, lockout: lockout)
        #expect(IssueChallengeStatement(issue) != nil)
        #expect(Self.insertedColumns(IssueChallengeStatement.sql) == Self.kitColumns(issue))
    }
}
