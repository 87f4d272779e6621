import Foundation

/// The bodies `bioauth-server` answers with (``Wire``).
extension Wire {
    /// A new session (password or device login).
    public struct Session: Codable, Sendable, Hashable, WireRedacted {
        public var token: String
        public var sessionId: String
        public var userId: String
        /// nil for a primary (password) session.
        public var deviceId: String?
        public var expiresAt: Int64
        /// A device session's access token (an ES256 JWT for other services); nil otherwise.
        public var accessToken: String?
        public var accessTokenExpiresAt: Int64?
        /// A device session's refresh token (32 bytes, base64url; one use each); nil otherwise.
        public var refreshToken: String?
        /// `DPoP` when the session and its tokens are bound to the key that signed the login's
        /// DPoP proof (send them with a proof by that key) — a device or passkey login, or a
        /// cross-device sign-in collected with a proof — `Bearer` for a device session without;
        /// nil for other sessions.
        public var tokenType: String?
        public init(
            token: String, sessionId: String, userId: String, deviceId: String?, expiresAt: Int64, accessToken: String? = nil,
            accessTokenExpiresAt: Int64? = nil, refreshToken: String? = nil, tokenType: String? = nil
        ) {
            self.tokenType = tokenType
            self.token = token
            self.sessionId = sessionId
            self.userId = userId
            self.deviceId = deviceId
            self.expiresAt = expiresAt
            self.accessToken = accessToken
            self.accessTokenExpiresAt = accessTokenExpiresAt
            self.refreshToken = refreshToken
        }
        public var visibleFields: KeyValuePairs<String, Any> {
            ["sessionId": sessionId, "userId": userId, "deviceId": deviceId as Any, "expiresAt": expiresAt]
        }
    }

    /// `POST /v1/token/refresh`: a new access token and the refresh token that replaces the one sent.
    public struct Tokens: Codable, Sendable, Hashable, WireRedacted {
        public var accessToken: String
        public var accessTokenExpiresAt: Int64
        public var refreshToken: String
        /// `DPoP` or `Bearer`, as for ``Session/tokenType``.
        public var tokenType: String?
        public init(accessToken: String, accessTokenExpiresAt: Int64, refreshToken: String, tokenType: String? = nil) {
            self.tokenType = tokenType
            self.accessToken = accessToken
            self.accessTokenExpiresAt = accessTokenExpiresAt
            self.refreshToken = refreshToken
        }
        public var visibleFields: KeyValuePairs<String, Any> { ["accessTokenExpiresAt": accessTokenExpiresAt] }
    }

    /// RFC 7800 / RFC 9449 §6: `{"jkt": <JWK thumbprint>}`, the key a token is bound to.
    public struct Confirmation: Codable, Sendable, Hashable {
        public var jkt: String
        public init(jkt: String) { self.jkt = jkt }
    }

    /// RFC 7662 §2.2: `{"active": false}`, or the token's claims. Names are the RFC's and JWT's.
    public struct Introspection: Codable, Sendable, Hashable {
        public var active: Bool
        public var tokenType: String?
        public var iss: String?
        public var aud: [String]?
        public var sub: String?
        public var exp: Int64?
        public var iat: Int64?
        public var jti: String?
        public var deviceId: String?
        public var sid: String?
        public var amr: [String]?
        /// `urn:bioauth:acr:attested-key` or `urn:bioauth:acr:unattested-key`.
        public var acr: String?
        /// What the device key's attestation proved; absent for an unattested key.
        public var att: AttestationClaim?
        /// What allowed the device's current key: `approval`, `recovery`, `primaryLogin` or `grant`.
        public var enr: String?
        /// The client the token was issued to (RFC 9068 `client_id`).
        public var clientId: String?
        /// RFC 9449 §6.2: the DPoP key the token is bound to; absent for a bearer token.
        public var cnf: Confirmation?
        public init(
            active: Bool, tokenType: String? = nil, iss: String? = nil, aud: [String]? = nil, sub: String? = nil, exp: Int64? = nil,
            iat: Int64? = nil,
            jti: String? = nil, deviceId: String? = nil, sid: String? = nil, amr: [String]? = nil, acr: String? = nil,
            att: AttestationClaim? = nil,
            enr: String? = nil, clientId: String? = nil, cnf: Confirmation? = nil
        ) {
            self.cnf = cnf
            self.clientId = clientId
            self.acr = acr
            self.att = att
            self.enr = enr
            self.active = active
            self.tokenType = tokenType
            self.iss = iss
            self.aud = aud
            self.sub = sub
            self.exp = exp
            self.iat = iat
            self.jti = jti
            self.deviceId = deviceId
            self.sid = sid
            self.amr = amr
        }
        enum CodingKeys: String, CodingKey {
            case active, iss, aud, sub, exp, iat, jti, sid, amr, acr, att, enr, cnf
            case tokenType = "token_type"
            case deviceId = "device_id"
            case clientId = "client_id"
        }
    }

