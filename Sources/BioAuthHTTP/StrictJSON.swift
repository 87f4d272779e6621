import BioAuthCore
import BioAuthServer
import Foundation

/// Strict JSON decoding for request bodies: an object at the top, at most 8 levels deep, no
/// unknown fields; every failure names the field.
enum StrictJSON {
    static let maximumDepth = 8

    static func decode<T: WireRequest>(_ type: T.Type, from data: Data) throws(ServerError) -> T {
        guard depth(of: data) <= maximumDepth else { throw invalid("body", .malformedJSON) }
        if let duplicate = duplicateKey(in: data) { throw invalid(printable(duplicate), .duplicateField) }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { throw invalid("body", .malformedJSON) }
        if let unknown = object.keys.sorted().first(where: { T.CodingKeys(stringValue: $0) == nil }) {
            throw invalid(printable(unknown), .unknownField)
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

    /// Nesting depth of arrays and objects, scanned without parsing (strings skipped).
    static func depth(of data: Data) -> Int {
        var depth = 0, deepest = 0, inString = false, escaped = false
        for byte in data {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
                if deepest > maximumDepth { return deepest }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// The first key that an object of `data` names twice, if any (keys compared after JSON
    /// unescaping, so `"a"` and `"\u0061"` are the same key). Scanned without parsing values.
    static func duplicateKey(in data: Data) -> String? {
        var objects: [Set<String>?] = []  // one entry per open container: a key set for objects, nil for arrays
        var expectKey = false
        var index = data.startIndex
        while index < data.endIndex {
            let byte = data[index]
            switch byte {
            case UInt8(ascii: "{"):
                objects.append([])
                expectKey = true
            case UInt8(ascii: "["):
                objects.append(nil)
                expectKey = false
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !objects.isEmpty { objects.removeLast() }
                expectKey = false
            case UInt8(ascii: ","):
                expectKey = objects.last.map { $0 != nil } ?? false
            case UInt8(ascii: "\""):
                var end = data.index(after: index), escaped = false
                while end < data.endIndex {
                    if escaped { escaped = false } else if data[end] == UInt8(ascii: "\\") { escaped = true } else if data[end] == UInt8(ascii: "\"") { break }
                    end = data.index(after: end)
                }
                if expectKey, end < data.endIndex, var keys = objects.last ?? nil {
                    let literal = data[index...end]
                    // Without a backslash a key is its bytes; only escapes need JSON's unescaping.
                    let key =
                        literal.contains(UInt8(ascii: "\\"))
                        ? (try? JSONSerialization.jsonObject(with: literal, options: .fragmentsAllowed)) as? String ?? String(decoding: literal, as: UTF8.self)
                        : String(decoding: literal.dropFirst().dropLast(), as: UTF8.self)
                    if keys.contains(key) { return key }
                    keys.insert(key)
                    objects[objects.count - 1] = keys
                    expectKey = false
                }
                index = end
            default: break
            }
            if index < data.endIndex { index = data.index(after: index) }
        }
        return nil
    }

    static func invalid(_ field: String, _ code: WireFormatError.Code) -> ServerError {
        ServerError(WireFormatError(code, field: field))
    }

    /// A client-supplied name made safe to echo: printable ASCII, at most 64 characters.
    static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }).prefix(64))
    }
}
