import AsyncHTTPClient
import BioAuthCore
import BioAuthServer
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// Posts each event to the backend's URL as JSON (`Wire.Event`), signed with
/// `WebhookSignature` (`BioAuth-Signature`) and named by `BioAuth-Event-Id`. Any answer but
/// 2xx, or none within `timeout`, is a failure the outbox retries.
public struct WebhookSink: EventSink {
    public let url: String
    let secret: SymmetricKey
    let timeout: TimeAmount
    let clock: any WallClock

    /// Fails for a `secret` shorter than 32 bytes: it keys the receiver's only proof of origin.
    public init?(url: String, secret: String, timeout: TimeAmount = .seconds(10), clock: any WallClock = SystemWallClock()) {
        guard let (url, key) = SignedPost.validated(url: url, secret: secret) else { return nil }
        self.url = url
        self.secret = key
        self.timeout = timeout
        self.clock = clock
    }

    /// The body of `event`'s webhook.
    public static func body(_ event: OutboxEvent) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(
            Wire.Event(
                id: String(event.id), type: event.event.kind.description,
                occurredAt: Int64(event.event.at.timeIntervalSince1970.rounded(.down)), userId: event.event.userID?.rawValue,
                deviceId: event.event.deviceID?.rawValue, reason: event.event.reason?.description))
    }

    public func deliver(_ event: OutboxEvent) async throws {
        try await SignedPost(url: url, secret: secret, timeout: timeout, clock: clock).send(try Self.body(event), eventID: String(event.id))
    }
}

/// One signed JSON POST to a backend's URL: `BioAuth-Signature` over the body (``WebhookSignature``),
/// `BioAuth-Event-Id` when the body is an event; anything but 2xx within `timeout` throws.
struct SignedPost: Sendable {
    let url: String
    let secret: SymmetricKey
    let timeout: TimeAmount
    let clock: any WallClock

    /// An http(s) URL with a host and a secret of at least 32 bytes; nil otherwise.
    static func validated(url: String, secret: String) -> (String, SymmetricKey)? {
        guard secret.utf8.count >= 32, let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil
        else { return nil }
        return (url, SymmetricKey(data: Data(secret.utf8)))
    }

    func send(_ body: Data, eventID: String? = nil) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: WebhookSignature.header, value: WebhookSignature.sign(body, secret: secret, at: clock.now()))
        if let eventID { request.headers.add(name: WebhookSignature.eventIDHeader, value: eventID) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        _ = try? await response.body.collect(upTo: 64 * 1024)
        guard (200..<300).contains(response.status.code) else { throw WebhookRefused(status: Int(response.status.code)) }
    }
}

/// The recovery channel of a backend that delivers recovery codes itself (its own e-mail or SMS):
/// each code is POSTed to `url` as `Wire.RecoveryCodeDelivery`, signed like the event webhooks.
/// The request for the code waits for the answer: anything but 2xx within `timeout` fails it with
/// 503 (the code still counts against the limits), so the requester learns at once that nothing
/// was sent. The body holds the code: serve `url` over TLS, never log the body.
public struct RecoveryWebhook: RecoveryChannel {
    public let url: String
    let post: SignedPost

    /// Fails for a URL that is not http(s) or a `secret` shorter than 32 bytes.
    public init?(url: String, secret: String, timeout: TimeAmount = .seconds(10), clock: any WallClock = SystemWallClock()) {
        guard let (url, key) = SignedPost.validated(url: url, secret: secret) else { return nil }
        self.url = url
        post = SignedPost(url: url, secret: key, timeout: timeout, clock: clock)
    }

    /// The body for `message`: its facts and its English text, nothing the requester chose.
    public static func body(_ message: RecoveryMessage) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(
            Wire.RecoveryCodeDelivery(
                userId: message.userID.rawValue, requestId: message.requestID.rawValue, code: message.code.text,
                replacing: message.replacing,
                keyFingerprint: message.keyFingerprint, expiresAt: Int64(message.expiresAt.timeIntervalSince1970.rounded(.down)),
                text: message.text,
                purpose: message.purpose.rawValue, clientAddress: message.clientAddress))
    }

    public func deliver(_ message: RecoveryMessage) async throws {
        try await post.send(try Self.body(message))
    }
}

/// The receiver answered something other than 2xx.
public struct WebhookRefused: Error, CustomStringConvertible {
    public let status: Int
    public var description: String { "the webhook receiver answered \(status)" }
}