    /// An access token's `att` claim (and introspection's): what the device key's attestation
    /// proved at enrolment. Short names, as JWT claims go.
    public struct AttestationClaim: Codable, Sendable, Hashable {
        /// `apple-appattest` or `android-key`.
        public var fmt: String
        /// `secureEnclave`, `trustedEnvironment` or `strongBox`.
        public var lvl: String
        /// `TEAMID.bundle` or the Android package name.
        public var app: String
        /// App Attest only: `development` or `production`.
        public var env: String?
        public init(fmt: String, lvl: String, app: String, env: String? = nil) {
            self.fmt = fmt
            self.lvl = lvl
            self.app = app
            self.env = env
        }
    }

    /// What a device's attestation proved, in the device list (`GET /v1/devices`).
    public struct DeviceAttestation: Codable, Sendable, Hashable {
        /// `apple-appattest` or `android-key`.
        public var format: String
        /// `secureEnclave`, `trustedEnvironment` or `strongBox`.
        public var securityLevel: String
        /// `TEAMID.bundle` or the Android package name.
        public var appId: String
        /// App Attest only: `development` or `production`.
        public var environment: String?
        public var verifiedAt: Int64
        /// The ``format`` of an App Attest attestation: the device's logins and step-ups may carry assertions.
        public static let appleAppAttest = "apple-appattest"
        public init(format: String, securityLevel: String, appId: String, environment: String? = nil, verifiedAt: Int64) {
            self.format = format
            self.securityLevel = securityLevel
            self.appId = appId
            self.environment = environment
            self.verifiedAt = verifiedAt
        }
    }

    /// `GET /v1/devices/registration/attestation-challenge`: what an Android device passes to
    /// `setAttestationChallenge` before it makes the key it enrols in this session.
    public struct AttestationChallenge: Codable, Sendable, Hashable {
        public var challenge: String
        public init(challenge: String) { self.challenge = challenge }
    }

    /// A registered device; `publicKey` is SPKI DER, base64url.
    public struct Device: Codable, Sendable, Hashable {
        public var id: String
        public var name: String
        public var publicKey: String
        public var createdAt: Int64
        public var lastUsedAt: Int64?
        public var revokedAt: Int64?
        /// When the key was last replaced (absent: never).
        public var keyReplacedAt: Int64?
        /// How: `approval` (another device), `recovery` (a recovery code), `primaryLogin` or `grant`.
        public var keyReplacedBy: String?
        /// What the current key's attestation proved; absent if it enrolled unattested.
        public var attestation: DeviceAttestation?
        /// What allowed the device's enrolment, in ``keyReplacedBy``'s terms; absent for a device
        /// enrolled before the server recorded it.
        public var enrolledBy: String?
        /// Present for a passkey: what kind of passkey it is.
        public var passkey: Passkey?
        public init(
            id: String, name: String, publicKey: String, createdAt: Int64, lastUsedAt: Int64?, revokedAt: Int64?,
            keyReplacedAt: Int64? = nil,
            keyReplacedBy: String? = nil, attestation: DeviceAttestation? = nil, enrolledBy: String? = nil, passkey: Passkey? = nil
        ) {
            self.passkey = passkey
            self.attestation = attestation
            self.enrolledBy = enrolledBy
            self.id = id
            self.name = name
            self.publicKey = publicKey
            self.createdAt = createdAt
            self.lastUsedAt = lastUsedAt
            self.revokedAt = revokedAt
            self.keyReplacedAt = keyReplacedAt
            self.keyReplacedBy = keyReplacedBy
        }
    }

    /// A passkey in the device list: whether it is synced, and what its registration proved.
    public struct Passkey: Codable, Sendable, Hashable {
        /// BE: the passkey may be copied to the user's other devices by its provider.
        public var synced: Bool
        /// BS as of its last use: it is backed up.
        public var backedUp: Bool
        /// The registration's attestation format: `none`, `packed`, `apple` or `android-key`.
        public var format: String
        /// `none`, `selfAttested`, `unanchored` or `anchored`.
        public var attestation: String
        /// The authenticator model's AAGUID (zeros when it does not say), as a UUID.
        public var aaguid: String
        public init(synced: Bool, backedUp: Bool, format: String, attestation: String, aaguid: String) {
            self.synced = synced
            self.backedUp = backedUp
            self.format = format
            self.attestation = attestation
            self.aaguid = aaguid
        }
    }

    /// One of the user's live sessions (`GET /v1/sessions`).
    public struct SessionInfo: Codable, Sendable, Hashable {
        public var id: String
        /// `primary` or `device`.
        public var kind: String
        public var deviceId: String?
        public var createdAt: Int64
        public var expiresAt: Int64
        public var current: Bool
        public init(id: String, kind: String, deviceId: String?, createdAt: Int64, expiresAt: Int64, current: Bool) {
            self.id = id
            self.kind = kind
            self.deviceId = deviceId
            self.createdAt = createdAt
            self.expiresAt = expiresAt
            self.current = current
        }
    }

    /// A one-time step-up approval.
    public struct Approval: Codable, Sendable, Hashable, WireRedacted {
        public var approval: String
        public var expiresAt: Int64
        public init(approval: String, expiresAt: Int64) {
            self.approval = approval
            self.expiresAt = expiresAt
        }
        public var visibleFields: KeyValuePairs<String, Any> { ["expiresAt": expiresAt] }
    }

