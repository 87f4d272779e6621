import Foundation

/// What one scan of a JSON text finds without parsing its values (strings are skipped, keys
/// compared after JSON unescaping, so `"a"` and `"\u0061"` are the same key): the rules a parser
/// does not check — a key named twice in one object (Foundation's parsers keep one silently),
/// a trailing comma, the nesting depth. The request bodies' strict decoding and WebAuthn's
/// `clientDataJSON` both read it.
package struct JSONShape: Sendable {
    /// Nesting depth of arrays and objects; the scan stops once it passes its maximum.
    package var depth = 0
    /// The first key that an object names twice.
    package var duplicateKey: String?
    /// Whether the first thing in the body other than whitespace opens an object.
    package var isObject = false
    /// Whether a comma comes right before a closing brace or bracket, which JSON (RFC 8259)
    /// does not allow and Foundation's parsers accept.
    package var trailingComma = false
    /// The keys of the outermost object.
    package var topLevelKeys: Set<String> = []

    private let maximumDepth: Int

    /// Scans `data`, stopping once the nesting passes `maximumDepth`.
    package init(of data: Data, maximumDepth: Int) {
        self.maximumDepth = maximumDepth
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
