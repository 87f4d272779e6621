import BioAuthCore
import Foundation

/// A sign-in started on another screen, waiting for this phone (`docs/Protocol.md`, flow 8).
/// Show ``text`` — who asks, from where, when — and ask the user for the number that screen
/// shows; never guess it.
public struct SignInRequestToApprove: Sendable, Hashable {
    public let id: String
    /// `Sign in as ‹user› on another screen, from ‹address› at ‹time›: ‹screen›`, written by the
    /// server from its own facts: shown, and signed with the number
    /// (`CrossDeviceApprovalText.signed(_:number:)`).
    public let text: String
    /// The address that asked, as the server saw it.
    public let requester: String
    /// What the asking screen is, in the server's words (`Chrome on Windows`, `ScreenLabel`):
    /// a browser family and system from a fixed vocabulary, never the screen's own text.
    public let userAgent: String
    public let createdAt: Date
    public let expiresAt: Date

    init(_ request: Wire.CrossDeviceRequest) {
        id = request.id
        text = request.text
        requester = request.requester
        userAgent = request.userAgent
        createdAt = Date(seconds: request.createdAt)
        expiresAt = Date(seconds: request.expiresAt)
    }
}

extension BioAuthClient {
    // MARK: - A phone that lets another screen in

    /// Sign-ins started on other screens that wait for this user's phones, those from addresses
    /// where the user signed in first (needs a device session: ``logIn()``). Call it when the
    /// deployment's push (the `crossdevice.requested` event) arrives, and when the app opens.
    public func signInRequests() async throws(ClientError) -> [SignInRequestToApprove] {
        let session = try currentSession()
        let requests = try await authorized { () async throws(ClientError) in try await api.crossDeviceRequests(token: session) }
        return requests.map(SignInRequestToApprove.init)
    }

    /// Lets the other screen in: the user typed `number`, the one that screen shows; one prompt
    /// shows ``SignInRequestToApprove/text`` and signs it with the number. A number that is not
    /// the screen's is refused by the server (``ClientError/Code/authenticationFailed``) and ends
    /// the request: whoever asked the user to type it did not get in. This phone must be out of
    /// its cool-down (``ClientError/Code/forbidden`` otherwise).
    public func approveSignIn(_ request: SignInRequestToApprove, number: String) async throws(ClientError) {
        let approval = try await approve(operation: CrossDeviceApprovalText.signed(request.text, number: number), reason: request.text)
        // The session signed the step-up a moment ago: a 401 here is the approval refused (a
        // wrong number), not the session gone, so the session is kept.
        try await api.approveCrossDevice(
            id: request.id, Wire.EnrolmentApproval(approval: approval.token.value), token: try currentSession())
    }

    /// Refuses a sign-in the user did not start: the other screen's next poll finds it ended.
    public func denySignIn(_ request: SignInRequestToApprove) async throws(ClientError) {
        let session = try currentSession()
        try await authorized { () async throws(ClientError) in try await api.denyCrossDevice(id: request.id, token: session) }
    }
}

extension ServerAPI {
    /// `POST /v1/cross-device/requests`: the asking screen's number and poll token.
    public func startCrossDeviceSignIn(_ body: Wire.CrossDeviceStart) async throws(ClientError) -> Wire.CrossDeviceStarted {
        try await call(.post, "/v1/cross-device/requests", body)
    }

    /// `POST /v1/cross-device/requests/{id}/poll`: pending, approved with the session, or ended.
    public func pollCrossDeviceSignIn(id: String, _ body: Wire.CrossDevicePoll) async throws(ClientError) -> Wire.CrossDevicePollResult {
        try await call(.post, "/v1/cross-device/requests/" + Self.escape(id) + "/poll", body)
    }

    public func crossDeviceRequests(token: BearerToken) async throws(ClientError) -> [Wire.CrossDeviceRequest] {
        try await call(.get, "/v1/cross-device/requests", Empty?.none, token: token)
    }

    public func approveCrossDevice(id: String, _ body: Wire.EnrolmentApproval, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.post, "/v1/cross-device/requests/" + Self.escape(id) + "/approve", body, token: token)
    }

    public func denyCrossDevice(id: String, token: BearerToken) async throws(ClientError) {
        let _: Empty = try await call(.delete, "/v1/cross-device/requests/" + Self.escape(id), Empty?.none, token: token)
    }
}
