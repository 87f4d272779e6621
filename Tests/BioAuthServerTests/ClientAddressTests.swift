@testable import BioAuthHTTP
import Foundation
import Testing

/// Who the client is behind proxies: the attacker writes the left end of X-Forwarded-For.
struct ClientAddressTests {
    let proxies = ClientAddressResolver(trustedProxies: [IPNetwork("10.0.0.0/8")!, IPNetwork("2001:db8:ffff::/48")!])

    @Test func theLeftmostForwardedAddressWhichTheClientWritesIsIgnored() {
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "1.2.3.4, 198.51.100.7") == "198.51.100.7")
        #expect(
            proxies.client(peer: "10.0.0.5", forwardedFor: "198.51.100.7, 10.0.0.9") == "198.51.100.7", "a second trusted hop is skipped")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "10.1.1.1, 10.0.0.9") == "10.1.1.1", "all trusted: the leftmost trusted hop")
    }

    @Test func forwardedForIsIgnoredWithoutTrustedProxiesOrFromAnUntrustedPeer() {
        #expect(ClientAddressResolver(trustedProxies: []).client(peer: "203.0.113.5", forwardedFor: "1.2.3.4") == "203.0.113.5")
        #expect(proxies.client(peer: "203.0.113.5", forwardedFor: "1.2.3.4") == "203.0.113.5")
        #expect(proxies.client(peer: "203.0.113.5", forwardedFor: nil) == "203.0.113.5")
    }

    @Test func garbageInTheChainStopsAtTheLastHopWeCanVouchFor() {
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "fail:client:x, 198.51.100.7") == "198.51.100.7")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "198.51.100.7, not-an-address") == "10.0.0.5")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "1.2.3.4:abc") == "10.0.0.5", "a port must be a port")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "1.2.3.4:65536") == "10.0.0.5")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "1.2.3.4:+80") == "10.0.0.5", "digits only")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "[2001:db8:1::1]x") == "10.0.0.5")
        #expect(
            proxies.client(peer: "10.0.0.5", forwardedFor: " \t198.51.100.7\t ,10.0.0.9 ") == "198.51.100.7", "spaces and tabs around a hop"
        )
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "198.51.100.7\u{A0}") == "10.0.0.5", "no other whitespace (RFC 9110 §5.6.3)")
    }

    /// Proxies that write the client's port (`ip:port`, `[v6]:port`) do not collapse every client onto the proxy.
    @Test func aForwardedAddressWithAPortIsTheAddress() {
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "1.2.3.4:80") == "1.2.3.4")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "198.51.100.7:54321, 10.0.0.9:443") == "198.51.100.7")
        #expect(proxies.client(peer: "10.0.0.5", forwardedFor: "[2001:db8:1:2::1]:443") == "2001:db8:1::/48")
    }

    @Test func ipv6ClientsAreCountedPerSlash48() {
        let a = proxies.client(peer: "10.0.0.5", forwardedFor: "2001:db8:1:2:aaaa::1")
        let b = proxies.client(peer: "10.0.0.5", forwardedFor: "[2001:db8:1:2:bbbb:cccc:dddd:eeee]")
        let otherSlash64 = proxies.client(peer: "10.0.0.5", forwardedFor: "2001:db8:1:ffff::1")
        let c = proxies.client(peer: "10.0.0.5", forwardedFor: "2001:db8:2::1")
        #expect(a == "2001:db8:1::/48" && a == b && a == otherSlash64, "one /48, whichever /64")
        #expect(c != a)
        #expect(proxies.client(peer: "2001:db8:ffff:1::9", forwardedFor: "198.51.100.7") == "198.51.100.7", "an IPv6 proxy range")
        #expect(proxies.client(peer: "::ffff:10.0.0.5", forwardedFor: "198.51.100.7") == "198.51.100.7", "IPv4-mapped IPv6 is IPv4")
    }

    /// Issue 43: the request limit counts an IPv6 client by its /64, so neighbours in one /48 keep
    /// their own budgets; guessing budgets keep the /48. IPv4 is itself for both.
    @Test func requestLimitsCountIPv6ClientsPerSlash64() {
        let a = proxies.subjects(peer: "10.0.0.5", forwardedFor: "2001:db8:1:2:aaaa::1")
        let b = proxies.subjects(peer: "10.0.0.5", forwardedFor: "[2001:db8:1:2:bbbb:cccc:dddd:eeee]:443")
        let neighbour = proxies.subjects(peer: "10.0.0.5", forwardedFor: "2001:db8:1:ffff::1")
        #expect(a.requests == "2001:db8:1:2::/64" && a.requests == b.requests, "one /64, whichever host")
        #expect(neighbour.requests == "2001:db8:1:ffff::/64" && neighbour.requests != a.requests)
        #expect(a.client == neighbour.client && a.client == "2001:db8:1::/48", "guessing budgets stay per /48")
        let v4 = proxies.subjects(peer: "10.0.0.5", forwardedFor: "198.51.100.7")
        #expect(v4.client == "198.51.100.7" && v4.requests == "198.51.100.7")
    }

    @Test func networksParseStrictly() {
        #expect(IPNetwork("10.0.0.0/8")?.description == "10.0.0.0/8")
        #expect(IPNetwork("::1")?.description == "0:0:0:0:0:0:0:1/128")
        for bad in ["10.0.0.0/33", "10.0.0/8", "example.com", "::1/129", ""] { #expect(IPNetwork(bad) == nil, "\(bad)") }
    }

    /// Rotating the address it writes into X-Forwarded-For gives an attacker no fresh failure budget.
    @Test func rotatingTheForwardedAddressDoesNotEscapeTheClientLockout() async throws {
        try await ServerHarness().test { api in
            for n in 0..<30 {
                let reply = try await api.post(
                    "/v1/login/password", ["username": "user\(n)", "password": "wrong password"], client: "192.0.2.\(n), 198.51.100.77")
                #expect(reply.status == 401)
            }
            let blocked = try await api.post(
                "/v1/login/password", ["username": "fresh", "password": "wrong password"], client: "192.0.2.200, 198.51.100.77")
            #expect(blocked.status == 429)
        }
    }
}