    /// What a redeemed approval was granted to.
    public struct RedeemedApproval: Codable, Sendable, Hashable {
        public var userId: String
        public var deviceId: String
        public init(userId: String, deviceId: String) {
            self.userId = userId
            self.deviceId = deviceId
        }
    }

    /// One entry of the user's audit log. A failure repeated within a minute is one entry:
    /// `count` says how many, `at` is the latest.
    public struct AuditEntry: Codable, Sendable, Hashable {
        public var at: Int64
        public var kind: String
        public var deviceId: String?
        public var reason: String?
        public var count: Int
        public init(at: Int64, kind: String, deviceId: String?, reason: String?, count: Int = 1) {
            self.at = at
            self.kind = kind
            self.deviceId = deviceId
            self.reason = reason
            self.count = count
        }
    }

    /// A security-relevant event of the user's account (`GET /v1/security-events`): what the app
    /// shows the owner — "Someone asked to add a device", "Your password was changed" — with the
    /// client address it came from.
    public struct SecurityEvent: Codable, Sendable, Hashable {
        public var at: Int64
        public var kind: String
        public var deviceId: String?
        public var client: String?
        public init(at: Int64, kind: String, deviceId: String?, client: String?) {
            self.at = at
            self.kind = kind
            self.deviceId = deviceId
            self.client = client
        }
    }

    /// A device waiting to be enrolled (`/v1/enrolment-requests`).
    /// A device removal that waits for its recovery code or its delay (`/v1/device-removals`).
    public struct DeviceRemoval: Codable, Sendable, Hashable {
        public var id: String
        /// The device it removes.
        public var deviceId: String
        /// `awaitingCode` (the code was sent; until `codeExpiresAt`), `scheduled` (the device is
        /// revoked at `executesAt` unless a device cancels it) or `ended` (by `endedBy`).
        public var status: String
        public var createdAt: Int64
        public var codeExpiresAt: Int64
        public var executesAt: Int64?
        /// For an `ended` removal: `cancelled`, `wrongCodes`, `executed` or `deviceGone`.
        public var endedBy: String?
        public init(
            id: String, deviceId: String, status: String, createdAt: Int64, codeExpiresAt: Int64, executesAt: Int64? = nil,
            endedBy: String? = nil
        ) {
            self.id = id
            self.deviceId = deviceId
            self.status = status
            self.createdAt = createdAt
            self.codeExpiresAt = codeExpiresAt
            self.executesAt = executesAt
            self.endedBy = endedBy
        }
    }

    public struct EnrolmentRequest: Codable, Sendable, Hashable {
        public var id: String
        /// The id the device will have (the replaced device's for a new key).
        public var deviceId: String
        public var name: String
        public var publicKey: String
        public var replacing: Bool
        /// The text an approving device shows and signs (a client builds it itself and compares).
        public var approvalText: String
        /// `pending`, `approved` or `ended` (by `endedBy`; nothing can use it any more).
        public var status: String
        public var createdAt: Int64
        public var expiresAt: Int64
        /// For an `ended` request: `wrongCodes` or `cancelled`.
        public var endedBy: String?
        /// Only in the answer to the request's creation: the code the new phone shows and the
        /// approving phone's user types (``EnrolmentApprovalText/signed(_:bindingCode:)``).
        public var bindingCode: String?
        public init(
            id: String, deviceId: String, name: String, publicKey: String, replacing: Bool, approvalText: String, status: String,
            createdAt: Int64,
            expiresAt: Int64, endedBy: String? = nil, bindingCode: String? = nil
        ) {
            self.endedBy = endedBy
            self.bindingCode = bindingCode
            self.id = id
            self.deviceId = deviceId
            self.name = name
            self.publicKey = publicKey
            self.replacing = replacing
            self.approvalText = approvalText
            self.status = status
            self.createdAt = createdAt
            self.expiresAt = expiresAt
        }
    }

    /// `POST /v1/users`.
    public struct CreatedUser: Codable, Sendable, Hashable {
        public var username: String
        public init(username: String) { self.username = username }
    }

    /// `DELETE /v1/sessions`.
    public struct RevokedSessions: Codable, Sendable, Hashable {
        public var revoked: Int
        public init(revoked: Int) { self.revoked = revoked }
    }

    /// What revoking every device of a user took away (`DELETE /v1/backend/users/{userId}/devices`).
    public struct RevokedDevices: Codable, Sendable, Hashable {
        public var devices: Int
        public var sessions: Int
        public init(devices: Int, sessions: Int) {
            self.devices = devices
            self.sessions = sessions
        }
    }

    /// Every error response. `error` is a code of `docs/Protocol.md` §5; `field` and `reason`
    /// name what was wrong with a 400. A 401 carries nothing else, whatever failed.
    public struct ErrorBody: Codable, Sendable, Hashable {
        public var error: String
        public var field: String?
        public var reason: String?
        public init(error: String, field: String? = nil, reason: String? = nil) {
            self.error = error
            self.field = field
            self.reason = reason
        }
    }
}
