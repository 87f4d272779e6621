import BioAuthCore
import BioAuthServer
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// JSON bodies in and out: a request's body is `application/json` within its size limit and
/// decoded strictly (``StrictJSON``); a response's is encoded with sorted keys.
extension BioAuthRoutes {
    /// Decodes a JSON body. Anything but `application/json` is refused with 415, so a web page cannot
    /// drive these endpoints with CORS-simple `text/plain` or form posts from visitors' browsers.
    func decode<T: WireRequest>(_ type: T.Type, _ request: Request, maxBodySize: Int? = nil) async throws -> T {
        let maxBodySize = maxBodySize ?? options.maxBodySize
        guard let contentType = request.headers[.contentType], Self.mediaType(contentType) == "application/json" else {
            throw ServerError(.unsupportedMediaType, field: "Content-Type")
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: maxBodySize) } catch {
            throw ServerError(.payloadTooLarge, field: "body", detail: "at most \(maxBodySize) bytes")
        }
        return try StrictJSON.decode(T.self, from: Data(buffer.readableBytesView))
    }

    /// The media type of a `Content-Type` value, lower-cased: what comes before its first `;`,
    /// without the optional white space (space, tab) around it (RFC 9110 §8.3.1).
    static func mediaType(_ value: String) -> String {
        value.prefix { $0 != ";" }.trimmingOptionalWhitespace.lowercased()
    }
}

/// A JSON response: `value` encoded with sorted keys, slashes unescaped.
func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return Response(
        status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
}
