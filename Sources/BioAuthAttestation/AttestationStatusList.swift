import Foundation
import X509

/// Google's attestation status list: the attestation certificates that are revoked or suspended
/// (leaked OEM keyboxes among them), keyed by serial number
/// (developer.android.com/privacy-and-security/security-key-attestation#certificate_status,
/// published at ``AttestationStatusList/googleURL``).
///
/// Every serial the list names refuses a chain that carries it, whatever its status says: the list
/// holds only certificates without a normal, valid status, so a status this version does not know
/// refuses too.
public struct AttestationStatusList: Sendable, Hashable {
    /// Where Google publishes the list.
    public static let googleURL = URL(string: "https://android.googleapis.com/attestation/status")!

    /// One listed certificate.
    public struct Entry: Sendable, Hashable, CustomStringConvertible {
        /// `REVOKED` or `SUSPENDED` (schema draft of the list); kept as listed.
        public let status: String
        /// `UNSPECIFIED`, `KEY_COMPROMISE`, `CA_COMPROMISE`, `SUPERSEDED`, `SOFTWARE_FLAW`; nil when not given.
        public let reason: String?
        /// When the listed certificate expires (`YYYY-MM-DD`), if the list says.
        public let expires: String?

        public init(status: String, reason: String? = nil, expires: String? = nil) {
            self.status = status
            self.reason = reason
            self.expires = expires
        }

        /// `REVOKED (KEY_COMPROMISE)`: the list's words only when they are upper-case names, so a
        /// list's free text never reaches a log line or an answer.
        public var description: String {
            func name(_ text: String?) -> String? {
                guard let text, (1...32).contains(text.count), text.allSatisfy({ $0.isASCII && ($0.isUppercase || $0 == "_") }) else {
                    return nil
                }
                return text
            }
            return "\(name(status) ?? "LISTED") (\(name(reason) ?? "UNSPECIFIED"))"
        }
    }

    /// Entries by serial number: lower-case hex without leading zeros, as the list keys them.
    public let entries: [String: Entry]

    public init(entries: [String: Entry]) {
        var normalised: [String: Entry] = [:]
        for (serial, entry) in entries { normalised[Self.key(serial)] = entry }
        self.entries = normalised
    }

    /// Decodes the list's JSON: an object with `entries`, each a serial mapped to an object with a
    /// string `status`. Unknown fields are ignored (the format may grow); anything else is refused.
    public init(json data: Data) throws(AttestationStatusListError) {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let listed = object["entries"] as? [String: Any]
        else {
            throw AttestationStatusListError("not a status list: a JSON object with \"entries\" is expected")
        }
        var entries: [String: Entry] = [:]
        for (serial, value) in listed {
            guard !serial.isEmpty, serial.count <= 64, serial.allSatisfy(\.isHexDigit) else {
                throw AttestationStatusListError("an entry's key is not a hexadecimal serial number")
            }
            guard let fields = value as? [String: Any], let status = fields["status"] as? String else {
                throw AttestationStatusListError("an entry has no status")
            }
            entries[Self.key(serial)] = Entry(status: status, reason: fields["reason"] as? String, expires: fields["expires"] as? String)
        }
        self.entries = entries
    }

    /// The list's JSON, entries sorted: what `bioauth attestation status update` writes.
    public func json() -> Data {
        var listed: [String: Any] = [:]
        for (serial, entry) in entries {
            var fields: [String: Any] = ["status": entry.status]
            if let reason = entry.reason { fields["reason"] = reason }
            if let expires = entry.expires { fields["expires"] = expires }
            listed[serial] = fields
        }
        // Strings and objects only: serialisation cannot fail.
        return (try? JSONSerialization.data(withJSONObject: ["entries": listed], options: [.sortedKeys, .prettyPrinted])) ?? Data()
    }

    /// The entry for a certificate's serial number, if listed.
    public func entry(for serial: Certificate.SerialNumber) -> Entry? {
        entries[Self.key(serial)]
    }

    /// The list's key for a serial number: lower-case hex without leading zeros.
    public static func key(_ serial: Certificate.SerialNumber) -> String {
        key(serial.bytes.map { String(format: "%02x", $0) }.joined())
    }

    /// The list's key for a serial number written in hex (any case, any leading zeros).
    public static func key(_ hex: String) -> String {
        let trimmed = hex.lowercased().drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : String(trimmed)
    }
}

/// A status list that cannot be read; says why, never the list's bytes.
public struct AttestationStatusListError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "attestation status list: \(reason)" }
}
