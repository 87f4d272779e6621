import AsyncHTTPClient
import BioAuthCore
import BioAuthServer
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// Posts each event to the backend's URL as JSON (``Wire/Event``), signed with
/// ``WebhookSignature`` (`BioAuth-Signature`) and named by `BioAuth-Event-Id`. Any answer but
/// 2xx, or none within `timeout`, is a failure the outbox retries.
public struct WebhookSink: EventSink {
    public let url: String
    let secret: SymmetricKey
    let timeout: TimeAmount
    let clock: any WallClock

    /// Fails for a `secret` shorter than 32 bytes: it keys the receiver's only proof of origin.
    public init?(url: String, secret: String, timeout: TimeAmount = .seconds(10), clock: any WallClock = SystemWallClock()) {
        guard secret.utf8.count >= 32, let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else { return nil }
        self.url = url
        self.secret = SymmetricKey(data: Data(secret.utf8))
        self.timeout = timeout
        self.clock = clock
    }

    /// The body of `event`'s webhook.
    public static func body(_ event: OutboxEvent) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(
            Wire.Event(
                id: String(event.id), type: event.event.kind.description, occurredAt: Int64(event.event.at.timeIntervalSince1970.rounded(.down)), userId: event.event.userID?.rawValue,
                deviceId: event.event.deviceID?.rawValue, reason: event.event.reason))
    }

    public func deliver(_ event: OutboxEvent) async throws {
        let body = try Self.body(event)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: WebhookSignature.header, value: WebhookSignature.sign(body, secret: secret, at: clock.now()))
        request.headers.add(name: WebhookSignature.eventIDHeader, value: String(event.id))
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        _ = try? await response.body.collect(upTo: 64 * 1024)
        guard (200..<300).contains(response.status.code) else { throw WebhookRefused(status: Int(response.status.code)) }
    }
}

/// The receiver answered something other than 2xx.
public struct WebhookRefused: Error, CustomStringConvertible {
    public let status: Int
    public var description: String { "the webhook receiver answered \(status)" }
}
