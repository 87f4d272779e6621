import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthWebhooks
import BioAuthServerTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// A webhook receiver on loopback: verifies each signature, answers 503 while told to fail,
/// records what it accepted.
final class WebhookReceiver: Sendable {
    struct State {
        var failing: Int = 0
        var accepted: [Wire.Event] = []
        var refusedSignatures = 0
        var requests = 0
    }
    let state = Mutex(State())
    let secret: String
    let url: String
    let group: ServiceGroup
    let task: Task<Void, any Error>

    private init(secret: String, url: String, group: ServiceGroup, task: Task<Void, any Error>) {
        self.secret = secret
        self.url = url
        self.group = group
        self.task = task
    }

    static func start(secret: String, port: Int = 0) async throws -> WebhookReceiver {
        let box = Mutex<WebhookReceiver?>(nil)
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let body = Data(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
            guard let receiver = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let signature = request.headers[HTTPField.Name(WebhookSignature.header)!] ?? ""
            let valid = WebhookSignature.isValid(signature, body: body, secret: SymmetricKey(data: Data(receiver.secret.utf8)), now: Date())
            let event = try? JSONDecoder().decode(Wire.Event.self, from: body)
            return receiver.state.withLock { state in
                state.requests += 1
                guard valid, let event, request.headers[HTTPField.Name(WebhookSignature.eventIDHeader)!] == event.id else {
                    state.refusedSignatures += 1
                    return Response(status: .unauthorized)
                }
                if state.failing > 0 {
                    state.failing -= 1
                    return Response(status: .serviceUnavailable)
                }
                state.accepted.append(event)
                return Response(status: .noContent)
            }
        }
        var logger = Logger(label: "receiver")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else { throw CancellationError() }
        let receiver = WebhookReceiver(secret: secret, url: "http://127.0.0.1:\(bound)/hook", group: group, task: task)
        box.withLock { $0 = receiver }
        return receiver
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    /// Accepted events, each once (deliveries are at least once).
    var events: [Wire.Event] {
        var seen = Set<String>()
        return state.withLock { $0.accepted }.filter { seen.insert($0.id).inserted }
    }
}

struct WebhookTests {
    static let secret = "a webhook secret of at least 32 bytes"

    @Test func signaturesAreCheckedStrictlyWithinTheReplayWindow() throws {
        let key = SymmetricKey(data: Data(Self.secret.utf8))
        let body = Data(#"{"id":"1"}"#.utf8)
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let header = WebhookSignature.sign(body, secret: key, at: now)
        #expect(header.hasPrefix("t=1795000000,v1=") && header.count == 16 + 64)
        #expect(WebhookSignature.isValid(header, body: body, secret: key, now: now.addingTimeInterval(299)))
        #expect(!WebhookSignature.isValid(header, body: body, secret: key, now: now.addingTimeInterval(301)), "outside the replay window")
        #expect(!WebhookSignature.isValid(header, body: body, secret: key, now: now.addingTimeInterval(-301)))
        #expect(!WebhookSignature.isValid(header, body: Data(#"{"id":"2"}"#.utf8), secret: key, now: now), "another body")
        #expect(
            !WebhookSignature.isValid(
                header, body: body, secret: SymmetricKey(data: Data("another secret of at least 32 bytes!".utf8)), now: now))
        // The timestamp is signed: moving it forward breaks the MAC.
        #expect(
            !WebhookSignature.isValid(
                header.replacingOccurrences(of: "t=1795000000", with: "t=1795000100"), body: body, secret: key, now: now))
        for malformed in [
            "", header.uppercased(), header + ",v0=00", " " + header, header.replacingOccurrences(of: "v1=", with: "v2="),
            String(header.dropLast()),
        ] {
            #expect(!WebhookSignature.isValid(malformed, body: body, secret: key, now: now), "\(malformed)")
        }
        #expect(WebhookSink(url: "http://example.com/hook", secret: "short") == nil, "a secret under 32 bytes")
        #expect(WebhookSink(url: "ftp://example.com/hook", secret: Self.secret) == nil)
    }

    /// The new parsers, fuzzed: 10 000 mutations each of a valid signature header — accepted
    /// only when unchanged — and of an API key — accepted only in the key's exact shape.
    @Test func signatureHeadersAndAPIKeysSurviveMutation() {
        let key = SymmetricKey(data: Data(Self.secret.utf8))
        let body = Data(#"{"id":"7"}"#.utf8), now = Date(timeIntervalSince1970: 1_795_000_000)
        let header = WebhookSignature.sign(body, secret: key, at: now)
        let apiKey = ApiKeySecret().value
        var rng = SplitMix64(state: 0x5EED_0B10)
        let alphabet = Array("t=v1,0123456789abcdefABCDEF-_ \u{0}é".unicodeScalars)
        for _ in 0..<10_000 {
            let shaped = { (text: String) in
                text.hasPrefix(ApiKeySecret.prefix) && text.utf8.count == 54
                    && Base64URL.decode(String(text.dropFirst(11))).map { Base64URL.encode($0) } == String(text.dropFirst(11))
            }
            for (original, accepts, expected) in [
                (header, { WebhookSignature.isValid($0, body: body, secret: key, now: now) }, { $0 == header }),
                (apiKey, { ApiKeySecret(presented: $0) != nil }, shaped),
            ] as [(String, (String) -> Bool, (String) -> Bool)] {
                var scalars = Array(original.unicodeScalars)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: scalars[Int.random(in: 0..<scalars.count, using: &rng)] = alphabet[Int.random(in: 0..<alphabet.count, using: &rng)]
                case 1: scalars.remove(at: Int.random(in: 0..<scalars.count, using: &rng))
                case 2:
                    scalars.insert(
                        alphabet[Int.random(in: 0..<alphabet.count, using: &rng)], at: Int.random(in: 0...scalars.count, using: &rng))
                default: scalars = Array(scalars.prefix(Int.random(in: 0..<scalars.count, using: &rng)))
                }
                let mutated = String(String.UnicodeScalarView(scalars))
                #expect(accepts(mutated) == expected(mutated), "\(mutated)")
            }
        }
    }

