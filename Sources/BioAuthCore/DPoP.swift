import Crypto
import Foundation

/// A DPoP proof (RFC 9449 §4): a JWT the client signs for one HTTP request with a key that never
/// leaves its device, so a token bound to that key (its JWK thumbprint, ``DevicePublicKey/jwkThumbprint``)
/// is useless to whoever copies it. BioAuth accepts ES256 over P-256 only — the Secure Enclave's
/// curve — and parses strictly: anything else is a ``DPoPError``.
///
/// Built from a compact proof, it has passed the checks that need nothing but the proof (RFC 9449
/// §4.3 steps 2–7: three segments, `typ` `dpop+jwt`, `alg` `ES256`, a public `jwk` in the header,
/// the signature by that key, the claims present and well typed). ``check(method:url:at:window:accessToken:nonces:)``
/// does the request's checks; remembering `jti` is the verifier's (a server keeps it for the window).
public struct DPoPProof: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The key the proof carries and was signed with.
    public let key: DevicePublicKey
    /// The key's JWK thumbprint (RFC 7638, SHA-256, base64url): what a bound token's `cnf.jkt` holds.
    public let thumbprint: String
    /// The proof's unique id.
    public let jti: String
    /// `htm`: the HTTP method it was made for.
    public let method: String
    /// `htu`: the URL it was made for.
    public let url: String
    /// `iat`, whole seconds.
    public let issuedAt: Date
    /// `ath`: base64url SHA-256 of the access token it accompanies (resource requests).
    public let accessTokenHash: String?
    /// `nonce`: a value the server handed out (`DPoP-Nonce`).
    public let nonce: String?

    /// The `DPoP` header's largest accepted size, in bytes: a P-256 proof is under 1 KiB.
    public static let maximumSize = 4096

    /// Parses `compact` and verifies its signature by the key in its header.
    public init(_ compact: String) throws(DPoPError) {
        guard compact.utf8.count <= Self.maximumSize else { throw DPoPError(.malformed, "larger than \(Self.maximumSize) bytes") }
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])), let payloadBytes = Base64URL.decode(String(parts[1])),
            let signature = Base64URL.decode(String(parts[2]))
        else { throw DPoPError(.malformed, "not a compact JWS of three base64url parts") }
        let header: Header, claims: Claims
        do { header = try JSONDecoder().decode(Header.self, from: headerBytes) } catch {
            throw DPoPError(.malformed, "header: \(Self.reason(error))")
        }
        guard header.typ == "dpop+jwt" else { throw DPoPError(.malformed, "typ is not dpop+jwt") }
        guard header.alg == "ES256" else { throw DPoPError(.unsupportedAlgorithm, "alg must be ES256") }
        guard header.jwk.d == nil else { throw DPoPError(.malformed, "the jwk holds a private key") }
        guard header.jwk.kty == "EC", header.jwk.crv == "P-256", let x = Base64URL.decode(header.jwk.x),
            let y = Base64URL.decode(header.jwk.y),
            x.count == 32, y.count == 32, let key = try? DevicePublicKey(x963Representation: [0x04] + x + y, field: "jwk")
        else { throw DPoPError(.malformed, "the jwk is not a P-256 public key") }
        guard key.isValidSignature(raw: signature, for: Data(parts[0].utf8) + Data(".".utf8) + Data(parts[1].utf8)) else {
            throw DPoPError(.signature, "the signature is not the jwk's")
        }
        do { claims = try JSONDecoder().decode(Claims.self, from: payloadBytes) } catch {
            throw DPoPError(.malformed, "claims: \(Self.reason(error))")
        }
        guard (1...512).contains(claims.jti.utf8.count) else { throw DPoPError(.malformed, "jti must be 1 to 512 bytes") }
        self.key = key
        thumbprint = key.jwkThumbprint
        jti = claims.jti
        method = claims.htm
        url = claims.htu
        issuedAt = Date(timeIntervalSince1970: TimeInterval(claims.iat))
        accessTokenHash = claims.ath
        nonce = claims.nonce
    }

    /// The request's checks (RFC 9449 §4.3 steps 8–12): `htm` is `method`; `htu` is `url`, both
    /// without query or fragment and normalised (scheme and host in lower case, no default port,
    /// `/` for an empty path); `iat` lies within `window` of `now` (a proof from before it, or
    /// from after `now` plus its skew, is refused); `ath` is the hash of `accessToken` when one is
    /// presented (and absent otherwise is fine); `nonce` is one of `nonces` when the server asks for
    /// one (its current nonce and those it still accepts); none asked for when empty.
    public func check(
        method: String, url: String, at now: Date, window: DPoPWindow = DPoPWindow(), accessToken: String? = nil, nonces: [String] = []
    )
        throws(DPoPError)
    {
        guard self.method == method else { throw DPoPError(.method, "htm is not \(method)") }
        guard let claimed = Self.normalisedURL(self.url), claimed == Self.normalisedURL(url) else {
            throw DPoPError(.url, "htu is not this request's URL")
        }
        guard issuedAt >= now.addingTimeInterval(-window.maximumAge), issuedAt <= now.addingTimeInterval(window.clockSkew) else {
            throw DPoPError(.issuedAt, "iat is outside the accepted window")
        }
        if let accessToken {
            guard let accessTokenHash, constantTimeEquals(Data(accessTokenHash.utf8), Data(Self.accessTokenHash(accessToken).utf8)) else {
                throw DPoPError(.accessTokenHash, "ath is not the access token's hash")
            }
        }
        if !nonces.isEmpty {
            guard let given = self.nonce else { throw DPoPError(.nonceRequired, "the server asks for its nonce") }
            // Every candidate is compared, so the time taken says nothing about which one matched.
            let matches = nonces.map { constantTimeEquals(Data(given.utf8), Data($0.utf8)) }
            guard matches.contains(true) else { throw DPoPError(.nonceRequired, "the nonce is not current") }
        }
    }

    /// What a proof is for, never its `jti`, `ath` or nonce: descriptions and `dump()` show no more.
    public var description: String { "DPoPProof(\(method) \(url), iat \(Int64(issuedAt.timeIntervalSince1970)), jkt \(thumbprint))" }
    public var customMirror: Mirror { Mirror(self, children: ["method": method, "url": url, "thumbprint": thumbprint]) }

    /// `ath`: base64url of SHA-256 of the access token's ASCII.
    public static func accessTokenHash(_ accessToken: String) -> String { Base64URL.encode(SHA256.hash(data: Data(accessToken.utf8))) }

    /// A proof for `method` and `url` made by `key`, signing with `sign` (a raw `r‖s`, 64 bytes, of
    /// SHA-256 over its input: what a Secure Enclave key's ECDSA gives, converted from DER). `jti`
    /// is 16 random bytes unless given. A client's half of the protocol.
    public static func make(
        key: DevicePublicKey, method: String, url: String, at now: Date, accessToken: String? = nil, nonce: String? = nil,
        jti: String = Base64URL.encode(SecretBytes.random(count: 16).data), sign: (Data) throws -> Data
    ) rethrows -> String {
        let point = key.x963Representation
        let header =
            #"{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(point[1..<33]))","y":"\#(Base64URL.encode(point[33..<65]))"}}"#
        var claims = Claims(jti: jti, htm: method, htu: normalisedURL(url) ?? url, iat: Int64(now.timeIntervalSince1970.rounded(.down)))
        claims.ath = accessToken.map(accessTokenHash)
        claims.nonce = nonce
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding four strings and an integer cannot fail.
        let payload = (try? encoder.encode(claims)) ?? Data()
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try sign(Data(input.utf8)))
    }

    /// `url` without query and fragment, scheme and host in lower case, without the scheme's default
    /// port, `/` for an empty path (RFC 3986 §6.2.2, §6.2.3); nil for what is not an absolute HTTP(S) URL.
    public static func normalisedURL(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http",
            let host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.password == nil
        else { return nil }
        let port = components.port.flatMap { (scheme == "https" && $0 == 443) || (scheme == "http" && $0 == 80) ? nil : $0 }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return "\(scheme)://\(host)\(port.map { ":\($0)" } ?? "")\(path)"
    }

    private static func reason(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        switch error {
        case .keyNotFound(let key, _): return "\(key.stringValue) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(context.codingPath.last?.stringValue ?? "a value") has the wrong type"
        default: return "not JSON"
        }
    }

    struct Header: Codable {
        var typ: String
        var alg: String
        var jwk: Key
        struct Key: Codable {
            var kty: String
            var crv: String
            var x: String
            var y: String
            var d: String?
        }
    }

    struct Claims: Codable {
        var jti: String
        var htm: String
        var htu: String
        var iat: Int64
        var ath: String?
        var nonce: String?
    }
}

