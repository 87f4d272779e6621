import BioAuthCore
import Foundation

/// The server's HTTP API, one typed call per endpoint, over a ``BioAuthTransport``.
///
/// ``BioAuthClient`` is built on it; use it directly only for what the client does not do (an
/// admin screen, a test that forges requests). Every error is a ``ClientError``.
public struct ServerAPI: Sendable {
    public let transport: any BioAuthTransport
    /// Signs DPoP proofs for the token endpoints and for DPoP-bound tokens; nil: none are sent.
    public let dpop: DPoPProver?

    public init(transport: any BioAuthTransport, dpop: DPoPProver? = nil) {
        self.transport = transport
        self.dpop = dpop
    }

    public func createUser(_ body: Wire.Credentials) async throws(ClientError) -> Wire.CreatedUser {
        try await call(.post, "/v1/users", body)
    }

    public func passwordLogin(_ body: Wire.PasswordLogin) async throws(ClientError) -> Wire.Session {
        try await call(.post, "/v1/login/password", body)
    }

    /// `POST /v1/login/password/code`: 202, nothing returned.
    public func requestSignInCode(_ body: Wire.SignInCodeRequest) async throws(ClientError) {
        let _: Empty = try await call(.post, "/v1/login/password/code", body)
    }

    public func loginChallenge(_ body: Wire.LoginChallengeRequest) async throws(ClientError) -> ChallengeEnvelope {
        try await call(.post, "/v1/login/challenge", body)
    }

    public func finishLogin(_ body: Wire.SignedChallenge) async throws(ClientError) -> Wire.Session {
        try await call(.post, "/v1/login/finish", body, atTokenEndpoint: true)
    }

    public func registrationChallenge(_ body: Wire.RegistrationChallengeRequest, token: BearerToken) async throws(ClientError)
        -> ChallengeEnvelope
    {
        try await call(.post, "/v1/devices/registration/challenge", body, token: token)
    }

    public func finishRegistration(_ body: Wire.RegistrationFinish, token: BearerToken) async throws(ClientError) -> Wire.Device {
        try await call(.post, "/v1/devices/registration/finish", body, token: token, atTokenEndpoint: true)
    }

    public func stepUpChallenge(_ body: Wire.StepUpChallengeRequest, token: BearerToken) async throws(ClientError) -> ChallengeEnvelope {
        try await call(.post, "/v1/step-up/challenge", body, token: token)
    }

    public func finishStepUp(_ body: Wire.SignedChallenge, token: BearerToken) async throws(ClientError) -> Wire.Approval {
        try await call(.post, "/v1/step-up/finish", body, token: token)
    }

    /// Replaces a refresh token: a new access token and the next refresh token.
    public func refresh(_ body: Wire.RefreshRequest) async throws(ClientError) -> Wire.Tokens {
        try await call(.post, "/v1/token/refresh", body, atTokenEndpoint: true)
    }

    public func requestEnrolment(_ body: Wire.EnrolmentRequestCreation, token: BearerToken) async throws(ClientError)
        -> Wire.EnrolmentRequest
    {
        try await call(.post, "/v1/enrolment-requests", body, token: token)
    }

    public func enrolmentRequests(token: BearerToken) async throws(ClientError) -> [Wire.EnrolmentRequest] {
        try await call(.get, "/v1/enrolment-requests", Empty?.none, token: token)
    }

    public func enrolmentRequest(id: String, token: BearerToken) async throws(ClientError) -> Wire.EnrolmentRequest {
        try await call(.get, "/v1/enrolment-requests/" + Self.escape(id), Empty?.none, token: token)
    }

