import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthServerTesting
import Foundation
import Logging
import Synchronization
import Testing

/// What an operator reads: JSON log lines for a pipeline, an access log that names routes, not
/// paths (a path may hold a user id), the policy in force at start, migrations and shutdown —
/// and never a secret.
struct OperatorLoggingTests {
    /// One JSON object per line with time, level, label, message and the metadata at the top
    /// level; a metadata key that would shadow a field is nested instead.
    @Test func jsonLinesCarryTheFieldsAndTheMetadata() throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "bioauth-server") { label in JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
        }
        logger.logLevel = .debug
        logger.info("request", metadata: ["route": "/v1/login/finish", "status": "200", "message": "shadowed"])
        logger.debug("quoted \"text\"\nwith a newline")
        let recorded = lines.withLock { $0 }
        #expect(recorded.count == 2 && recorded.allSatisfy { !$0.contains("\n") })
        let first = try #require(try JSONSerialization.jsonObject(with: Data(recorded[0].utf8)) as? [String: Any])
        #expect(
            first["level"] as? String == "info" && first["label"] as? String == "bioauth-server" && first["message"] as? String == "request"
        )
        #expect(first["route"] as? String == "/v1/login/finish" && first["status"] as? String == "200")
        #expect((first["metadata"] as? [String: String])?["message"] == "shadowed")
        #expect((first["time"] as? String)?.hasSuffix("Z") == true)
        let second = try #require(try JSONSerialization.jsonObject(with: Data(recorded[1].utf8)) as? [String: Any])
        #expect(second["message"] as? String == "quoted \"text\"\nwith a newline")
    }

    /// `bioauth-server --log-format json --access-log --log-level info`: every line on standard
    /// error is JSON; the start names the version and the policy, the migrations applied, each
    /// request its route pattern — a backend request's user id never —, a SIGTERM the shutdown;
    /// no key-encryption key, API key or session token is in any line. `--version` prints the version.
    @Test(.timeLimit(.minutes(2)))
    func theServersLogsAreJSONAndSayWhatAnOperatorNeeds() async throws {
        let database = temporaryDatabasePath()
        let logFile = database + ".log"
        #expect(FileManager.default.createFile(atPath: logFile, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: logFile) }
        let apiKey = try ServerProcess.createApiKey(database: database, scopes: ["users"])
        let server = try ServerProcess(
            database: database, extra: ["--log-format", "json", "--access-log", "--log-level", "info"],
            standardError: try FileHandle(forWritingTo: URL(fileURLWithPath: logFile)))
        let http = ServerClient(baseURL: "http://127.0.0.1:\(server.port)")
        #expect(try await http.get("/v1/backend/users/carol.secret.name/devices", token: apiKey).status == 200)
        #expect(try await http.get("/health/ready").status == 200)
        #expect(server.stop() == 0)

        let text = try String(contentsOfFile: logFile, encoding: .utf8)
        let lines = try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let start = try #require(lines.first { ($0["message"] as? String)?.contains("the policy in force") == true })
        #expect((start["message"] as? String)?.contains(BioAuthVersion.current) == true && start["relying_party"] as? String == "localhost")
        #expect(
            start["signing_keys"] as? String == "kek:"
                + (try #require(
                    KeyEncryptionKey(base64: try String(contentsOfFile: ServerProcess.kekFile(forDatabase: database), encoding: .utf8))))
                .fingerprint
        )
        let requests = lines.filter { $0["message"] as? String == "request" }
        #expect(
            requests.contains { $0["route"] as? String == "/v1/backend/users/{userId}/devices" && $0["status"] as? String == "200" },
            "\(requests)")
        #expect(requests.contains { $0["route"] as? String == "/health/ready" })
        #expect(lines.contains { $0["message"] as? String == "stopped" })
        #expect(!text.contains("carol.secret.name"), "the access log names routes, not paths")
        let kek = try String(contentsOfFile: ServerProcess.kekFile(forDatabase: database), encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        for secret in [apiKey, kek] { #expect(!text.contains(secret)) }
        try? FileManager.default.removeItem(atPath: ServerProcess.kekFile(forDatabase: database))

        let version = try ServerProcess.command(["--version"])
        #expect(version.status == 0 && version.output.trimmingCharacters(in: .whitespacesAndNewlines) == BioAuthVersion.current)
    }
}
