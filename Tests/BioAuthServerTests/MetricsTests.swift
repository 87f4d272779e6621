import BioAuthCore
@testable import BioAuthHTTP
import BioAuthServer
import BioAuthServerTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Prometheus
import Testing

/// Metrics for operators: request latency per route pattern with `# HELP`, and — with a
/// management listener — none of it on the public one.
struct MetricsTests {
    /// Requests are timed per route pattern, method and status class (never a path, which may
    /// hold a user id, nor a method a client invents); the exposition has `# HELP` for them.
    @Test func requestLatencyIsRecordedPerRoutePattern() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            _ = try await api.call(.get, "/v1/backend/users/carol.private/devices", token: api.apiKey)
            _ = try await api.call(.get, "/v1/backend/users/dave.private/devices", token: api.apiKey)
            for invented in ["FROBNICATE", "FROBNICATE2", "X-\(UUID().uuidString)"] {
                _ = try await api.call(HTTPRequest.Method(invented)!, "/health")
            }
            let metrics = try await api.call(.get, "/metrics").text
            #expect(metrics.contains("# HELP bioauth_http_request_duration_seconds Time from the request"))
            #expect(
                metrics.contains(
                    #"bioauth_http_request_duration_seconds_count{route="/v1/backend/users/{userId}/devices",method="GET",status="2xx"} 2"#),
                "\(metrics)")
            #expect(!metrics.contains("carol.private") && !metrics.contains("dave.private"))
            // A method a client invents is `other`: it cannot add series.
            #expect(metrics.contains(#",method="other",status="4xx"} 3"#), "\(metrics)")
            #expect(!metrics.contains("FROBNICATE"))
        }
    }

    /// With `publicMetrics` off (`--management-port`), the public listener has no `/metrics`;
    /// the management router has it and the probes, and nothing of the API.
    @Test func aManagementListenerTakesTheMetricsOffThePublicOne() async throws {
        let harness = ServerHarness()
        let registry = PrometheusCollectorRegistry()
        var options = HTTPOptions()
        options.publicMetrics = false
        let routes = BioAuthRoutes(service: harness.service, registry: registry, options: options)
        try await Application(router: routes.makeRouter()).test(.router) { (client) async throws -> Void in
            #expect(try await client.execute(uri: "/metrics", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/health/ready", method: .get).status == .ok)
        }
        try await Application(router: routes.makeManagementRouter()).test(.router) { (client) async throws -> Void in
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.status == .ok && String(buffer: metrics.body).contains("bioauth_http_request_duration_seconds"))
            #expect(try await client.execute(uri: "/health/live", method: .get).status == .ok)
            #expect(
                try await client.execute(uri: "/v1/login/challenge", method: .post).status == .notFound,
                "the API is not on the management listener")
        }
        try await harness.service.store.close()
    }

    /// `bioauth-server` serves `/metrics` only on its management listener by default, and on the
    /// public one only with `--public-metrics`.
    @Test(.timeLimit(.minutes(2)))
    func theServerBinaryServesMetricsOnlyOnTheManagementListener() async throws {
        let database = temporaryDatabasePath()
        let logFile = database + ".log"
        #expect(FileManager.default.createFile(atPath: logFile, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: logFile) }
        let server = try ServerProcess(
            database: database, extra: ["--log-format", "json", "--log-level", "notice"],
            standardError: try FileHandle(forWritingTo: URL(fileURLWithPath: logFile)))
        #expect(try await ServerClient(baseURL: "http://127.0.0.1:\(server.port)").get("/metrics").status == 404)
        var address: String?
        for _ in 0..<100 where address == nil {
            let lines = try String(contentsOfFile: logFile, encoding: .utf8).split(separator: "\n")
            address =
                lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { ($0["message"] as? String)?.hasPrefix("management listener") == true }?["address"] as? String
            if address == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let management = ServerClient(baseURL: "http://" + (try #require(address, "the management listener said where it listens")))
        let metrics = try await management.get("/metrics")
        #expect(metrics.status == 200 && metrics.text.contains("bioauth_logins_total"))
        #expect(try await management.get("/health/ready").status == 200)
        #expect(server.stop() == 0)

        let open = try ServerProcess(database: database, extra: ["--public-metrics"])
        #expect(try await ServerClient(baseURL: "http://127.0.0.1:\(open.port)").get("/metrics").status == 200)
        #expect(open.stop() == 0)
    }

    /// The outbox's depth, the age of its oldest waiting event and its dead letters are gauges,
    /// refreshed with each sweep.
    @Test func theOutboxIsMeasured() async throws {
        let harness = ServerHarness()
        #expect(
            harness.service.configuration.publishedEvents == AuditKind.deliveredEvents, "an embedding backend gets every event by default")
        try await harness.test { api in
            let sweeper = Sweeper(service: harness.service, logger: Logger(label: "test"), registry: harness.routes.registry)
            await sweeper.measureOutbox()
            #expect(try await api.call(.get, "/metrics").text.contains("bioauth_outbox_pending_events 0"))
            _ = try await AccessTokenTests.login(api)  // device.enrolled and login.succeeded wait in the outbox
            let waiting = try await harness.service.store.claimOutbox(now: harness.clock.now(), leaseUntil: harness.clock.now(), limit: 10)
            try await harness.service.store.deadLetterOutbox(id: try #require(waiting.first).id, attempts: 20, at: harness.clock.now())
            await sweeper.measureOutbox()
            let metrics = try await api.call(.get, "/metrics").text
            #expect(metrics.contains("# HELP bioauth_outbox_pending_events Events waiting for delivery"))
            #expect(metrics.contains("bioauth_outbox_pending_events 1") && metrics.contains("bioauth_outbox_dead_letters 1"), "\(metrics)")
            #expect(metrics.contains("bioauth_outbox_oldest_pending_age_seconds"))
        }
    }

    /// Every BioAuth metric the exposition shows has its `# HELP` line.
    @Test func everyBioAuthMetricHasHelp() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            _ = try await AccessTokenTests.login(api)
            _ = try await api.post("/v1/login/challenge", ["userId": "alice", "deviceId": "not-a-device"])
            let metrics = try await api.call(.get, "/metrics").text
            let names = Set(
                metrics.split(separator: "\n").filter { $0.hasPrefix("# TYPE bioauth_") }.compactMap {
                    $0.split(separator: " ").dropFirst(2).first.map(String.init)
                })
            #expect(names.contains("bioauth_logins_total") && names.contains("bioauth_challenges_issued_total"), "\(names)")
            for name in names { #expect(metrics.contains("# HELP \(name) "), "\(name) has no HELP") }
        }
    }
}
