import BioAuthCore
import BioAuthServer
import Foundation

/// Strict JSON decoding for request bodies: an object at the top, at most 8 levels deep, no
/// unknown fields; every failure names the field.
enum StrictJSON {
    static let maximumDepth = 8

    static func decode<T: WireRequest>(_ type: T.Type, from data: Data) throws(ServerError) -> T {
        let shape = Shape(of: data)
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

    /// What one scan of a body finds without parsing its values (strings are skipped, keys
    /// compared after JSON unescaping, so `"a"` and `"\u0061"` are the same key). The parse
    /// that follows checks the syntax; these are the rules a parser does not.
    struct Shape {
        /// Nesting depth of arrays and objects; the scan stops once it passes ``maximumDepth``.
        var depth = 0
        /// The first key that an object names twice.
        var duplicateKey: String?
        /// Whether the first thing in the body other than whitespace opens an object.
        var isObject = false
        /// Whether a comma comes right before a closing brace or bracket, which JSON (RFC 8259)
        /// does not allow and Foundation's parsers accept.
        var trailingComma = false
        /// The keys of the outermost object.
        var topLevelKeys: Set<String> = []

        init(of data: Data) {
            data.withUnsafeBytes { scan(UnsafeRawBufferPointer($0)) }
        }

        private mutating func scan(_ bytes: UnsafeRawBufferPointer) {
            var objects: [Set<String>?] = []  // one entry per open container: a key set for objects, nil for arrays
            var expectKey = false, seenValue = false
            var previous: UInt8 = 0  // the last byte outside a string that is not whitespace
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                    index += 1
                    continue
                }
                if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]"), previous == UInt8(ascii: ",") { trailingComma = true }
                previous = byte
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    if !seenValue { isObject = byte == UInt8(ascii: "{") }
                    seenValue = true
                    objects.append(byte == UInt8(ascii: "{") ? [] : nil)
                    expectKey = byte == UInt8(ascii: "{")
                    depth = max(depth, objects.count)
                    if depth > maximumDepth { return }
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if !objects.isEmpty { objects.removeLast() }
                    expectKey = false
                case UInt8(ascii: ","):
                    expectKey = objects.last.map { $0 != nil } ?? false
                case UInt8(ascii: "\""):
                    seenValue = true
                    var end = index + 1, escaped = false
                    while end < bytes.count {
                        if escaped {
                            escaped = false
                        } else if bytes[end] == UInt8(ascii: "\\") {
                            escaped = true
                        } else if bytes[end] == UInt8(ascii: "\"") {
                            break
                        }
                        end += 1
                    }
                    if expectKey, end < bytes.count, var keys = objects.last ?? nil {
                        let key = Self.key(UnsafeRawBufferPointer(rebasing: bytes[index...end]))
                        if keys.contains(key), duplicateKey == nil { duplicateKey = key }
                        keys.insert(key)
                        objects[objects.count - 1] = keys
                        if objects.count == 1 { topLevelKeys.insert(key) }
                        expectKey = false
                    }
                    index = end
                default: seenValue = true
                }
                index += 1
            }
        }

        /// A key's text from its quoted literal: without a backslash its bytes, otherwise JSON's unescaping.
        private static func key(_ literal: UnsafeRawBufferPointer) -> String {
            guard literal.contains(UInt8(ascii: "\\")) else { return String(decoding: literal.dropFirst().dropLast(), as: UTF8.self) }
            let data = Data(literal)
            return (try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)) as? String
                ?? String(decoding: data, as: UTF8.self)
        }
    }

    static func invalid(_ field: String, _ code: WireFormatError.Code) -> ServerError {
        ServerError(WireFormatError(code, field: field))
    }

    /// A client-supplied name made safe to echo: printable ASCII, at most 64 characters.
    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }).prefix(64))
    }
}
