import BioAuthServer
import BioAuthSQLite
import BioAuthServerTesting
import BioAuthTesting
import Foundation
import Testing

/// Issue 13 item 6: password hashes at OWASP's figure, and old hashes upgraded in place.
struct PasswordHashingTests {
    @Test func theDefaultIsOWASPsFigureForPBKDF2SHA256() {
        #expect(ServerConfiguration().passwordRounds == 600_000)
    }

    @Test func aPasswordStoredWithFewerRoundsIsRehashedAtTheNextLogin() async throws {
        let store = try SQLiteStore.inMemory()
        let old = BioAuthService(store: store, configuration: ServerConfiguration(passwordRounds: 1_000))
        try await old.createUser(username: "alice", password: "correct horse battery", request: RequestInfo())
        let lockout = LockoutQuery(windowStart: Date(), client: "c", clientLimit: 10)
        let before = try #require(try await store.passwordLoginState(username: "alice", lockout: lockout).user)
        #expect(before.passwordRounds == 1_000)

        let current = BioAuthService(store: store, configuration: ServerConfiguration(passwordRounds: 2_000))
        _ = try await current.passwordLogin(username: "alice", password: "correct horse battery", request: RequestInfo())
        let after = try #require(try await store.passwordLoginState(username: "alice", lockout: lockout).user)
        #expect(after.passwordRounds == 2_000 && after.passwordHash != before.passwordHash && after.passwordSalt != before.passwordSalt)
        // the new hash verifies
        _ = try await current.passwordLogin(username: "alice", password: "correct horse battery", request: RequestInfo())
        await #expect(throws: ServerError.self) {
            try await current.passwordLogin(username: "alice", password: "wrong horse battery", request: RequestInfo())
        }
        #expect(try await store.passwordLoginState(username: "alice", lockout: lockout).user == after, "a failed login changes nothing")
    }

    @Test func bioauthServerRefusesWeakPasswordRoundsOutsideTests() throws {
        let process = Process()
        process.executableURL = try ServerProcess.executable("bioauth-server")
        process.arguments = ["--password-rounds", "1000", "--database", ":memory:", "--port", "0", "--management-port", "0"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus != 0)
        #expect(text.contains("600000"))
    }
}
