import Foundation

/// Base64url without padding (RFC 4648 §5), the encoding of every binary field in protocol v1.
///
/// Decoding is strict: only the URL-safe alphabet, no padding, no whitespace, and the unused
/// low bits of the last character must be zero, so each byte string has exactly one encoding.
public enum Base64URL {
    /// Encodes bytes as base64url without padding.
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        // Foundation encodes; the alphabet is swapped byte by byte (no string searching).
        let standard = Data(bytes).base64EncodedString()
        var encoded: [UInt8] = []
        encoded.reserveCapacity(standard.utf8.count)
        for byte in standard.utf8 {
            switch byte {
            case UInt8(ascii: "+"): encoded.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): encoded.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): break
            default: encoded.append(byte)
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Decodes canonical base64url without padding; returns nil for anything else.
    public static func decode(_ text: String) -> Data? {
        var standard: [UInt8] = []
        standard.reserveCapacity(text.utf8.count + 3)
        var last: UInt8 = 0  // the 6-bit value of the last character
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): last = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): last = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): last = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): last = 62
            case UInt8(ascii: "_"): last = 63
            default: return nil
            }
            standard.append(byte == UInt8(ascii: "-") ? UInt8(ascii: "+") : byte == UInt8(ascii: "_") ? UInt8(ascii: "/") : byte)
        }
        // Canonical only: the bits the last character carries beyond the final byte must be zero.
        switch standard.count % 4 {
        case 0: break
        case 2:
            guard last & 0x0F == 0 else { return nil }
            standard += [UInt8(ascii: "="), UInt8(ascii: "=")]
        case 3:
            guard last & 0x03 == 0 else { return nil }
            standard.append(UInt8(ascii: "="))
        default: return nil
        }
        return Data(base64Encoded: Data(standard))
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
