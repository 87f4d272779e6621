import Foundation

/// A CBOR data item (RFC 8949), as far as App Attest uses CBOR: integers, byte and text strings,
/// arrays, maps, `true`/`false`/`null`.
///
/// No CBOR package is among the dependencies this package may use, so this is a small strict
/// decoder: definite lengths only, the shortest encoding of every length and integer, text that is
/// valid UTF-8, map keys unique, nesting at most 16 deep, no tags, floats or undefined. Anything else
/// is refused with a ``CBORError``, never guessed at.
public enum CBOR: Sendable, Hashable {
    case unsigned(UInt64)
    /// A negative integer -1 - n, stored as n.
    case negative(UInt64)
    case bytes(Data)
    case text(String)
    case array([CBOR])
    /// Entries in encoded order; keys are unique.
    case map([(key: CBOR, value: CBOR)])
    case bool(Bool)
    case null

    public static func == (lhs: CBOR, rhs: CBOR) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)), (.negative(let a), .negative(let b)): a == b
        case (.bytes(let a), .bytes(let b)): a == b
        case (.text(let a), .text(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .unsigned(let n): hasher.combine(0); hasher.combine(n)
        case .negative(let n): hasher.combine(1); hasher.combine(n)
        case .bytes(let d): hasher.combine(2); hasher.combine(d)
        case .text(let s): hasher.combine(3); hasher.combine(s)
        case .array(let a): hasher.combine(4); hasher.combine(a)
        case .map(let m):
            hasher.combine(5)
            for entry in m { hasher.combine(entry.key); hasher.combine(entry.value) }
        case .bool(let b): hasher.combine(6); hasher.combine(b)
        case .null: hasher.combine(7)
        }
    }

    /// The value under a text key of a map; nil for a missing key or a value that is not a map.
    public subscript(key: String) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(key) }?.value
    }

    /// An integer that fits in `Int` (COSE labels and algorithm identifiers); nil otherwise.
    public var intValue: Int? {
        switch self {
        case .unsigned(let n): n <= UInt64(Int.max) ? Int(n) : nil
        case .negative(let n): n < UInt64(Int.max) ? -1 - Int(n) : nil
        default: nil
        }
    }

    /// The value under an integer key of a map (a COSE_Key's labels); nil for a missing key or a
    /// value that is not a map.
    public subscript(label: Int) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key.intValue == label }?.value
    }

    public var bytesValue: Data? {
        if case .bytes(let data) = self { return data }
        return nil
    }

    public var textValue: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    public var arrayValue: [CBOR]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// Decodes exactly one data item that fills `data`.
    public init(decoding data: some DataProtocol) throws(CBORError) {
        var reader = Reader(bytes: [UInt8](data))
        self = try reader.item(depth: 0)
        guard reader.offset == reader.bytes.count else { throw CBORError(.trailingBytes, offset: reader.offset) }
    }

    /// Decodes one data item at the start of `data` and says how many bytes it took (authenticator
    /// data is followed by other fields).
    public static func decodePrefix(_ data: some DataProtocol) throws(CBORError) -> (item: CBOR, length: Int) {
        var reader = Reader(bytes: [UInt8](data))
        let item = try reader.item(depth: 0)
        return (item, reader.offset)
    }

    /// The encoding this decoder reads back: definite lengths, shortest heads, map entries in their order.
    public var encoded: Data {
        var out = Data()
        func head(_ major: UInt8, _ value: UInt64) {
            let type = major << 5
            guard value >= 24 else { return out.append(type | UInt8(value)) }
            // The shortest of 1, 2, 4 or 8 bytes (additional information 24…27).
            let (info, count): (UInt8, Int) = value <= 0xFF ? (24, 1) : value <= 0xFFFF ? (25, 2) : value <= 0xFFFF_FFFF ? (26, 4) : (27, 8)
            out.append(type | info)
            out.append(contentsOf: (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) })
        }
        func write(_ item: CBOR) {
            switch item {
            case .unsigned(let n): head(0, n)
            case .negative(let n): head(1, n)
            case .bytes(let data): head(2, UInt64(data.count)); out.append(data)
            case .text(let text): head(3, UInt64(text.utf8.count)); out.append(contentsOf: text.utf8)
            case .array(let items): head(4, UInt64(items.count)); items.forEach(write)
            case .map(let entries):
                head(5, UInt64(entries.count))
                for entry in entries { write(entry.key); write(entry.value) }
            case .bool(let value): out.append(value ? 0xF5 : 0xF4)
            case .null: out.append(0xF6)
            }
        }
        write(self)
        return out
    }

    /// The deepest nesting of arrays and maps accepted.
    public static let maximumDepth = 16

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw CBORError(.truncated, offset: offset) }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: UInt64) throws(CBORError) -> ArraySlice<UInt8> {
            guard count <= UInt64(bytes.count - offset) else { throw CBORError(.truncated, offset: offset) }
            let end = offset + Int(count)
            defer { offset = end }
            return bytes[offset..<end]
        }

        /// The argument of a head, in its shortest form only.
        mutating func argument(_ info: UInt8, at start: Int) throws(CBORError) -> UInt64 {
            let value: UInt64
            let minimum: UInt64
            switch info {
            case 0...23: return UInt64(info)
            case 24: (value, minimum) = (UInt64(try byte()), 24)
            case 25: (value, minimum) = (try big(2), 0x100)
            case 26: (value, minimum) = (try big(4), 0x1_0000)
            case 27: (value, minimum) = (try big(8), 0x1_0000_0000)
            case 31: throw CBORError(.indefiniteLength, offset: start)
            default: throw CBORError(.reserved, offset: start)
            }
            guard value >= minimum else { throw CBORError(.notShortest, offset: start) }
            return value
        }

        mutating func big(_ count: Int) throws(CBORError) -> UInt64 {
            try take(UInt64(count)).reduce(0) { $0 << 8 | UInt64($1) }
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            let start = offset
            let head = try byte()
            let major = head >> 5
            let info = head & 0x1F
            if major == 7 {
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                default: throw CBORError(.unsupported, offset: start)
                }
            }
            if major == 6 { throw CBORError(.unsupported, offset: start) }
            let argument = try argument(info, at: start)
            switch major {
            case 0: return .unsigned(argument)
            case 1: return .negative(argument)
            case 2: return .bytes(Data(try take(argument)))
            case 3:
                guard let text = String(validating: try take(argument), as: UTF8.self) else { throw CBORError(.invalidUTF8, offset: start) }
                return .text(text)
            case 4:
                guard depth < CBOR.maximumDepth else { throw CBORError(.tooDeep, offset: start) }
                // Each item takes at least one byte: a count beyond what is left is truncated input, not an allocation.
                guard argument <= UInt64(bytes.count - offset) else { throw CBORError(.truncated, offset: start) }
                var items: [CBOR] = []
                items.reserveCapacity(Int(argument))
                for _ in 0..<argument { items.append(try item(depth: depth + 1)) }
                return .array(items)
            default:  // 5: map
                guard depth < CBOR.maximumDepth else { throw CBORError(.tooDeep, offset: start) }
                guard argument <= UInt64(bytes.count - offset) / 2 else { throw CBORError(.truncated, offset: start) }
                var entries: [(key: CBOR, value: CBOR)] = []
                var keys = Set<CBOR>()
                for _ in 0..<argument {
                    let keyOffset = offset
                    let key = try item(depth: depth + 1)
                    guard keys.insert(key).inserted else { throw CBORError(.duplicateKey, offset: keyOffset) }
                    entries.append((key, try item(depth: depth + 1)))
                }
                return .map(entries)
            }
        }
    }
}

/// CBOR that this decoder refuses, with the byte offset where it went wrong (never the bytes).
public struct CBORError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong. Extensible: new codes may be added in minor releases.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        public static let truncated = Code("truncated")
        public static let trailingBytes = Code("trailingBytes")
        public static let indefiniteLength = Code("indefiniteLength")
        public static let notShortest = Code("notShortest")
        public static let reserved = Code("reserved")
        /// Tags, floats, `undefined` and simple values: App Attest uses none.
        public static let unsupported = Code("unsupported")
        public static let invalidUTF8 = Code("invalidUTF8")
        public static let duplicateKey = Code("duplicateKey")
        public static let tooDeep = Code("tooDeep")
    }

    public let code: Code
    public let offset: Int

    public init(_ code: Code, offset: Int) {
        self.code = code
        self.offset = offset
    }

    public var description: String { "CBOR \(code) at byte \(offset)" }
}
