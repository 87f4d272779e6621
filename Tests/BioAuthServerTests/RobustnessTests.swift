import BioAuthCore
import BioAuthServer
import BioAuthSQLite
import BioAuthTesting
import Crypto
import Foundation
import HTTPTypes
import InMemoryLogging
import Synchronization
import Testing
import BioAuthServerTesting

/// A deterministic generator (SplitMix64), so a failing fuzz case can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct RobustnessTests {
    /// 10 000 random and mutated requests: never a 5xx, never a crash.
    @Test func tenThousandRandomAndMutatedRequestsNeverCauseA500() async throws {
        let harness = ServerHarness(store: try await SQLiteStore.open(path: temporaryDatabasePath())) {
            $0.rateLimits.requestsPerClient = 1_000_000
        }
        try await harness.test { api in
            let token = try await api.primarySession("alice")
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: token)
            let session = try await api.login("alice", deviceID, phone)["token"]
            let challenge = try await api.loginChallenge("alice", deviceID)
            let valid: [(HTTPRequest.Method, String, String)] = [
                (.post, "/v1/users", #"{"username":"bob","password":"long enough pw"}"#),
                (.post, "/v1/login/password", #"{"username":"alice","password":"correct horse battery"}"#),
                (.post, "/v1/login/challenge", #"{"userId":"alice","deviceId":"\#(deviceID)"}"#),
                (.post, "/v1/login/finish", #"{"challengeId":"\#(challenge["challengeId"])","signature":"\#(try phone.sign(challenge))"}"#),
                (.post, "/v1/devices/registration/challenge", #"{"name":"Phone","publicKey":"\#(SoftwareDevice().spki)"}"#),
                (.post, "/v1/devices/registration/finish", #"{"challengeId":"AAAAAAAAAAAAAAAAAAAAAA","signature":"MEUCIQ"}"#),
                (.post, "/v1/step-up/challenge", #"{"deviceId":"\#(deviceID)","operation":"b3A"}"#),
                (.post, "/v1/step-up/finish", #"{"challengeId":"AAAAAAAAAAAAAAAAAAAAAA","signature":"MEUCIQ"}"#),
                (
                    .post, "/v1/backend/approvals/redeem",
                    #"{"approval":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","operation":"b3A","userId":"alice"}"#
                ),
                (.post, "/v1/backend/enrolment-grants", #"{"userId":"carol"}"#),
                (.post, "/v1/token/refresh", #"{"refreshToken":"\#(Base64URL.encode(Data(count: 32)))"}"#),
                (.post, "/v1/introspect", #"{"token":"eyJhbGciOiJFUzI1NiJ9.e30.AAAA"}"#),
                (.patch, "/v1/devices/\(deviceID)", #"{"name":"Renamed"}"#),
                (.get, "/v1/devices", ""), (.get, "/v1/sessions", ""), (.get, "/v1/audit", ""),
                (.delete, "/v1/sessions/\(UUID().uuidString)", ""), (.get, "/health", ""),
            ]
            let fragments = [
                "{", "}", "[", "]", "\"", ":", ",", "null", "true", "1e999", "-0", "\\u0000", "\u{1F600}", "AAAA", "=", "+", "/",
                String(repeating: "A", count: 300), "{\"a\":{\"b\":[[[[[[[[[[]]]]]]]]]]}}", "\"challengeId\"", "\"signature\"",
            ]
            var rng = SplitMix64(state: 0xB10A_0717)
            var statuses: [Int: Int] = [:]
            for index in 0..<10_000 {
                let (method, path, body) = valid[Int.random(in: 0..<valid.count, using: &rng)]
                var bytes = Array(body.utf8)
                switch Int.random(in: 0..<6, using: &rng) {
                case 0:
                    for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                        bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                    }
                case 1: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
                case 2:
                    bytes.insert(
                        contentsOf: fragments.randomElement(using: &rng)!.utf8,
                        at: bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &rng))
                case 3: bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                case 4: break  // the valid request itself
                default:
                    bytes = Array(body.replacingOccurrences(of: "\"alice\"", with: "\"\(fragments.randomElement(using: &rng)!)\"").utf8)
                }
                // A backend route mostly gets the API key; others a session, garbage or nothing.
                let credential =
                    path.hasPrefix("/v1/backend/") || path == "/v1/introspect" ? api.apiKey : (Bool.random(using: &rng) ? session : token)
                let useToken = Bool.random(using: &rng) ? credential : (Bool.random(using: &rng) ? "garbage" : nil)
                let reply = try await api.call(
                    method, path, raw: String(decoding: bytes, as: UTF8.self), token: useToken, client: "198.51.100.\(index % 200)")
                statuses[reply.status, default: 0] += 1
                #expect(reply.status < 500, "request \(index): \(method) \(path) → \(reply.status)")
            }
            #expect(statuses.values.reduce(0, +) == 10_000)
            #expect(statuses[400, default: 0] > 1_000 && statuses[401, default: 0] > 100)
        }
    }

    /// Issue 3 item 6, on the SQLite store: one challenge, 200 racers, one winner.
    @Test func twoHundredConcurrentFinishesOnSQLiteYieldOneSuccess() async throws {
        let harness = ServerHarness(store: try await SQLiteStore.open(path: temporaryDatabasePath()))
        try await harness.test { api in
            let token = try await api.primarySession("alice")
            let phone = SoftwareDevice()
            let deviceID = try await api.enrol(phone, token: token)
            let challenge = try await api.loginChallenge("alice", deviceID)
            let signature = try phone.sign(challenge)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<200 {
                    group.addTask { try await api.finish(challenge, signature: signature, client: "198.51.100.\(index)").status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 401 }.count == 199)
        }
    }

    /// Issue 3 item 8: no secret in an error response, a log line or the audit log.
    @Test func noSecretReachesErrorsLogsOrTheAuditLog() async throws {
        let harness = ServerHarness()
        let (scanner, rendered) = try await scenario(harness)
        #expect(scanner.count > 20)
        #expect(rendered.count > 50)
        for text in rendered { #expect(scanner.leaks(in: text).isEmpty, "\(scanner.leaks(in: text)) in: \(text.prefix(120))") }
    }

    /// Usernames reach log lines only as keyed pseudonyms: stable within the process, not the name.
    @Test func usernamesInLogLinesArePseudonyms() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            _ = try await api.primarySession("alice")
            _ = try await api.post("/v1/login/password", ["username": "alice", "password": "wrong password"])
        }
        let users = harness.logs.entries.compactMap { $0.metadata["user"].map { "\($0)" } }
        #expect(users.count >= 2)
        #expect(Set(users).count == 1 && users[0].hasPrefix("u-") && users[0].count == 18, "\(users)")
        #expect(!harness.logs.entries.contains { "\($0.message) \($0.metadata)".contains("alice") })
    }

    /// Runs a scenario with successes and failures; returns everything that must be secret-free.
    func scenario(_ harness: ServerHarness) async throws -> (SecretScanner, [String]) {
        let collected = Collected()
        try await harness.test { api in
            var scanner = SecretScanner()
            scanner.add(API.password, label: "password")
            scanner.add("wrong password 1", label: "wrong password")
            let token = try await api.primarySession("alice")
            scanner.add(Base64URL.decode(token)!, label: "primary token")
            let phone = SoftwareDevice()
            scanner.add(phone.key.rawRepresentation, label: "private key")
            let deviceID = try await api.enrol(phone, token: token)
            var replies: [Reply] = []
            for attempt in 0..<6 {
                let challenge = try await api.loginChallenge("alice", deviceID)
                let message = try phone.message(challenge)
                scanner.add(message.nonce, label: "nonce")
                let signer = attempt.isMultiple(of: 2) ? phone : SoftwareDevice()
                let signature = try signer.signatureBytes(challenge)
                scanner.add(signature, label: "signature")
                let reply = try await api.finish(challenge, signature: Base64URL.encode(signature))
                if reply.status == 200 { scanner.add(Base64URL.decode(reply["token"])!, label: "session token") }
                replies.append(reply)
                replies.append(try await api.finish(challenge, signature: Base64URL.encode(signature)))  // replay
            }
            replies.append(try await api.post("/v1/login/password", ["username": "alice", "password": "wrong password 1"]))
            // A password typed into the username field: an unknown user that must not be written down.
            scanner.add("Tr0ub4dor&3x", label: "password typed as a username")
            replies.append(
                try await api.post("/v1/login/password", ["username": "Tr0ub4dor&3x", "password": "Tr0ub4dor&3x is the password"]))
            scanner.add("Tr0ub4dor&3x is the password", label: "its password field")
            replies.append(try await api.call(.get, "/v1/devices", token: token + "x"))
            let stepUp = try await api.post("/v1/step-up/challenge", ["deviceId": deviceID, "operation": "b3A"], token: token)
            let approval = try await api.finish(stepUp, signature: try phone.sign(stepUp), path: "/v1/step-up/finish", token: token)
            scanner.add(Base64URL.decode(approval["approval"])!, label: "approval")
            replies.append(try await api.redeem(approval["approval"], operation: "b3B"))
            scanner.add(api.apiKey, label: "API key")
            var texts = replies.filter { $0.status >= 400 }.map(\.text)
            // Values that hold secrets describe themselves without them.
            let grant = try await harness.service.passwordLogin(username: "alice", password: API.password, request: RequestInfo())
            scanner.add(Base64URL.decode(grant.token)!, label: "service session token")
            let envelope = try await harness.service.beginLogin(userID: "alice", deviceID: DeviceID(deviceID), request: RequestInfo())
            scanner.add(Base64URL.decode(envelope.nonce)!, label: "envelope nonce")
            texts += ["\(grant)", String(reflecting: grant), "\(envelope)", String(reflecting: envelope)]
            // …and so do dump() and Mirror, which debuggers and crash reporters use.
            var dumped = ""
            dump(grant, to: &dumped)
            dump(envelope, to: &dumped)
            texts.append(dumped)
            texts += Mirror(reflecting: grant).children.map { "\($0.value)" } + Mirror(reflecting: envelope).children.map { "\($0.value)" }
            for entry in harness.logs.entries { texts.append("\(entry.message) \(entry.metadata)") }
            for event in try await harness.service.store.auditEvents(userID: nil, limit: 1_000) { texts.append("\(event)") }
            collected.set(scanner, texts)
        }
        return collected.value
    }
}

final class Collected: Sendable {
    private let stored = Mutex((SecretScanner(), [String]()))
    func set(_ scanner: SecretScanner, _ texts: [String]) { stored.withLock { $0 = (scanner, texts) } }
    var value: (SecretScanner, [String]) { stored.withLock { $0 } }
}
