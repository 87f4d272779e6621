import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthWebhooks
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import InMemoryLogging
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// A backend that sends its own e-mail or SMS takes the recovery codes from a signed webhook
/// (`--recovery-webhook-url`) and delivers them; the user types the code on the new phone.
struct RecoveryWebhookTests {
    /// The backend's endpoint on loopback: checks each signature, keeps the deliveries, answers
    /// 503 while told to fail.
    final class Backend: Sendable {
        let deliveries = Mutex<[Wire.RecoveryCodeDelivery]>([])
        let failing = Mutex(false)
        let badSignatures = Mutex(0)
        let url = Mutex("")
        private let service = Mutex<LoopbackServer?>(nil)

        func start(secret: String) async throws {
            let router = Router()
            router.post("recovery") { request, _ -> Response in
                let body = Data(try await request.body.collect(upTo: 64 * 1024).readableBytesView)
                let signature = request.headers[HTTPField.Name(WebhookSignature.header)!] ?? ""
                guard WebhookSignature.isValid(signature, body: body, secret: SymmetricKey(data: Data(secret.utf8)), now: Date()),
                    let delivery = try? JSONDecoder().decode(Wire.RecoveryCodeDelivery.self, from: body)
                else {
                    self.badSignatures.withLock { $0 += 1 }
                    return Response(status: .unauthorized)
                }
                if self.failing.withLock({ $0 }) { return Response(status: .serviceUnavailable) }
                self.deliveries.withLock { $0.append(delivery) }
                return Response(status: .noContent)
            }
            let server = try await LoopbackServer.start(router)
            url.withLock { $0 = "http://127.0.0.1:\(server.port)/recovery" }
            service.withLock { $0 = server }
        }

        func stop() async {
            await service.withLock({ $0 })?.stop()
        }
    }

    static let secret = "a webhook secret of at least 32 bytes"

    /// A second device's request gets its code through the backend's webhook — signed, with the
    /// key's fingerprint and a ready text, nothing the requester chose — and the code enrols it.
    /// While the backend answers 503 the requester gets 503 at once; a channel with a short secret
    /// or a non-http URL cannot be made; the code reaches no log line.
    @Test func theBackendDeliversTheRecoveryCodeItsWebhookReceives() async throws {
        let backend = Backend()
        try await backend.start(secret: Self.secret)
        defer { Task { await backend.stop() } }
        let channel = try #require(RecoveryWebhook(url: backend.url.withLock { $0 }, secret: Self.secret))
        #expect(RecoveryWebhook(url: backend.url.withLock { $0 }, secret: "short") == nil)
        #expect(RecoveryWebhook(url: "ftp://example.com/x", secret: Self.secret) == nil)
        let harness = ServerHarness(recoveryChannel: channel)
        try await harness.test { api in
            let primary = try await api.primarySession("alice")
            _ = try await api.enrol(SoftwareDevice(), token: primary)
            let pad = SoftwareDevice()
            let request = try await api.requestEnrolment(pad, token: primary, name: "Pad")
            backend.failing.withLock { $0 = true }
            let refused = try await api.post("/v1/enrolment-requests/\(request["id"])/recovery-code", token: primary)
            #expect(refused.status == 503, "\(refused.text)")
            backend.failing.withLock { $0 = false }
            harness.clock.advance(by: 61)
            #expect(try await api.post("/v1/enrolment-requests/\(request["id"])/recovery-code", token: primary).status == 204)

            let delivery = try #require(backend.deliveries.withLock { $0 }.last)
            #expect(
                delivery.type == "recovery.code" && delivery.userId == "alice" && delivery.requestId == request["id"] && !delivery.replacing
            )
            #expect(delivery.keyFingerprint == DevicePublicKey.fingerprint(spki: Base64URL.decode(pad.spki)!))
            #expect(delivery.text.contains(delivery.code) && !delivery.text.contains("Pad"), "the text holds nothing the requester chose")
            #expect(!"\(delivery)".contains(delivery.code))
            #expect(
                try await api.post("/v1/enrolment-requests/\(request["id"])/recover", ["code": delivery.code], token: primary).status == 204
            )
            let padID = try await api.enrol(pad, token: primary, name: "Pad", request: request["id"])
            #expect(padID == request["deviceId"])
            #expect(backend.badSignatures.withLock { $0 } == 0)
            let logged = harness.logs.entries.map { "\($0.message) \($0.metadata)" }.joined()
            #expect(!logged.contains(delivery.code))
        }
    }
}
