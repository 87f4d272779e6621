import BioAuthAttestation
import BioAuthCore
import Foundation

/// Why a verification failed. Goes to the audit log and the server log, never to the client,
/// which gets one uniform answer for all of them.
public struct FailureReason: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    private init(_ name: String) { description = name }

    public static let unknownChallenge = FailureReason("unknownChallenge")
    public static let expiredChallenge = FailureReason("expiredChallenge")
    public static let wrongPurpose = FailureReason("wrongPurpose")
    public static let unknownDevice = FailureReason("unknownDevice")
    public static let revokedDevice = FailureReason("revokedDevice")
    public static let wrongUser = FailureReason("wrongUser")
    /// A step-up finished after its device's key changed: the challenge was issued to another key.
    public static let replacedKey = FailureReason("replacedKey")
    public static let malformedSignature = FailureReason("malformedSignature")
    public static let badSignature = FailureReason("badSignature")
    public static let unknownUser = FailureReason("unknownUser")
    public static let badPassword = FailureReason("badPassword")
    public static let missingSession = FailureReason("missingSession")
    public static let unknownSession = FailureReason("unknownSession")
    public static let expiredSession = FailureReason("expiredSession")
    public static let revokedSession = FailureReason("revokedSession")
    public static let revokedDeviceSession = FailureReason("revokedDeviceSession")
    public static let approvalRejected = FailureReason("approvalRejected")
    /// A challenge finished by another session than the one that asked for it.
    public static let wrongSession = FailureReason("wrongSession")
    /// A wrong recovery code, or one for a request that is gone, approved or out of attempts.
    public static let recoveryCodeRejected = FailureReason("recoveryCodeRejected")
    /// No API key, or one that is malformed, unknown or revoked.
    public static let unknownApiKey = FailureReason("unknownApiKey")
    /// A valid API key without the scope the route needs.
    public static let apiKeyScope = FailureReason("apiKeyScope")
    /// Refused while a failure limit of the address or the user is reached.
    public static let lockedOut = FailureReason("lockedOut")
    /// No longer given (there is no per-device challenge quota); audit rows written before still
    /// carry it, and ``AuditReason/userVisible`` still reads it as `lockedOut`.
    public static let tooManyChallenges = FailureReason("tooManyChallenges")
    /// Your ``PrimaryAuthenticator`` proved no user.
    public static let primaryLoginRejected = FailureReason("primaryLoginRejected")
    /// A refresh token that is unknown, or whose session is revoked or expired.
    public static let unknownRefreshToken = FailureReason("unknownRefreshToken")
    /// A refresh token used a second time: its session is revoked.
    public static let refreshTokenReused = FailureReason("refreshTokenReused")
    /// An enrolment without attestation where the ``AttestationPolicy`` requires one.
    public static let attestationMissing = FailureReason("attestationMissing")
    /// An enrolment whose attestation failed `check`: `attestation.<check>`.
    public static func attestation(_ check: AttestationError.Check) -> FailureReason { FailureReason("attestation." + check.description) }
    /// A login or step-up without an App Attest assertion from a device App Attest proved, where
    /// the ``AttestationPolicy/Assertions-swift.enum/required`` rule asks for one.
    public static let assertionMissing = FailureReason("assertionMissing")
    /// A login or step-up whose App Attest assertion failed `check`: `assertion.<check>`.
    public static func assertion(_ check: AttestationError.Check) -> FailureReason { FailureReason("assertion." + check.description) }
    /// A passkey ceremony whose WebAuthn response failed `check`: `passkey.<check>`.
    public static func passkey(_ check: WebAuthnError.Check) -> FailureReason { FailureReason("passkey." + check.description) }
    /// A login of a device bound to a DPoP key without a proof by that key, or a session bound to
    /// one used without it: `dpop.<code>`.
    public static func dpop(_ code: DPoPError.Code) -> FailureReason { FailureReason("dpop." + code.description) }
    /// ``dpop(_:)`` for the code a refusal's detail names.
    static func dpopRefusal(_ code: String) -> FailureReason { FailureReason("dpop." + code) }
    /// A login or step-up's new App Attest key (after a reinstall) whose attestation failed `check`.
    public static func reattestation(_ check: AttestationError.Check) -> FailureReason {
        FailureReason("reattestation." + check.description)
    }
}