    public func approveEnrolment(id: String, _ body: Wire.EnrolmentApproval, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.post, "/v1/enrolment-requests/" + Self.escape(id) + "/approve", body, token: token)
    }

    public func cancelEnrolmentRequest(id: String, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.delete, "/v1/enrolment-requests/" + Self.escape(id), Empty?.none, token: token)
    }

    public func sendRecoveryCode(id: String, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.post, "/v1/enrolment-requests/" + Self.escape(id) + "/recovery-code", Empty?.none, token: token)
    }

    public func recoverEnrolment(id: String, _ body: Wire.RecoveryCodeEntry, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.post, "/v1/enrolment-requests/" + Self.escape(id) + "/recover", body, token: token)
    }

    public func requestDeviceRemoval(_ body: Wire.DeviceRemovalCreation, token: BearerToken) async throws(ClientError) -> Wire.DeviceRemoval
    {
        try await call(.post, "/v1/device-removals", body, token: token)
    }

    public func confirmDeviceRemoval(id: String, _ body: Wire.RecoveryCodeEntry, token: BearerToken) async throws(ClientError)
        -> Wire.DeviceRemoval
    {
        try await call(.post, "/v1/device-removals/" + Self.escape(id) + "/confirm", body, token: token)
    }

    public func deviceRemovals(token: BearerToken) async throws(ClientError) -> [Wire.DeviceRemoval] {
        try await call(.get, "/v1/device-removals", Empty?.none, token: token)
    }

    public func cancelDeviceRemoval(id: String, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.delete, "/v1/device-removals/" + Self.escape(id), Empty?.none, token: token)
    }

    public func devices(token: BearerToken) async throws(ClientError) -> [Wire.Device] {
        try await call(.get, "/v1/devices", Empty?.none, token: token)
    }

    public func renameDevice(id: String, _ body: Wire.DeviceRename, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.patch, "/v1/devices/" + Self.escape(id), body, token: token)
    }

    public func revokeDevice(id: String, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.delete, "/v1/devices/" + Self.escape(id), Empty?.none, token: token)
    }

    public func sessions(token: BearerToken) async throws(ClientError) -> [Wire.SessionInfo] {
        try await call(.get, "/v1/sessions", Empty?.none, token: token)
    }

    /// Ends every session of the user (a device out of its first day only); returns how many.
    public func revokeAllSessions(token: BearerToken) async throws(ClientError) -> Int {
        let reply: Wire.RevokedSessions = try await call(.delete, "/v1/sessions", Empty?.none, token: token)
        return reply.revoked
    }

    public func logout(token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.post, "/v1/logout", Empty?.none, token: token)
    }

    public func securityEvents(since: Int64?, token: BearerToken) async throws(ClientError) -> [Wire.SecurityEvent] {
        try await call(.get, "/v1/security-events" + (since.map { "?since=\($0)" } ?? ""), Empty?.none, token: token)
    }

    public func changePassword(_ body: Wire.PasswordChange, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.post, "/v1/password", body, token: token)
    }

    public func audit(token: BearerToken) async throws(ClientError) -> [Wire.AuditEntry] {
        try await call(.get, "/v1/audit", Empty?.none, token: token)
    }

    // MARK: -

    /// A body-less request or a 204 answer.
    struct Empty: Codable {}

    func call<Body: Encodable, Answer: Decodable>(
        _ method: TransportRequest.Method, _ path: String, _ body: Body?, token: BearerToken? = nil, atTokenEndpoint: Bool = false
    ) async throws(ClientError) -> Answer {
        let (_, answer) = try await exchange(method, path, body, token: token, atTokenEndpoint: atTokenEndpoint)
        if Answer.self == Empty.self, let empty = Empty() as? Answer { return empty }
        do { return try JSONDecoder().decode(Answer.self, from: answer) } catch { throw ClientError(.protocolViolation) }
    }

    /// Sends one call; a 2xx answer's status and body, every other answer its ``ClientError``.
    func exchange<Body: Encodable>(
        _ method: TransportRequest.Method, _ path: String, _ body: Body?, token: BearerToken? = nil, atTokenEndpoint: Bool = false
    ) async throws(ClientError) -> (Int, Data) {
        var data: Data?
        if let body {
            do { data = try JSONEncoder().encode(body) } catch { throw ClientError(.invalidRequest, field: "body") }
        }
        let response: TransportResponse
        do {
            response = try await send(
                TransportRequest(method: method, path: path, body: data, bearerToken: token), atTokenEndpoint: atTokenEndpoint)
        } catch {
            if error is CancellationError || Task.isCancelled { throw ClientError(.cancelled) }
            throw ClientError(.serverUnreachable)
        }
        guard (200..<300).contains(response.status) else { throw Self.error(for: response) }
        return (response.status, response.body)
    }

    /// The ``ClientError`` for a non-2xx answer (`docs/Protocol.md` §5 lists the statuses).
    static func error(for response: TransportResponse) -> ClientError {
        let body = try? JSONDecoder().decode(Wire.ErrorBody.self, from: response.body)
        switch response.status {
        case 400, 413, 415: return ClientError(.invalidRequest, field: body?.field)
        case 401: return ClientError(.authenticationFailed)
        case 403 where body?.error == "approval_required": return ClientError(.approvalRequired, field: body?.field)
        case 403 where body?.error == "attestation_rejected":
            return ClientError(.attestationRejected, field: body?.field, reason: body?.reason)
        case 403: return ClientError(.forbidden, field: body?.field, reason: body?.reason)
        case 404: return ClientError(.notFound, field: body?.field)
        case 409: return ClientError(.conflict, field: body?.field)
        case 410: return ClientError(.requestEnded)
        case 429: return ClientError(.rateLimited, retryAfter: response.retryAfter)
        case 503: return ClientError(.serverUnavailable, retryAfter: response.retryAfter)
        case 500...599: return ClientError(.serverError)
        default: return ClientError(.protocolViolation)
        }
    }

    /// Percent-encodes a path segment (identifiers are validated by the server; this keeps a
    /// hostile one from changing the path).
    static func escape(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }
}
