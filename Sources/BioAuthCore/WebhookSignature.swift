import Crypto
import Foundation

/// The signature of a BioAuth webhook, in its `BioAuth-Signature` header:
/// `t=<Unix seconds>,v1=<lower-case hex of HMAC-SHA256(secret, "<t>." ‖ body)>`. A receiver
/// verifies it over the raw body bytes and refuses a time outside its replay window.
public enum WebhookSignature {
    /// The header that carries the signature.
    public static let header = "BioAuth-Signature"
    /// The header that carries the event id: deliveries are at least once, deduplicate by it.
    public static let eventIDHeader = "BioAuth-Event-Id"
    /// The replay window a receiver should apply (5 minutes either way).
    public static let defaultTolerance: TimeInterval = 300

    /// The header value for `body` sent at `time`.
    public static func sign(_ body: Data, secret: SymmetricKey, at time: Date) -> String {
        let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(seconds).".utf8) + body, using: secret)
        return "t=\(seconds),v1=" + Data(mac).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `value` is a valid signature of `body` with `secret`, made within `tolerance` of
    /// `now`. Strict: exactly `t=` digits, `,v1=` and 64 lower-case hex digits; the MAC is
    /// compared in constant time.
    public static func isValid(_ value: String, body: Data, secret: SymmetricKey, now: Date, tolerance: TimeInterval = defaultTolerance)
        -> Bool
    {
        guard let match = value.wholeMatch(of: /t=([0-9]{1,12}),v1=([0-9a-f]{64})/), let seconds = Int64(match.1),
            abs(now.timeIntervalSince1970 - Double(seconds)) <= tolerance
        else { return false }
        let hex = Array(match.2.utf8)
        let mac = Data(stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! })
        // The MAC covers `t` exactly as sent: "01795000000" is not "1795000000".
        return HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Data((match.1 + ".").utf8) + body, using: secret)
    }
}