/// A failure of a server operation. Carries identifiers and reason codes only, never a secret.
/// Each code carries the HTTP status `BioAuthHTTP` answers it with.
public struct ServerError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let description: String
        /// The HTTP status a transport answers with. Every code is declared with one, so no code
        /// can fall through to a default.
        public let status: Int
        private init(_ name: String, status: Int) {
            description = name
            self.status = status
        }

        /// Malformed input: the field is named (HTTP 400).
        public static let invalidRequest = Code("invalid_request", status: 400)
        /// Any verification or session failure: one uniform answer (HTTP 401).
        public static let authenticationFailed = Code("authentication_failed", status: 401)
        /// Authenticated, but this session may not do that (403); `detail` is the reason the
        /// answer carries: what ``Authority/refusal(_:)`` names, `coolingDown`, `noRecoveryChannel`
        /// or `apiKeyScope`.
        public static let forbidden = Code("forbidden", status: 403)
        /// Enrolling this device needs an approved enrolment request: an approval from another of
        /// the user's devices or a recovery code (403).
        public static let approvalRequired = Code("approval_required", status: 403)
        public static let notFound = Code("not_found", status: 404)
        public static let conflict = Code("conflict", status: 409)
        /// The thing named has ended for good, e.g. an enrolment request after its wrong codes or
        /// its cancellation (410).
        public static let gone = Code("gone", status: 410)
        /// A DPoP proof that is missing where the session or device is bound, malformed, for
        /// another request, replayed, or by another key (400, RFC 9449 §5); `detail` is the
        /// `DPoPError/Code` that failed.
        public static let invalidDPoPProof = Code("invalid_dpop_proof", status: 400)
        /// The proof lacks the server's current nonce (400, RFC 9449 §8): retry with the one in
        /// the `DPoP-Nonce` header (``ServerError/dpopNonce``).
        public static let useDPoPNonce = Code("use_dpop_nonce", status: 400)
        /// The enrolment's attestation is missing where the deployment requires one (`detail`
        /// `missing`), or failed the check `detail` names (`AttestationError.Check`) (403).
        public static let attestationRejected = Code("attestation_rejected", status: 403)
        /// A known path with another method (405; the response lists the allowed ones).
        public static let methodNotAllowed = Code("method_not_allowed", status: 405)
        /// A request body over the size limit (413).
        public static let payloadTooLarge = Code("payload_too_large", status: 413)
        /// A request body that is not `application/json` (415).
        public static let unsupportedMediaType = Code("unsupported_media_type", status: 415)
        /// Too many requests or failures; `retryAfter` says when to come back (429).
        public static let rateLimited = Code("rate_limited", status: 429)
        /// The server itself failed (500). Never caused by client input.
        public static let internalError = Code("internal_error", status: 500)
        /// The database cannot be reached; `retryAfter` says when to try again (503).
        public static let unavailable = Code("unavailable", status: 503)
    }

    public let code: Code
    /// For `invalidRequest`: the field and what is wrong with it.
    public let field: String?
    public let detail: String?
    /// For `authenticationFailed`: the real reason (audited, not sent).
    public let reason: FailureReason?
    /// For `rateLimited`: seconds.
    public let retryAfter: Int?
    /// For `useDPoPNonce`: the nonce a retry's proof must carry (the `DPoP-Nonce` header).
    public var dpopNonce: String?
    /// A `WWW-Authenticate` challenge for the answer (RFC 9449 §7.1: a DPoP-bound token refused).
    public var authenticate: String?

    /// The uniform 401 for a session refused for its DPoP binding (the reason audited), with the
    /// challenge RFC 9449 §7.1 asks of a protected resource.
    public static func dpopRefused(_ reason: FailureReason) -> ServerError {
        var error = ServerError.authenticationFailed(reason)
        error.authenticate = #"DPoP error="invalid_dpop_proof", algs="ES256""#
        return error
    }

    public init(_ code: Code, field: String? = nil, detail: String? = nil, reason: FailureReason? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.field = field
        self.detail = detail
        self.reason = reason
        self.retryAfter = retryAfter
    }

    public init(_ error: WireFormatError) {
        self.init(.invalidRequest, field: error.field, detail: error.code.description)
    }

    /// The refusal of a DPoP proof: `use_dpop_nonce` with the current nonce, else `invalid_dpop_proof`.
    public init(_ error: DPoPError, nonce: String? = nil) {
        if error.code == .nonceRequired {
            self.init(.useDPoPNonce, detail: error.code.description)
            dpopNonce = nonce
        } else {
            self.init(.invalidDPoPProof, field: "DPoP", detail: error.code.description)
        }
    }

    public static func authenticationFailed(_ reason: FailureReason) -> ServerError {
        ServerError(.authenticationFailed, reason: reason)
    }

    public var description: String {
        var text = "ServerError.\(code)"
        if let field { text += " field=\(field)" }
        if let detail { text += " (\(detail))" }
        if let reason { text += " reason=\(reason)" }
        if let retryAfter { text += " retryAfter=\(retryAfter)" }
        return text
    }
}

extension Optional where Wrapped == AttestationError.Check {
    /// The `reason` of a 403 `attestation_rejected`: the failed check's name, or `missing`.
    var refusalDetail: String { self?.description ?? "missing" }
}
