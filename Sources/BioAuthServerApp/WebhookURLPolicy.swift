import Foundation

/// Which webhook URLs `bioauth-server` accepts: the bodies are the account's events and, for the
/// recovery webhook, the recovery codes, so plain http only to loopback unless the operator names
/// the risk (`--insecure-http-webhooks`).
enum WebhookURLPolicy {
    /// Whether `url` may carry webhooks: https, or http to loopback, or any http when allowed.
    static func isSafe(_ url: String, allowingHTTP: Bool) -> Bool {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else { return false }
        if scheme == "https" || allowingHTTP { return true }
        guard scheme == "http", let host = components.host?.lowercased() else { return false }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        let loopbackIPv4 = octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
        return host == "localhost" || host == "::1" || host == "[::1]" || loopbackIPv4
    }
}
