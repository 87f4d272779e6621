import BioAuthCore
import Crypto
import Foundation

/// Sender-constrained tokens (DPoP, RFC 9449). A device registers a second key — one that signs
/// without a prompt, proving the device rather than the user — by sending a proof with its
/// registration; from then on its logins must carry a proof by that key, and the session, its
/// refresh token and its access tokens (`cnf.jkt`) are bound to it. A bound session's token is
/// sent as `Authorization: DPoP <token>` with a proof whose `ath` is its hash. A client that sends
/// no proof keeps bearer tokens unless ``required``.
public struct DPoPPolicy: Sendable, Hashable {
    /// Every device login and enrolment must carry a proof (a device without a registered key
    /// cannot log in). Off by default: proofs are accepted, bearer tokens too.
    public var required: Bool
    /// How far a proof's `iat` may lie from the server's clock; its `jti` is remembered as long.
    public var window: DPoPWindow
    /// Ask for a server nonce (RFC 9449 §8) at the token endpoints — registration, login and
    /// refresh: a proof made ahead of time is refused. A nonce lasts ``nonceLifetime`` (and one
    /// more period); a refusal carries the current one in `DPoP-Nonce`.
    public var nonces: Bool
    public var nonceLifetime: TimeInterval
    /// Keys the nonces (HMAC-SHA256 over the period). Random per process by default: give every
    /// instance of a deployment the same key, or a client may be asked for a nonce twice.
    public var nonceKey: SecretBytes
    /// The server's public origin (`https://auth.example.com`) a proof's `htu` must name, with
    /// the request's path. nil: the request's `Host`, over HTTPS (or HTTP for a loopback host).
    public var publicOrigin: String?

    public init(
        required: Bool = false, window: DPoPWindow = DPoPWindow(), nonces: Bool = false, nonceLifetime: TimeInterval = 300,
        nonceKey: SecretBytes = .random(count: 32), publicOrigin: String? = nil
    ) {
        self.required = required
        self.window = window
        self.nonces = nonces
        self.nonceLifetime = nonceLifetime
        self.nonceKey = nonceKey
        self.publicOrigin = publicOrigin
    }

    /// The nonce of the period `now` falls in (`offset` periods back): 16 bytes of
    /// HMAC-SHA256(key, period), base64url.
    public func nonce(at now: Date, offset: Int = 0) -> String {
        let period = Int64((now.timeIntervalSince1970 / nonceLifetime).rounded(.down)) - Int64(offset)
        let mac = HMAC<SHA256>.authenticationCode(for: Data("dpop-nonce:\(period)".utf8), using: SymmetricKey(data: nonceKey.data))
        return Base64URL.encode(Data(mac).prefix(16))
    }

    /// The URL a proof for a request to `path` under `host` must name.
    public func expectedURL(host: String?, path: String) -> String {
        if let publicOrigin { return publicOrigin + path }
        let host = host ?? "localhost"
        // The authority's host: up to `]` for an IPv6 literal, else up to the port's colon.
        let name = host.hasPrefix("[") ? String(host.prefix { $0 != "]" }) + "]" : String(host.prefix { $0 != ":" })
        let loopback = ["localhost", "127.0.0.1", "[::1]"].contains(name)
        return (loopback ? "http://" : "https://") + host + path
    }
}

/// What the HTTP layer saw of a request's DPoP: the `DPoP` header, the method and URL the proof
/// must name, and whether the session token came as `Authorization: DPoP`.
public struct DPoPPresentation: Sendable, Hashable, CustomStringConvertible {
    /// The compact proof; nil when the request carried no `DPoP` header.
    public var proof: String?
    public var method: String
    public var url: String
    /// The token came with the `DPoP` scheme, not `Bearer`.
    public var dpopScheme: Bool

    public init(proof: String?, method: String, url: String, dpopScheme: Bool = false) {
        self.proof = proof
        self.method = method
        self.url = url
        self.dpopScheme = dpopScheme
    }

    public var description: String { "DPoPPresentation(\(method) \(url), proof: \(proof == nil ? "none" : "redacted"))" }
}

extension Flow {
    /// The request's DPoP proof, verified for this request (method, URL, window, `ath` of
    /// `accessToken`, the server's nonce at a token endpoint), and — when `remember` — its `jti`
    /// recorded so that it is accepted once; nil when the request carried none.
    /// - Throws: `invalid_dpop_proof` (400) or `use_dpop_nonce` (400, with the current nonce).
    func dpopProof(_ request: RequestInfo, accessToken: String? = nil, tokenEndpoint: Bool, remember: Bool) async throws(ServerError)
        -> DPoPProof?
    {
        guard let presented = request.dpop, let compact = presented.proof else { return nil }
        let policy = configuration.dpop, now = clock.now()
        // At a token endpoint, the nonce of this period or of the one before.
        let nonces = policy.nonces && tokenEndpoint ? [policy.nonce(at: now), policy.nonce(at: now, offset: 1)] : []
        let proof: DPoPProof
        do {
            proof = try DPoPProof(compact)
            try proof.check(
                method: presented.method, url: presented.url, at: now, window: policy.window, accessToken: accessToken, nonces: nonces)
        } catch { throw ServerError(error, nonce: nonces.first) }
        if remember {
            let seen = TokenHash(ofText: proof.thumbprint + "|" + proof.jti)
            let until = proof.issuedAt.addingTimeInterval(policy.window.maximumAge + policy.window.clockSkew)
            var plan = WritePlan()
            plan.add(.rememberDPoPProof(seen, until: until))
            do { _ = try await writer.apply(plan) } catch let error as StoreError where error.code == .duplicate {
                throw ServerError(DPoPError(.replayed, "this proof was used before"))
            } catch { throw storeFailure(error, request) }
        }
        return proof
    }
}
