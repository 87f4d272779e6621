import BioAuthCore
import Crypto
import Foundation
import JWTKit
import Logging

/// Access tokens for other services: ES256 JWTs (RFC 9068 `at+jwt`) signed with keys the server
/// keeps in its database and publishes as a JWKS; opaque refresh tokens that rotate on use.
public struct TokenPolicy: Sendable, Hashable {
    /// `iss`; nil: the relying-party id.
    public var issuer: String?
    /// `aud`; nil: the relying-party id.
    public var audience: String?
    /// `client_id` (RFC 9068 §2.2): the client the tokens are issued to — the app; nil: the
    /// relying-party id.
    public var clientID: String?
    /// How long an access token is valid (5 minutes): revocation reaches a service that only
    /// checks signatures within this time. `POST /v1/introspect` sees it at once.
    public var accessTokenTTL: TimeInterval
    /// A new signing key every 30 days; an old one stays published while tokens it signed live.
    public var signingKeyRotation: TimeInterval
    /// A new key is published this long (2 minutes) before it signs, so every instance's JWKS
    /// and every verifier's cache know it first.
    public var prePublication: TimeInterval
    /// A refresh token presented again less than this (10 s) after its rotation, while its successor
    /// is unused, gets the same successor back: a retry whose answer was lost is not theft. Later,
    /// or once the successor was used, it is reuse and ends the session (RFC 9700 §4.14.2).
    public var refreshRetryGrace: TimeInterval
    /// How the signing keys' private keys are stored (``SigningKeyProtection``). The library's
    /// default, ``SigningKeyProtection/plaintextInDatabase``, is the weaker choice, named:
    /// `bioauth-server` seals them with a key-encryption key unless told otherwise.
    public var signingKeys: SigningKeyProtection = .plaintextInDatabase

    public init(
        issuer: String? = nil, audience: String? = nil, clientID: String? = nil, accessTokenTTL: TimeInterval = 300,
        signingKeyRotation: TimeInterval = 30 * 86_400, prePublication: TimeInterval = 120, refreshRetryGrace: TimeInterval = 10
    ) {
        self.refreshRetryGrace = refreshRetryGrace
        self.clientID = clientID
        self.issuer = issuer
        self.audience = audience
        self.accessTokenTTL = accessTokenTTL
        self.signingKeyRotation = signingKeyRotation
        self.prePublication = prePublication
    }
}

extension TokenPolicy {
    /// `issuer` as the URL an authorization server's metadata names (RFC 8414 §2): https — or
    /// http on a loopback host, for tests — with a host and no query or fragment; nil for any
    /// other issuer (the relying-party id by default), which then has no metadata to publish.
    public static func issuerURL(_ issuer: String) -> URL? {
        guard let components = URLComponents(string: issuer), let host = components.host, !host.isEmpty, components.query == nil,
            components.fragment == nil, components.user == nil
        else { return nil }
        switch components.scheme?.lowercased() {
        case "https": break
        case "http" where host == "localhost" || host == "127.0.0.1" || host == "[::1]" || host == "::1": break
        default: return nil
        }
        return components.url
    }
}

/// The claims of an access token. Time, issuer and audience are checked by
/// ``AccessTokenIssuer/verify(_:)`` against the server's clock, so `verify(using:)` adds nothing.
struct AccessTokenClaims: JWTPayload {
    var iss: IssuerClaim
    var aud: AudienceClaim
    /// The user id.
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim
    var jti: IDClaim
    /// RFC 9068 `client_id`; absent only in a token an earlier version issued.
    var clientID: String?
    /// The device whose Secure Enclave or Keystore key signed the login.
    var deviceID: DeviceID
    /// The BioAuth session the token belongs to (revoking it ends the token at introspection).
    var sessionID: SessionID
    /// RFC 8176 methods: `hwk` (a key attestation proved hardware-bound signed) or `pop` (a key
    /// of unproven kind signed), and `user` (the platform checked the user — biometry or the
    /// device passcode, as the key's access control demands).
    var amr: [String]
    /// ``AttestationClass``: what enrolment proved about the key.
    var acr: String
    /// The attestation's facts; absent for an unattested key.
    var att: Wire.AttestationClaim?
    /// ``EnrolmentProof``: what allowed the device's current key; absent where not recorded.
    var enr: String?
    /// RFC 9449 §6.1: the DPoP key the token is bound to; absent for a bearer token.
    var cnf: Wire.Confirmation?

    enum CodingKeys: String, CodingKey {
        case iss, aud, sub, exp, iat, jti, amr, acr, att, enr, cnf
        case deviceID = "device_id"
        case sessionID = "sid"
        case clientID = "client_id"
    }

