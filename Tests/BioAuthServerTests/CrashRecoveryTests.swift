import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import SQLiteNIO
import Synchronization
import Testing

struct CrashRecoveryTests {
    /// Kills the server with SIGKILL while enrolments are in flight, restarts it on the same
    /// database, and finds every enrolment that had been answered 2xx (issue 3 item 6).
    @Test(.timeLimit(.minutes(3)))
    func everyAcknowledgedEnrolmentSurvivesSIGKILL() async throws {
        let database = temporaryDatabasePath()
        let first = try ServerProcess(database: database)
        let http = ServerClient(baseURL: "http://127.0.0.1:\(first.port)")
        let acknowledged = Acknowledged()
        let enrolments = Task { await EnrolmentLoad.run(workers: Array(repeating: http, count: 8), into: acknowledged) }
        defer {
            enrolments.cancel()
            first.kill()
        }
        while acknowledged.count < 40 { try await Task.sleep(for: .milliseconds(20)) }
        first.kill()
        await enrolments.value
        #expect(acknowledged.count >= 40)

        let second = try ServerProcess(database: database)
        try await EnrolmentLoad.expectAllStored(acknowledged, on: ServerClient(baseURL: "http://127.0.0.1:\(second.port)"))
        // Without a webhook nobody reads the outbox, so the enrolments queued no event (they are audited).
        let (queued, audited) = try await withRawSQLite(database) { raw in
            (
                try await raw.query("SELECT COUNT(*) AS n FROM outbox").first?.column("n")?.integer,
                try await raw.query("SELECT COUNT(*) AS n FROM audit WHERE kind = 'device.enrolled'").first?.column("n")?.integer
            )
        }
        #expect(queued == 0 && (audited ?? 0) >= 40, "outbox \(String(describing: queued)), audited \(String(describing: audited))")
        #expect(second.stop() == 0, "SIGTERM must shut the server down cleanly")
    }
}

/// Settings the README promises, on the real executable.
struct ServerSettingsTests {
    @Test func theBIOAUTHVariablesConfigureTheServer() async throws {
        let server = try ServerProcess(
            database: ":memory:", environment: ["BIOAUTH_RELYING_PARTY": "env.example", "BIOAUTH_CHALLENGE_TTL": "30"])
        defer { server.stop() }
        let http = ServerClient(baseURL: "http://127.0.0.1:\(server.port)")
        let before = Int(Date().timeIntervalSince1970)
        let challenge = try await http.post("/v1/login/challenge", ["userId": "alice", "deviceId": "3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10"])
        #expect(challenge["relyingPartyId"] == "env.example")
        let expiresAt = challenge.json["expiresAt"] as? Int ?? 0
        #expect((before + 28)...(before + 31) ~= expiresAt, "BIOAUTH_CHALLENGE_TTL=30 gives \(expiresAt - before) s")
    }

    /// Sign-up is off unless enabled (`--allow-sign-up` or `BIOAUTH_ALLOW_SIGN_UP=1`): an open
    /// sign-up answers 409 for taken usernames, which enumerates the users.
    @Test func signUpIsOffUnlessAllowed() async throws {
        let credentials = ["username": "alice", "password": "correct horse battery"]
        let closed = try ServerProcess(database: ":memory:", signUp: false)
        defer { closed.stop() }
        #expect(try await ServerClient(baseURL: "http://127.0.0.1:\(closed.port)").post("/v1/users", credentials).status == 404)
        let flag = try ServerProcess(database: ":memory:", extra: ["--allow-sign-up"], signUp: false)
        defer { flag.stop() }
        #expect(try await ServerClient(baseURL: "http://127.0.0.1:\(flag.port)").post("/v1/users", credentials).status == 201)
        let variable = try ServerProcess(database: ":memory:", environment: ["BIOAUTH_ALLOW_SIGN_UP": "1"], signUp: false)
        defer { variable.stop() }
        #expect(try await ServerClient(baseURL: "http://127.0.0.1:\(variable.port)").post("/v1/users", credentials).status == 201)
    }
}

/// `bioauth-server api-key …` on the real executable, beside a running server.
struct ApiKeyCommandTests {
    @Test(.timeLimit(.minutes(2)))
    func keysAreCreatedListedAndRevokedWhileTheServerRuns() async throws {
        let database = temporaryDatabasePath()
        let key = try ServerProcess.createApiKey(database: database, scopes: ["enrolment-grants"])
        let server = try ServerProcess(database: database, signUp: false)
        defer { server.stop() }
        let http = ServerClient(baseURL: "http://127.0.0.1:\(server.port)")
        let grant = try await http.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: key)
        #expect(grant.status == 201 && grant["userId"] == "carol")
        let redeem = ["approval": Base64URL.encode(Data(count: 32)), "operation": "b3A", "userId": "carol"]
        #expect(try await http.post("/v1/backend/approvals/redeem", redeem, token: key).status == 403, "scope enrolment-grants only")

        let list = try ServerProcess.command(["api-key", "list", "--database", database])
        let line = try #require(list.output.split(separator: "\n").first)
        #expect(
            list.status == 0 && line.contains("test backend") && line.contains("enrolment-grants") && line.hasSuffix("active"),
            "\(list.output)")
        #expect(!list.output.contains(key) && !list.output.contains(String(key.dropFirst(11).prefix(8))), "a listing never shows the key")
        let id = String(line.prefix { $0 != "\t" })
        #expect(try ServerProcess.command(["api-key", "revoke", id, "--database", database]).status == 0)
        #expect(
            try await http.post("/v1/backend/enrolment-grants", ["userId": "carol"], token: key).status == 401,
            "refused from the next request")
        #expect(try ServerProcess.command(["api-key", "revoke", id, "--database", database]).status != 0, "revoked once")
        #expect(try ServerProcess.command(["api-key", "list", "--database", database]).output.contains("revoked "))
        #expect(try ServerProcess.command(["api-key", "create", "--database", database, "--name", "x", "--scope", "admin"]).status != 0)
        #expect(try ServerProcess.command(["api-key", "create", "--database", database, "--name", "x"]).status != 0, "at least one scope")
    }
}
