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
    static func username(_ text: String, field: String = "username") throws(ServerError) -> UserID {
        guard (1...64).contains(text.utf8.count),
            text.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._@-".unicodeScalars.contains($0)) }
            )
        else { throw ServerError(WireFormatError(.invalidValue, field: field)) }
        return UserID(text)
    }

    /// User ids follow the username rule.
    static func userID(_ id: UserID, field: String = "userId") throws(ServerError) -> UserID {
        try username(id.rawValue, field: field)
    }

    /// Device ids: the lower-case UUIDs the server assigns.
    static func deviceID(_ id: DeviceID, field: String = "deviceId") throws(ServerError) -> DeviceID {
        try serverAssigned(id, field: field)
    }

    /// An id the server assigned (devices, sessions, enrolment requests): a lower-case UUID.
    static func serverAssigned<Record>(_ id: RecordID<Record>, field: String) throws(ServerError) -> RecordID<Record> {
        let text = id.rawValue
        guard text.utf8.count == 36, UUID(uuidString: text) != nil, text == text.lowercased() else {
            throw ServerError(WireFormatError(.invalidValue, field: field))
        }
        return id
    }

    /// An entered recovery code: 1–32 letters, digits, dashes and spaces (the code is 12 Crockford
    /// characters; ``RecoveryCode/hash(ofEntered:)`` ignores case, dashes and spaces).
    static func recoveryCode(_ code: String, field: String = "code") throws(ServerError) -> TokenHash {
        guard (1...32).contains(code.utf8.count), code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == " ") })
        else {
            throw ServerError(.invalidRequest, field: field, detail: "1 to 32 letters, digits and dashes")
        }
        return RecoveryCode.hash(ofEntered: code)
    }

    /// Passwords: 8–1024 Unicode code points, as JSON Schema's `minLength`/`maxLength` count them
    /// (the upper bound keeps hashing cheap to refuse).
    static func password(_ text: String) throws(ServerError) -> String {
        guard (8...1024).contains(text.unicodeScalars.count) else { throw ServerError(WireFormatError(.wrongLength, field: "password")) }
        return text
    }

    /// Characters a device name may not hold: C0 and C1 controls, the invisible formatting
    /// characters that could disguise a name shown in an approval prompt (soft hyphen, zero-width
    /// characters, bidirectional overrides and isolates, byte-order mark), and commas of every
    /// script — the approval text's separator (`Add device ‹name›, key ‹fingerprint›`), which a
    /// name could otherwise imitate. `openapi.yaml` states the same set as a pattern.
    static let forbiddenInNames: CharacterSet = {
        var set = CharacterSet(charactersIn: Unicode.Scalar(0x00)!...Unicode.Scalar(0x1F)!)
        let invisible: [ClosedRange<UInt32>] = [
            0x7F...0x9F, 0xAD...0xAD, 0x61C...0x61C, 0x180E...0x180E, 0x200B...0x200F, 0x202A...0x202E, 0x2060...0x206F, 0xFEFF...0xFEFF,
        ]
        let commas: [ClosedRange<UInt32>] = [
            0x2C...0x2C, 0x60C...0x60C, 0x201A...0x201A, 0x3001...0x3001, 0xFE50...0xFE51, 0xFF0C...0xFF0C, 0xFF64...0xFF64,
        ]
        for range in invisible + commas {
            set.insert(charactersIn: Unicode.Scalar(range.lowerBound)!...Unicode.Scalar(range.upperBound)!)
        }
        return set
    }()

    /// Device names: at most 64 code points, at least one that is not white space, none of
    /// ``forbiddenInNames``, and no run of 8 or more hex digits (a name cannot pose as a key
    /// fingerprint); leading and trailing white space is trimmed.
    static func deviceName(_ text: String) throws(ServerError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.unicodeScalars.count <= 64, !trimmed.isEmpty, !text.unicodeScalars.contains(where: forbiddenInNames.contains),
            longestHexRun(text) < 8
        else {
            throw ServerError(WireFormatError(.invalidValue, field: "name"))
        }
        return trimmed
    }

    private static func longestHexRun(_ text: String) -> Int {
        var longest = 0, run = 0
        for scalar in text.unicodeScalars {
            run = scalar.isASCII && Character(scalar).isHexDigit ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }
}
