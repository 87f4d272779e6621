import Foundation

/// Base64url without padding (RFC 4648 §5), the encoding of every binary field in protocol v1.
///
/// Decoding is strict: only the URL-safe alphabet, no padding, no whitespace, and the unused
/// low bits of the last character must be zero, so each byte string has exactly one encoding.
public enum Base64URL {
    /// Encodes bytes as base64url without padding.
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        // Foundation encodes; the alphabet is swapped byte by byte (no string searching).
        var encoded = Data(bytes).base64EncodedData()
        while encoded.last == UInt8(ascii: "=") { encoded.removeLast() }
        for index in encoded.indices {
            switch encoded[index] {
            case UInt8(ascii: "+"): encoded[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): encoded[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Decodes canonical base64url without padding; returns nil for anything else.
    public static func decode(_ text: String) -> Data? {
        var standard = Data(capacity: text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): standard.append(byte)
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            default: return nil
            }
        }
        switch standard.count % 4 {
        case 0: break
        case 2: standard.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
        case 3: standard.append(UInt8(ascii: "="))
        default: return nil
        }
        guard let data = Data(base64Encoded: standard) else { return nil }
        // Reject non-canonical forms (non-zero unused bits): re-encoding must give the input back.
        guard encode(data) == text else { return nil }
        return data
    }
}

extension Data {
    /// Lower-case hexadecimal.
    public var hexString: String { map { String(format: "%02x", $0) }.joined() }

    /// Parses an even-length hexadecimal string; nil for anything else.
    public init?(hexString: String) {
        let utf8 = Array(hexString.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
