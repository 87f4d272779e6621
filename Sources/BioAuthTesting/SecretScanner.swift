import BioAuthCore
import Crypto
import Foundation

/// Looks for secrets in text: each secret's bytes as hex (either case), base64 and base64url,
/// and secret strings (passcodes, passwords) as they are.
///
/// ```swift
/// var scanner = SecretScanner()
/// scanner.add(signature)
/// #expect(scanner.leaks(in: String(describing: error)).isEmpty)
/// ```
public struct SecretScanner: Sendable {
    private var needles: [(label: String, text: String)] = []

    public init() {}

    /// Registers a byte secret under a label used in reports (the label is not secret).
    public mutating func add(_ bytes: Data, label: String = "secret") {
        guard bytes.count >= 4 else { return }  // shorter strings occur by chance
        let hex = bytes.hexString
        needles.append((label + " (hex)", hex))
        needles.append((label + " (HEX)", hex.uppercased()))
        let base64 = bytes.base64EncodedString()
        needles.append((label + " (base64)", String(base64.prefix(while: { $0 != "=" }))))
        needles.append((label + " (base64url)", Base64URL.encode(bytes)))
    }

    public mutating func add(_ secret: SecretBytes, label: String = "secret") { add(secret.data, label: label) }
    public mutating func add(_ key: SymmetricKey, label: String = "key") { add(key.withUnsafeBytes { Data($0) }, label: label) }

    /// Registers a secret string (a passcode, a password).
    public mutating func add(_ text: String, label: String = "secret") {
        needles.append((label, text))
    }

    public var count: Int { needles.count }

    /// The labels of secrets found in `text`.
    public func leaks(in text: String) -> [String] {
        needles.filter { text.contains($0.text) }.map(\.label)
    }
}
