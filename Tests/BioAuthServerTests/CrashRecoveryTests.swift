import AsyncHTTPClient
import BioAuthTesting
import BioAuthCore
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

import Synchronization
import Testing

struct HTTP {
    let base: String
    let client = HTTPClient.shared

    func post(_ path: String, _ body: [String: String], token: String? = nil) async throws -> (Int, [String: Any]) {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let token { request.headers.add(name: "Authorization", value: "Bearer " + token) }
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        return try await send(request)
    }

    func get(_ path: String, token: String) async throws -> (Int, Any) {
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Authorization", value: "Bearer " + token)
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), try JSONSerialization.jsonObject(with: Data(body.readableBytesView)))
    }

    func send(_ request: HTTPClientRequest) async throws -> (Int, [String: Any]) {
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:])
    }
}

struct CrashRecoveryTests {
    /// Kills the server with SIGKILL while enrolments are in flight, restarts it on the same
    /// database, and finds every enrolment that had been answered 2xx (issue 3 item 6).
    @Test(.timeLimit(.minutes(3)))
    func everyAcknowledgedEnrolmentSurvivesSIGKILL() async throws {
        let database = temporaryDatabasePath()
        let first = try ServerProcess(database: database)
        let http = HTTP(base: "http://127.0.0.1:\(first.port)")
        let users = (0..<8).map { "user\($0)" }
        var tokens: [String: String] = [:]
        for user in users {
            #expect(try await http.post("/v1/users", ["username": user, "password": "password \(user)"]).0 == 201)
            tokens[user] = try await http.post("/v1/login/password", ["username": user, "password": "password \(user)"]).1["token"] as? String
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
                                challenge.0 == 200,
                                let envelope = try? JSONDecoder().decode(ChallengeEnvelope.self, from: JSONSerialization.data(withJSONObject: challenge.1)),
                                let message = try? envelope.message(),
                                let signature = try? key.signature(for: message.encoded).derRepresentation
                            else { return }
                            guard let finish = try? await http.post("/v1/devices/registration/finish", ["challengeId": envelope.challengeId, "signature": Base64URL.encode(signature)], token: token) else {
                                return  // the server died mid-request: not acknowledged
                            }
                            if finish.0 == 201, let id = finish.1["id"] as? String { acknowledged.add(user, id) }
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
        let restarted = HTTP(base: "http://127.0.0.1:\(second.port)")
        for user in users {
            let token = try await restarted.post("/v1/login/password", ["username": user, "password": "password \(user)"]).1["token"] as? String
            let (status, list) = try await restarted.get("/v1/devices", token: token ?? "")
            #expect(status == 200)
            let stored = Set((list as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
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
