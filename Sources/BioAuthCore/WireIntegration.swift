import Foundation

/// What other systems read from the server: webhook bodies (events, recovery codes), the
/// authorization-server metadata and the JWKS.
extension Wire {
    /// A webhook's body (`docs/Protocol.md` §4, events): what happened, to whom, when. `type` is
    /// `device.enrolled`, `device.reenrolled` (key replaced), `device.revoked`, `lockout` or
    /// `login.succeeded`; `reason` says why (for a lockout: which counter).
    public struct Event: Codable, Sendable, Hashable {
        public var id: String
        public var type: String
        public var occurredAt: Int64
        public var userId: String?
        public var deviceId: String?
        public var reason: String?
        public init(id: String, type: String, occurredAt: Int64, userId: String?, deviceId: String?, reason: String?) {
            self.id = id
            self.type = type
            self.occurredAt = occurredAt
            self.userId = userId
            self.deviceId = deviceId
            self.reason = reason
        }
    }

    /// A recovery code for the backend to deliver (`--recovery-webhook-url`): `type` is always
    /// `recovery.code`; `code` is the secret the user types, `text` a ready message built from
    /// the other fields only.
    public struct RecoveryCodeDelivery: Codable, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable
    {
        public var type: String
        public var userId: String
        public var requestId: String
        public var code: String
        public var replacing: Bool
        public var keyFingerprint: String
        public var expiresAt: Int64
        public var text: String
        /// `enrolment` (the code approves the enrolment request `requestId`), `deviceRemoval`
        /// (it confirms the device removal `requestId`, of the device whose key is `keyFingerprint`)
        /// or `signIn` (a password login from `clientAddress`; no key: `keyFingerprint` is empty).
        public var purpose: String
        /// For `signIn`: the network the code works from (an IPv4 address or an IPv6 /48).
        public var clientAddress: String?
        public init(
            userId: String, requestId: String, code: String, replacing: Bool, keyFingerprint: String, expiresAt: Int64, text: String,
            purpose: String = "enrolment",
            clientAddress: String? = nil
        ) {
            self.purpose = purpose
            self.clientAddress = clientAddress
            type = "recovery.code"
            self.userId = userId
            self.requestId = requestId
            self.code = code
            self.replacing = replacing
            self.keyFingerprint = keyFingerprint
            self.expiresAt = expiresAt
            self.text = text
        }
        /// Without the code or the text that holds it.
        public var description: String { "RecoveryCodeDelivery(request \(requestId), code: redacted)" }
        public var debugDescription: String { description }
        public var customMirror: Mirror { Mirror(self, children: ["requestId": requestId]) }
    }

    /// `GET /.well-known/openid-configuration` and `/.well-known/oauth-authorization-server`
    /// (RFC 8414, OpenID Connect Discovery 1.0 names): where a resource server finds the keys and
    /// the introspection endpoint for this issuer, and what the tokens claim.
    public struct ServerMetadata: Codable, Sendable, Hashable {
        public var issuer: String
        public var jwksURI: String
        public var introspectionEndpoint: String
        public var subjectTypesSupported: [String]
        public var claimsSupported: [String]
        public var acrValuesSupported: [String]
        /// RFC 9449 §5.1: the algorithms DPoP proofs may use (`ES256`).
        public var dpopSigningAlgValuesSupported: [String]
        public init(
            issuer: String, jwksURI: String, introspectionEndpoint: String, subjectTypesSupported: [String], claimsSupported: [String],
            acrValuesSupported: [String], dpopSigningAlgValuesSupported: [String] = ["ES256"]
        ) {
            self.dpopSigningAlgValuesSupported = dpopSigningAlgValuesSupported
            self.issuer = issuer
            self.jwksURI = jwksURI
            self.introspectionEndpoint = introspectionEndpoint
            self.subjectTypesSupported = subjectTypesSupported
            self.claimsSupported = claimsSupported
            self.acrValuesSupported = acrValuesSupported
        }
        enum CodingKeys: String, CodingKey {
            case issuer
            case jwksURI = "jwks_uri"
            case introspectionEndpoint = "introspection_endpoint"
            case subjectTypesSupported = "subject_types_supported"
            case claimsSupported = "claims_supported"
            case acrValuesSupported = "acr_values_supported"
            case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
        }
    }

    /// `GET /.well-known/jwks.json` (RFC 7517): the keys that verify access tokens.
    public struct JWKS: Codable, Sendable, Hashable {
        public var keys: [JWK]
        public init(keys: [JWK]) { self.keys = keys }
    }

    /// One P-256 public key: `kty` EC, `crv` P-256, `use` sig, `alg` ES256; `x`, `y` base64url.
    public struct JWK: Codable, Sendable, Hashable {
        public var kty: String
        public var crv: String
        public var x: String
        public var y: String
        public var kid: String
        public var use: String
        public var alg: String
        public init(kid: String, x: String, y: String) {
            self.kty = "EC"
            self.crv = "P-256"
            self.x = x
            self.y = y
            self.kid = kid
            self.use = "sig"
            self.alg = "ES256"
        }
    }
}