/// How far a proof's `iat` may lie from the verifier's clock.
public struct DPoPWindow: Sendable, Hashable {
    /// How old a proof may be (300 s); its `jti` must be remembered this long.
    public var maximumAge: TimeInterval
    /// How far ahead of the verifier's clock a proof may be dated (60 s).
    public var clockSkew: TimeInterval

    public init(maximumAge: TimeInterval = 300, clockSkew: TimeInterval = 60) {
        self.maximumAge = maximumAge
        self.clockSkew = clockSkew
    }
}

/// Why a DPoP proof was refused. Its description says what failed, never the proof.
public struct DPoPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What failed. Extensible: new codes may be added in minor releases.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        private init(_ name: String) { description = name }

        /// Not a compact JWS with the header and claims RFC 9449 §4.2 fixes.
        public static let malformed = Code("malformed")
        /// An `alg` other than ES256.
        public static let unsupportedAlgorithm = Code("unsupportedAlgorithm")
        public static let signature = Code("signature")
        public static let method = Code("method")
        public static let url = Code("url")
        public static let issuedAt = Code("issuedAt")
        public static let accessTokenHash = Code("accessTokenHash")
        /// The server asks for its current nonce (`use_dpop_nonce`).
        public static let nonceRequired = Code("nonceRequired")
        /// A proof's `jti` seen before within the window.
        public static let replayed = Code("replayed")
        /// The proof's key is not the one the token or device is bound to.
        public static let wrongKey = Code("wrongKey")
        /// A bound token came without a proof.
        public static let missing = Code("missing")
    }

    public let code: Code
    /// What was wrong, for a developer; never a value from the proof.
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The OAuth error a server answers with (RFC 9449 §7.1, §8): `use_dpop_nonce` when the
    /// nonce is wanted, `invalid_dpop_proof` otherwise.
    public var oauthError: String { code == .nonceRequired ? "use_dpop_nonce" : "invalid_dpop_proof" }

    public var description: String { "DPoPError(\(code): \(detail))" }
}

extension DevicePublicKey {
    /// The JWK thumbprint (RFC 7638): base64url of SHA-256 over `{"crv":"P-256","kty":"EC","x":…,"y":…}`
    /// — the required members in lexicographic order, no whitespace.
    public var jwkThumbprint: String {
        let point = x963Representation
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(point[1..<33]))","y":"\#(Base64URL.encode(point[33..<65]))"}"#
        return Base64URL.encode(SHA256.hash(data: Data(canonical.utf8)))
    }
}
