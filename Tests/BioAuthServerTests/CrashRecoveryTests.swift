import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
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
        let users = (0..<8).map { "user\($0)" }
        var tokens: [String: String] = [:]
        for user in users {
            #expect(try await http.post("/v1/users", ["username": user, "password": "password \(user)"]).status == 201)
            tokens[user] = try await http.post("/v1/login/password", ["username": user, "password": "password \(user)"])["token"]
        }
        let acknowledged = Acknowledged()
        let snapshot = tokens
        let enrolments = Task {
            await withTaskGroup(of: Void.self) { group in
                for user in users {
                    group.addTask {
                        while !Task.isCancelled {
                            let key = P256.Signing.PrivateKey()
                            guard let token = snapshot[user],
                                let challenge = try? await http.post("/v1/devices/registration/challenge", ["name": "Phone", "publicKey": Base64URL.encode(key.publicKey.derRepresentation)], token: token),
                                challenge.status == 200,
                                let envelope = try? JSONDecoder().decode(ChallengeEnvelope.self, from: Data(challenge.text.utf8)),
                                let message = try? envelope.message(),
                                let signature = try? key.signature(for: message.encoded).derRepresentation
                            else { return }
                            guard let finish = try? await http.post("/v1/devices/registration/finish", ["challengeId": envelope.challengeId, "signature": Base64URL.encode(signature)], token: token) else {
                                return  // the server died mid-request: not acknowledged
                            }
                            if finish.status == 201 { acknowledged.add(user, finish["id"]) }
                        }
                    }
                }
            }
        }
        while acknowledged.count < 40 { try await Task.sleep(for: .milliseconds(20)) }
        first.kill()
        await enrolments.value
        let before = acknowledged.all
        #expect(before.count >= 40)

        let second = try ServerProcess(database: database)
        let restarted = ServerClient(baseURL: "http://127.0.0.1:\(second.port)")
        for user in users {
            let token = try await restarted.post("/v1/login/password", ["username": user, "password": "password \(user)"])["token"]
            let list = try await restarted.get("/v1/devices", token: token)
            #expect(list.status == 200)
            let devices = (try? JSONSerialization.jsonObject(with: Data(list.text.utf8))) as? [[String: Any]] ?? []
            let stored = Set(devices.compactMap { $0["id"] as? String })
            let expected = Set(before.filter { $0.0 == user }.map(\.1))
            #expect(expected.isSubset(of: stored), "\(user): \(expected.subtracting(stored).count) acknowledged enrolments lost")
        }
        #expect(second.stop() == 0, "SIGTERM must shut the server down cleanly")
    }
}

final class Acknowledged: Sendable {
    private let entries = Mutex<[(String, String)]>([])
    func add(_ user: String, _ id: String) { entries.withLock { $0.append((user, id)) } }
    var count: Int { entries.withLock { $0.count } }
    var all: [(String, String)] { entries.withLock { $0 } }
}

/// Settings the README promises, on the real executable.
struct ServerSettingsTests {
    @Test func theBIOAUTHVariablesConfigureTheServer() async throws {
        let server = try ServerProcess(database: ":memory:", environment: ["BIOAUTH_RELYING_PARTY": "env.example", "BIOAUTH_CHALLENGE_TTL": "30"])
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