    /// What a token says of a device key: only what its enrolment proved.
    static func methods(_ attestation: DeviceAttestation?) -> (amr: [String], acr: String, att: Wire.AttestationClaim?) {
        guard let attestation else { return (["pop", "user"], AttestationClass.unattested, nil) }
        return (
            ["hwk", "user"], AttestationClass.attested,
            Wire.AttestationClaim(
                fmt: attestation.format.rawValue, lvl: attestation.securityLevel.rawValue, app: attestation.appID,
                env: attestation.environment)
        )
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    var verified: VerifiedAccessToken {
        VerifiedAccessToken(
            issuer: iss.value, audience: aud.value, subject: sub.value, expiresAt: exp.value, issuedAt: iat.value, tokenID: jti.value,
            deviceID: deviceID,
            sessionID: sessionID, methods: amr, authenticationClass: acr, attestation: att, enrolment: enr, clientID: clientID,
            dpopThumbprint: cnf?.jkt)
    }
}

/// The `acr` of an access token (`docs/Protocol.md`).
public enum AttestationClass {
    /// The device key's enrolment carried an attestation that verified.
    public static let attested = "urn:bioauth:acr:attested-key"
    /// It did not: the key may be in software, made by any client.
    public static let unattested = "urn:bioauth:acr:unattested-key"
}

/// An access token that verified (``BioAuthService/introspect(token:request:)``): its claims.
public struct VerifiedAccessToken: Sendable, Hashable {
    public var issuer: String
    public var audience: [String]
    /// The user id (`sub`).
    public var subject: String
    public var expiresAt: Date
    public var issuedAt: Date
    /// `jti`.
    public var tokenID: String
    public var deviceID: DeviceID
    public var sessionID: SessionID
    /// `amr` (RFC 8176).
    public var methods: [String]
    /// `acr`: ``AttestationClass``.
    public var authenticationClass: String
    /// `att`; nil for an unattested key.
    public var attestation: Wire.AttestationClaim?
    /// `enr`: ``EnrolmentProof`` of the device's current key; nil where not recorded.
    public var enrolment: String?
    /// `client_id` (RFC 9068).
    public var clientID: String?
    /// `cnf.jkt` (RFC 9449): the thumbprint of the DPoP key the token is bound to; nil for a bearer token.
    public var dpopThumbprint: String?
}

/// What a device login hands out besides its session: the access token and the refresh token.
/// Its description omits both.
public struct TokenGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var accessToken: String
    public var accessTokenExpiresAt: Date
    public var refreshToken: String
    /// The session and its tokens are bound to a DPoP key (token type `DPoP`, else `Bearer`).
    public var dpopBound = false

    public var description: String { "TokenGrant(expires \(accessTokenExpiresAt), tokens: redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["accessTokenExpiresAt": accessTokenExpiresAt]) }
}

/// A public key of the JWKS (RFC 7517): P-256, ES256, for signatures.
public struct PublishedKey: Sendable, Hashable {
    public var id: String
    public var publicKey: P256.Signing.PublicKey

    /// The JWK's `x` and `y`: the point's coordinates, base64url.
    public var coordinates: (x: String, y: String) {
        let point = publicKey.x963Representation  // 04 ‖ x ‖ y
        return (Base64URL.encode(point[1..<33]), Base64URL.encode(point[33..<65]))
    }

