@testable import BioAuthPostgres
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
}
