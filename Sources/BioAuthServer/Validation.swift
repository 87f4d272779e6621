import BioAuthCore
import Foundation

/// Field checks for client input. Each failure names the field, never echoes the value.
enum Validate {
    static func base64URL(_ text: String, field: String, count: ClosedRange<Int>) throws(ServerError) -> Data {
        guard text.utf8.count <= (count.upperBound * 4 + 2) / 3 + 1 else { throw ServerError(WireFormatError(.wrongLength, field: field)) }
        guard let data = Base64URL.decode(text) else { throw ServerError(WireFormatError(.malformedBase64, field: field)) }
        guard count.contains(data.count) else { throw ServerError(WireFormatError(.wrongLength, field: field)) }
        return data
    }

    /// Usernames: 1–64 of `a-z A-Z 0-9 . _ @ -`.
    static func username(_ text: String, field: String = "username") throws(ServerError) -> String {
        guard (1...64).contains(text.utf8.count),
            text.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._@-".unicodeScalars.contains($0)) })
        else { throw ServerError(WireFormatError(.invalidValue, field: field)) }
        return text
    }

    /// Device ids: the lower-case UUIDs the server assigns.
    static func deviceID(_ text: String, field: String = "deviceId") throws(ServerError) -> String {
        guard text.utf8.count == 36, UUID(uuidString: text) != nil, text == text.lowercased() else {
            throw ServerError(WireFormatError(.invalidValue, field: field))
        }
        return text
    }

    /// Passwords: 8–1024 bytes (an upper bound keeps hashing cheap to refuse).
    static func password(_ text: String) throws(ServerError) -> String {
        guard (8...1024).contains(text.utf8.count) else { throw ServerError(WireFormatError(.wrongLength, field: "password")) }
        return text
    }

    /// Device names: 1–64 characters, no control characters.
    static func deviceName(_ text: String) throws(ServerError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard (1...64).contains(trimmed.count), !trimmed.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
            throw ServerError(WireFormatError(.invalidValue, field: "name"))
        }
        return trimmed
    }
}