    public static func == (lhs: PublishedKey, rhs: PublishedKey) -> Bool {
        lhs.id == rhs.id && lhs.publicKey.rawRepresentation == rhs.publicKey.rawRepresentation
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// Signs and verifies access tokens with the store's signing keys: creates the first key, rotates
/// on schedule, and reloads the keys at most once a minute so a key another instance created
/// is used and published here too.
actor AccessTokenIssuer {
    let writer: PlanWriter
    var store: any BioAuthStore { writer.store }
    let policy: TokenPolicy
    let issuer: String
    let audience: String
    let clientID: String
    let clock: any WallClock
    let logger: Logger
    /// The usable keys (opened, oldest first) with their private keys, the collection that signs
    /// and verifies with them, and when they were read.
    private var loaded: (keys: [OpenedSigningKey], collection: JWTKeyCollection, at: Date)?
    static let reload: TimeInterval = 60

    init(writer: PlanWriter, policy: TokenPolicy, relyingPartyID: String, clock: any WallClock, logger: Logger) {
        self.logger = logger
        self.writer = writer
        self.policy = policy
        issuer = policy.issuer ?? relyingPartyID
        audience = policy.audience ?? relyingPartyID
        clientID = policy.clientID ?? relyingPartyID
        self.clock = clock
    }

    /// A signed access token for a device session, saying what `device`'s current key proved and
    /// how it was allowed (nil: the device is gone; the token claims nothing of it).
    func issue(for session: SessionRecord, device: DeviceRecord?, audit: AuditEvent) async throws -> (token: String, expiresAt: Date) {
        // A device session always names its device; a token that named none would claim nothing true.
        guard let deviceID = session.deviceID else { throw ServerError(.internalError, detail: "device session without a device") }
        let attestation = device?.credential.attestation
        let (keys, collection) = try await current(audit: audit)
        // Whole seconds: `iat` and `exp` are integers on the wire, as the protocol says and JWT libraries expect.
        let now = Date(timeIntervalSince1970: clock.now().timeIntervalSince1970.rounded(.down))
        let signer = Self.signingKey(of: keys.map(\.record), at: now, prePublication: policy.prePublication)
        let expiresAt = now.addingTimeInterval(policy.accessTokenTTL.rounded(.down))
        let methods = AccessTokenClaims.methods(attestation)
        let claims = AccessTokenClaims(
            iss: IssuerClaim(value: issuer), aud: AudienceClaim(value: [audience]), sub: SubjectClaim(value: session.userID.rawValue),
            exp: ExpirationClaim(value: expiresAt), iat: IssuedAtClaim(value: now),
            jti: IDClaim(value: Base64URL.encode(SecretBytes.random(count: 16).data)),
            clientID: clientID, deviceID: deviceID, sessionID: session.id, amr: methods.amr, acr: methods.acr, att: methods.att,
            enr: device?.keyProof?.rawValue, cnf: session.dpopThumbprint.map(Wire.Confirmation.init(jkt:)))
        var header = JWTHeader()
        header.typ = "at+jwt"
        return (try await collection.sign(claims, kid: JWKIdentifier(string: signer.id), header: header), expiresAt)
    }

    /// The claims of a token this server issued, if its signature verifies with a published key
    /// and it is unexpired at the server's clock, for this issuer and audience; nil otherwise.
    /// Its header must say what this server writes (``AccessTokenHeader``): ES256, `at+jwt`, the
    /// `kid` of a published key and nothing else — a token without a `kid` is not tried with any
    /// key — and its `iat` and `exp` must be whole seconds.
    func verify(_ token: String, audit: AuditEvent) async throws -> AccessTokenClaims? {
        let (keys, collection) = try await current(audit: audit)
        guard let header = AccessTokenHeader(token),
            Self.publishable(keys.map(\.record), at: clock.now(), policy: policy).contains(where: { $0.id == header.keyID })
        else {
            return nil
        }
        guard let claims = try? await collection.verify(token, as: AccessTokenClaims.self), AccessTokenHeader.hasWholeSecondTimes(token)
        else { return nil }
        let now = clock.now()
        guard claims.iss.value == issuer, claims.aud.value.contains(audience), claims.exp.value > now,
            claims.iat.value <= now.addingTimeInterval(60)
        else {
            return nil
        }
        return claims
    }

    /// The keys to publish: the signing key, newer ones (published before they sign) and older
    /// ones whose tokens may still live. While the database cannot be read, the keys loaded last
    /// (at the previous read, at most a reload ago) are served from memory: no key changed that
    /// this instance could know of, and a resource server that starts during an outage can still
    /// verify tokens.
    func published(audit: AuditEvent) async throws -> [PublishedKey] {
        let keys: [OpenedSigningKey]
        do { keys = try await current(audit: audit).0 } catch {
            guard let last = loaded?.keys, !last.isEmpty else { throw error }
            logger.warning(
                "signing keys could not be read: publishing the keys in memory",
                metadata: ["error": "\(String(describing: type(of: error)))"])
            keys = last
        }
        let published = Set(Self.publishable(keys.map(\.record), at: clock.now(), policy: policy).map(\.id))
        return keys.filter { published.contains($0.record.id) }.map { PublishedKey(id: $0.record.id, publicKey: $0.privateKey.publicKey) }
    }

    /// The key that signs at `now`: the newest one published for at least `prePublication`, or
    /// the oldest while none is (the very first key signs at once).
    static func signingKey(of keys: [SigningKeyRecord], at now: Date, prePublication: TimeInterval) -> SigningKeyRecord {
        keys.last { $0.createdAt.addingTimeInterval(prePublication) <= now } ?? keys[0]
    }

    /// Every key created within the last rotation period, the access-token lifetime and the
    /// pre-publication of `now`, and the signing key.
    static func publishable(_ keys: [SigningKeyRecord], at now: Date, policy: TokenPolicy) -> [SigningKeyRecord] {
        let signer = signingKey(of: keys, at: now, prePublication: policy.prePublication)
        let horizon = now.addingTimeInterval(-(policy.signingKeyRotation + policy.accessTokenTTL + policy.prePublication + reload))
        return keys.filter { $0.createdAt >= horizon || $0.id == signer.id }
    }

    /// The usable keys (reloaded when a minute old), after creating a key when there is none or
    /// the newest is due for rotation. Two instances rotating at once make two keys: both publish.
    /// A stored key this deployment cannot open (``SigningKeyUnavailable``: plaintext under a
    /// key-encryption key, another KEK's) is neither used nor published, and is logged.
    private func current(audit: AuditEvent) async throws -> ([OpenedSigningKey], JWTKeyCollection) {
        let now = clock.now()
        if let loaded, now.timeIntervalSince(loaded.at) < Self.reload, let newest = loaded.keys.last,
            newest.record.createdAt.addingTimeInterval(policy.signingKeyRotation) > now
        {
            return (loaded.keys, loaded.collection)
        }
        var keys = try await open(try await store.signingKeys())
        if keys.last.map({ $0.record.createdAt.addingTimeInterval(policy.signingKeyRotation) <= now }) ?? true {
            let key = try await SigningKeyRecord.generate(at: now, protection: policy.signingKeys)
            let added = AuditEvent(
                at: now, kind: .signingKeyAdded, reason: .key(key.id), clientAddress: audit.clientAddress, requestID: audit.requestID)
            _ = try await writer.apply(.addSigningKey(key, audit: added))
            keys = try await open(try await store.signingKeys())
        }
        let collection = JWTKeyCollection()
        let publishable = Set(Self.publishable(keys.map(\.record), at: now, policy: policy).map(\.id))
        for key in keys where publishable.contains(key.record.id) {
            await collection.add(ecdsa: try ES256PrivateKey(backing: key.privateKey), kid: JWKIdentifier(string: key.record.id))
        }
        loaded = (keys, collection, now)
        return (keys, collection)
    }

    /// The stored keys this deployment can open, oldest first.
    private func open(_ records: [SigningKeyRecord]) async throws -> [OpenedSigningKey] {
        var opened: [OpenedSigningKey] = []
        for record in records {
            do {
                let scalar = try await policy.signingKeys.sealer.open(record.storedKey, keyID: record.id)
                opened.append(OpenedSigningKey(record: record, privateKey: try P256.Signing.PrivateKey(rawRepresentation: scalar.data)))
            } catch let error as SigningKeyUnavailable {
                logger.error("signing key not used", metadata: ["kid": "\(record.id)", "reason": "\(error.reason)"])
            } catch {
                logger.error("signing key not used", metadata: ["kid": "\(record.id)", "reason": "unreadable"])
            }
        }
        return opened
    }
}

/// A stored signing key and its opened private key.
struct OpenedSigningKey: Sendable {
    let record: SigningKeyRecord
    let privateKey: P256.Signing.PrivateKey
}

/// The protected header of an access token, accepted only as this server writes it (RFC 9068
/// §4): `alg` ES256 (nothing else is ever tried, `none` least of all), `typ` `at+jwt` (or
/// `application/at+jwt`, case-insensitive, which RFC 9068 §4 tells resource servers to accept),
/// a `kid`, and nothing else — no `crit` (this server understands no extension, RFC 7515
/// §4.1.11), no `jku`, `x5u`, `jwk` or any other member this server never writes.
struct AccessTokenHeader: Equatable {
    let keyID: String
    static let members: Set<String> = ["alg", "typ", "kid"]

    init?(_ token: String) {
        guard let encoded = token.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first,
            let data = Base64URL.decode(String(encoded)),
            let header = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            Set(header.keys).isSubset(of: Self.members),
            header["alg"] as? String == "ES256",
            let type = (header["typ"] as? String)?.lowercased(), type == "at+jwt" || type == "application/at+jwt",
            let keyID = header["kid"] as? String, !keyID.isEmpty
        else { return nil }
        self.keyID = keyID
    }

    /// Whether the token's `iat` and `exp` are whole seconds, as this server writes them (a
    /// NumericDate may have a fraction, RFC 7519 §2; these never do).
    static func hasWholeSecondTimes(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(String(parts[1])) else { return false }
        struct Times: Decodable {
            let iat: Int64
            let exp: Int64
        }
        return (try? JSONDecoder().decode(Times.self, from: data)) != nil
    }
}
