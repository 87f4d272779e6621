import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP address parsed strictly (`inet_pton`), in the form rate limits, failure budgets and known
/// addresses count it: IPv4 as itself, IPv6 by its /48 (a subscriber or a cloud tenant routinely
/// holds a /64 and often a /56 or /48, so counting single IPv6 addresses — or /64s — would let one
/// client rotate through 2⁶⁴ or 2¹⁶ fresh identities). IPv4-mapped IPv6 is IPv4.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 or 16 bytes.
    let bytes: [UInt8]

    /// Parses an address as proxies write it in `X-Forwarded-For`: `203.0.113.7`, `203.0.113.7:443`,
    /// `2001:db8::1`, `[2001:db8::1]` or `[2001:db8::1]:443` (a port, 0–65535, is dropped).
    init?(_ text: some StringProtocol) {
        var text = String(text.trimmingOptionalWhitespace)
        func isPort(_ port: Substring) -> Bool {
            (1...5).contains(port.count) && port.allSatisfy { $0.isASCII && $0.isNumber } && UInt16(port) != nil
        }
        if text.hasPrefix("[") {  // [v6] or [v6]:port
            guard let end = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: end)...]
            guard rest.isEmpty || (rest.first == ":" && isPort(rest.dropFirst())) else { return nil }
            text = String(text[text.index(after: text.startIndex)..<end])
        } else if text.count(where: { $0 == ":" }) == 1, let colon = text.firstIndex(of: ":") {  // v4:port (IPv6 has two colons or more)
            guard isPort(text[text.index(after: colon)...]) else { return nil }
            text = String(text[..<colon])
        }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            let raw = withUnsafeBytes(of: &v6) { Array($0) }
            bytes = raw[0..<12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] ? Array(raw[12...]) : raw
        } else {
            return nil
        }
    }

    /// The rate-limit subject: `203.0.113.7`, or `2001:db8:1::/48`.
    var description: String {
        if bytes.count == 4 { return "\(bytes[0]).\(bytes[1]).\(bytes[2]).\(bytes[3])" }
        let groups = stride(from: 0, to: 6, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/48"
    }

    /// The request-limit subject: `203.0.113.7`, or `2001:db8:1:2::/64` — one customer's network,
    /// so neighbours in a shared /48 never share a request budget.
    var requestSubject: String {
        if bytes.count == 4 { return description }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// Every group, for IPv6 (`2001:db8:0:0:0:0:0:1`); IPv4 as itself.
    var fullDescription: String {
        guard bytes.count == 16 else { return description }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(
            separator: ":")
    }

    /// True if this address lies in `network`.
    func isIn(_ network: IPNetwork) -> Bool {
        guard network.address.bytes.count == bytes.count else { return false }
        var remaining = network.prefixLength
        for (mine, theirs) in zip(bytes, network.address.bytes) where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if mine & mask != theirs & mask { return false }
            remaining -= bits
        }
        return true
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`), or a single address.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    let address: IPAddress
    let prefixLength: Int

    /// Parses `address[/prefix]`; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(first) else { return nil }
        let maximum = address.bytes.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...maximum).contains(length) else { return nil }
            prefixLength = length
        } else {
            prefixLength = maximum
        }
        self.address = address
    }

    public var description: String { "\(address.fullDescription)/\(prefixLength)" }
}

/// Who the client is, given the TCP peer and, behind proxies you run, `X-Forwarded-For`.
///
/// Each proxy appends the address it received the request from, so only the right end of the
/// header can be trusted: the client is the rightmost address that is not one of your proxies.
/// The left end is whatever the client chose to send. Without trusted proxies the header is
/// ignored and the peer is the client.
struct ClientAddressResolver: Sendable {
    /// Your proxies. Empty: ignore `X-Forwarded-For`.
    let trustedProxies: [IPNetwork]

    /// The client as guessing budgets count it (``IPAddress/description``: IPv6 by its /48).
    func client(peer: String?, forwardedFor: String?) -> String {
        subjects(peer: peer, forwardedFor: forwardedFor).client
    }

    /// The client address and, for the request limit, its /64 (``IPAddress/requestSubject``).
    func subjects(peer: String?, forwardedFor: String?) -> (client: String, requests: String) {
        func subjects(_ address: IPAddress) -> (client: String, requests: String) { (address.description, address.requestSubject) }
        let peerAddress = peer.flatMap { IPAddress($0) }
        let unknown = peer ?? "unknown"
        guard !trustedProxies.isEmpty, let forwardedFor else { return peerAddress.map(subjects) ?? (unknown, unknown) }
        // A request that did not come through a trusted proxy tells us nothing with its header.
        if let peerAddress, !isTrusted(peerAddress) { return subjects(peerAddress) }
        var lastTrusted = peerAddress.map(subjects) ?? ("unknown", "unknown")
        for hop in forwardedFor.split(separator: ",").reversed() {
            guard let address = IPAddress(hop) else { return lastTrusted }  // garbage: stop at the last hop we can vouch for
            if !isTrusted(address) { return subjects(address) }
            lastTrusted = subjects(address)
        }
        return lastTrusted
    }

    private func isTrusted(_ address: IPAddress) -> Bool { trustedProxies.contains { address.isIn($0) } }
}
