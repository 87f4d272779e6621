import AsyncHTTPClient
import BioAuthCore
import Foundation
import NIOCore
import NIOHTTP1

/// A raw JSON client for `bioauth-server`, for tests that send what no well-behaved client would
/// (forged signatures, replays, unknown fields). Apps use `BioAuthClient`.
public struct ServerClient: Sendable {
    public let baseURL: String

    public init(baseURL: String) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
    }

    /// A response. Its description shows only the status: bodies carry tokens and nonces.
    public struct Reply: Sendable, CustomStringConvertible, CustomReflectable {
        public let status: Int
        public let text: String
        public var json: [String: any Sendable] {
            ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: any Sendable]) ?? [:]
        }
        public subscript(_ key: String) -> String { json[key] as? String ?? "" }
        public var retryAfter: String?
        public var isSuccess: Bool { (200..<300).contains(status) }
        public var description: String { "Reply(HTTP \(status), \(text.utf8.count) bytes)" }
        public var customMirror: Mirror { Mirror(self, children: ["status": status, "bytes": text.utf8.count]) }

        public init(status: Int, text: String, retryAfter: String? = nil) {
            self.status = status
            self.text = text
            self.retryAfter = retryAfter
        }
    }

    public func post(_ path: String, _ body: [String: String], token: String? = nil) async throws -> Reply {
        try await send(.POST, path, body: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), token: token)
    }

    /// A POST whose body has other values than strings (an Android chain's array, for one).
    public func post(_ path: String, json body: [String: any Sendable], token: String? = nil) async throws -> Reply {
        try await send(.POST, path, body: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), token: token)
    }

    public func get(_ path: String, token: String? = nil) async throws -> Reply {
        try await send(.GET, path, body: nil, token: token)
    }

    public func delete(_ path: String, token: String? = nil) async throws -> Reply {
        try await send(.DELETE, path, body: nil, token: token)
    }

    /// The server did not answer.
    public struct Unreachable: Error, CustomStringConvertible {
        public let baseURL: String
        public var description: String { "cannot reach bioauth-server at \(baseURL)" }
    }

    func send(_ method: HTTPMethod, _ path: String, body: Data?, token: String?) async throws -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/json")
        if let token { request.headers.add(name: "Authorization", value: "Bearer " + token) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return Reply(
                status: Int(response.status.code), text: String(buffer: bytes), retryAfter: response.headers.first(name: "Retry-After"))
        } catch {
            throw Unreachable(baseURL: baseURL)
        }
    }
}