    /// A receiver that fails for a while gets every event once it recovers, in order: the outbox
    /// retries with back-off and drops nothing.
    @Test(.timeLimit(.minutes(3)))
    func aReceiverOutageDelaysEventsAndDropsNone() async throws {
        let receiver = try await WebhookReceiver.start(secret: Self.secret)
        let harness = ServerHarness()
        let delivery = OutboxDelivery(
            store: harness.service.store, sink: try #require(WebhookSink(url: receiver.url, secret: Self.secret)),
            policy: DeliveryPolicy(optionalEvents: [.loginSucceeded]), clock: harness.clock, logger: Logger(label: "test"))
        try await harness.test { api in
            receiver.state.withLock { $0.failing = 3 }
            let (login, deviceID, _) = try await AccessTokenTests.login(api)  // device.enrolled, login.succeeded
            #expect(try await api.call(.delete, "/v1/devices/\(deviceID)", token: login["token"]).status == 204)  // device.revoked
            var rounds = 0
            while receiver.events.count < 3, rounds < 20 {
                try await delivery.deliverDue()
                harness.clock.advance(by: 10)  // past any back-off so far
                rounds += 1
            }
            #expect(receiver.events.map(\.type) == ["device.enrolled", "login.succeeded", "device.revoked"])
            #expect(receiver.events.allSatisfy { $0.userId == "alice" && $0.deviceId == deviceID })
            #expect(receiver.state.withLock { $0.requests } >= 6 && receiver.state.withLock { $0.refusedSignatures } == 0)
            #expect(
                try await harness.service.store.claimOutbox(now: harness.clock.now(), leaseUntil: harness.clock.now(), limit: 10).isEmpty,
                "nothing left")
        }
        await receiver.stop()
    }

    /// SIGKILL after the changes commit and before any delivery (the receiver is down): the
    /// restarted server delivers every event.
    @Test(.timeLimit(.minutes(2)))
    func eventsCommittedBeforeSIGKILLAreDeliveredAfterTheRestart() async throws {
        let receiver = try await WebhookReceiver.start(secret: Self.secret)
        defer { Task { await receiver.stop() } }
        receiver.state.withLock { $0.failing = Int.max }
        let database = temporaryDatabasePath()
        let webhook = ["--webhook-url", receiver.url]
        let secret = ["BIOAUTH_WEBHOOK_SECRET": Self.secret]
        let first = try ServerProcess(database: database, extra: webhook, environment: secret)
        let http = ServerClient(baseURL: "http://127.0.0.1:\(first.port)")
        var enrolled: [String] = []
        for index in 0..<5 {
            enrolled.append(try #require(try await EnrolmentLoad.enrolFirstDevice(of: "user\(index)", on: http)))
        }
        first.kill()
        #expect(receiver.events.isEmpty)

        receiver.state.withLock { $0.failing = 0 }
        let second = try ServerProcess(database: database, extra: webhook, environment: secret)
        defer { second.stop() }
        let deadline = Date().addingTimeInterval(60)
        while Set(receiver.events.filter { $0.type == "device.enrolled" }.compactMap(\.deviceId)) != Set(enrolled), Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(Set(receiver.events.filter { $0.type == "device.enrolled" }.compactMap(\.deviceId)) == Set(enrolled))
        #expect(receiver.state.withLock { $0.refusedSignatures } == 0)
    }
}

/// Issue 43: webhook bodies are events and recovery codes, so bioauth-server refuses a plain-http
/// URL to any host but loopback unless the operator names the risk.
struct WebhookURLSafetyTests {
    /// Runs bioauth-server to its exit without holding a thread of Swift's cooperative pool: the
    /// wait is the process's termination handler (a blocked pool thread starves the in-process
    /// servers of the tests running beside this one).
    func start(_ arguments: [String]) async throws -> (status: Int32, errors: String) {
        let process = Process()
        process.executableURL = try ServerProcess.executable("bioauth-server")
        process.arguments = ["--database", ":memory:", "--port", "0", "--management-port", "0"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["BIOAUTH_WEBHOOK_SECRET": String(repeating: "s", count: 40)]) {
            $1
        }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { process in
                let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                continuation.resume(returning: (process.terminationStatus, text))
            }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
    }

    @Test func plainHTTPToAnotherHostIsRefusedUnlessNamed() async throws {
        for flag in ["--webhook-url", "--recovery-webhook-url"] {
            let refused = try await start([flag, "http://hooks.example.com/bioauth"])
            #expect(refused.status != 0 && refused.errors.contains("must be https"), "\(flag): \(refused.errors)")
        }
        for url in ["http://10.0.0.7/h", "http://127.example.com/h", "HTTP://hooks.example.com/h"] {
            let refused = try await start(["--webhook-url", url])
            #expect(refused.status != 0 && refused.errors.contains("must be https"), "\(url): \(refused.errors)")
        }
        // Loopback http is what the other webhook tests of this file run against (a receiver on 127.0.0.1).
    }
}
