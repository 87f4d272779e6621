import BioAuthCore
import BioAuthServer
import Foundation

/// Strict JSON decoding for request bodies: an object at the top, at most 8 levels deep, no
/// unknown fields; every failure names the field.
enum StrictJSON {
    static let maximumDepth = 8

    static func decode<T: WireRequest>(_ type: T.Type, from data: Data) throws(ServerError) -> T {
        let shape = JSONShape(of: data, maximumDepth: maximumDepth)
        guard shape.depth <= maximumDepth, !shape.trailingComma else { throw invalid("body", .malformedJSON) }
        if let duplicate = shape.duplicateKey { throw invalid(printable(duplicate), .duplicateField) }
        // A full parse only where the scan cannot tell: anything before the first brace (a byte
        // order mark), or a body with an unknown name, which is malformed first if it is not JSON.
        lazy var parsesAsObject = (try? JSONSerialization.jsonObject(with: data)) is [String: Any]
        guard shape.isObject || parsesAsObject else { throw invalid("body", .malformedJSON) }
        if let unknown = shape.topLevelKeys.sorted().first(where: { T.CodingKeys(stringValue: $0) == nil }) {
            throw parsesAsObject ? invalid(printable(unknown), .unknownField) : invalid("body", .malformedJSON)
        }
        do { return try JSONDecoder().decode(T.self, from: data) } catch let error as DecodingError {
            switch error {
            case .keyNotFound(let key, _): throw invalid(key.stringValue, .missingField)
            case .valueNotFound(_, let context): throw invalid(context.codingPath.last?.stringValue ?? "body", .missingField)
            case .typeMismatch(_, let context): throw invalid(context.codingPath.last?.stringValue ?? "body", .invalidValue)
            case .dataCorrupted(let context): throw invalid(context.codingPath.last?.stringValue ?? "body", .malformedJSON)
            @unknown default: throw invalid("body", .malformedJSON)
            }
        } catch { throw invalid("body", .malformedJSON) }
    }

    static func invalid(_ field: String, _ code: WireFormatError.Code) -> ServerError {
        ServerError(WireFormatError(code, field: field))
    }

    /// A client-supplied name made safe to echo: printable ASCII, at most 64 characters.
    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }).prefix(64))
    }
}
