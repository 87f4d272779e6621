import BioAuthCLI
import BioAuthCore
import BioAuthServerTesting
import Crypto
import Foundation
import Synchronization
import Testing

/// Enrolments answered 201: (user, device id).
final class Acknowledged: Sendable {
    private let entries = Mutex<[(user: String, device: String)]>([])
    func add(_ user: String, _ device: String) { entries.withLock { $0.append((user, device)) } }
    var count: Int { entries.withLock { $0.count } }
    var all: [(user: String, device: String)] { entries.withLock { $0 } }
    var users: Set<String> { Set(all.map(\.user)) }
}

/// Enrolment load for the SIGKILL tests: each worker signs up one new user after another and
/// enrols that user's first device (a second one would need an approval), recording every 201.
/// A worker stops at its first failure: its server has died.
enum EnrolmentLoad {
    static let password = "correct horse battery"

    static func run(workers: [ServerClient], into acknowledged: Acknowledged) async {
        await withTaskGroup(of: Void.self) { group in
            for (worker, http) in workers.enumerated() {
                group.addTask {
                    // `for round in 0... where !Task.isCancelled` would skip the body once cancelled
                    // and count on forever: a worker cancelled between two enrolments spun the CPU.
                    var round = 0
                    while !Task.isCancelled {
                        let user = "load\(worker)-\(round)"
                        guard let device = try? await enrolFirstDevice(of: user, on: http) else { return }
                        acknowledged.add(user, device)
                        round += 1
                    }
                }
            }
        }
    }

    /// Signs `user` up, logs in with the password and enrols a new key; the device id, or nil
    /// when any step is not answered with success.
    static func enrolFirstDevice(of user: String, on http: ServerClient) async throws -> String? {
        guard try await http.post("/v1/users", ["username": user, "password": password]).status == 201 else { return nil }
        let token = try await http.post("/v1/login/password", ["username": user, "password": password])["token"]
        let key = P256.Signing.PrivateKey()
        let challenge = try await http.post(
            "/v1/devices/registration/challenge", ["name": "Phone", "publicKey": Base64URL.encode(key.publicKey.derRepresentation)],
            token: token)
        guard challenge.status == 200 else { return nil }
        let envelope = try JSONDecoder().decode(ChallengeEnvelope.self, from: Data(challenge.text.utf8))
        let signature = try key.signature(for: try envelope.message().encoded).derRepresentation
        let finish = try await http.post(
            "/v1/devices/registration/finish", ["challengeId": envelope.challengeId, "signature": Base64URL.encode(signature)], token: token
        )
        return finish.status == 201 ? finish["id"] : nil
    }

    /// Every acknowledged device is listed for its user by `http`.
    static func expectAllStored(_ acknowledged: Acknowledged, on http: ServerClient) async throws {
        for user in acknowledged.users {
            let token = try await http.post("/v1/login/password", ["username": user, "password": password])["token"]
            let list = try await http.get("/v1/devices", token: token)
            #expect(list.status == 200)
            let devices = (try? JSONSerialization.jsonObject(with: Data(list.text.utf8))) as? [[String: Any]] ?? []
            let stored = Set(devices.compactMap { $0["id"] as? String })
            let expected = Set(acknowledged.all.filter { $0.user == user }.map(\.device))
            #expect(expected.isSubset(of: stored), "\(user): \(expected.subtracting(stored).count) acknowledged enrolments lost")
        }
    }
}
