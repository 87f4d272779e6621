import BioAuthCore
import Foundation

/// The server's backend API, for the app's **backend** — never the app: an API key in an app is
/// an API key for everyone. Each call sends the key as `Authorization: Bearer`; a key without the
/// endpoint's scope gets ``ClientError/Code-swift.struct/forbidden``.
public struct BackendAPI: Sendable {
    let server: ServerAPI
    let apiKey: BearerToken

    /// A client for the backend API with `apiKey` (`bioauth_sk_…`, from `bioauth-server api-key create`).
    public init(transport: any BioAuthTransport, apiKey: String) {
        server = ServerAPI(transport: transport)
        self.apiKey = BearerToken(apiKey)
    }

    /// A one-time enrolment grant for `userID`, after the backend's own login (scope
    /// `enrolment-grants`): hand its token to the app, which enrols the user's first device with it.
    public func enrolmentGrant(userID: String) async throws(ClientError) -> Wire.Session {
        try await server.call(.post, "/v1/backend/enrolment-grants", Wire.EnrolmentGrantRequest(userId: userID), token: apiKey)
    }

    /// Whether an access token is active now (scope `introspect`, RFC 7662): signature, expiry,
    /// and its session not revoked — what a signature check alone cannot see.
    public func introspect(_ token: String) async throws(ClientError) -> Wire.Introspection {
        try await server.call(.post, "/v1/introspect", Wire.IntrospectionRequest(token: token), token: apiKey)
    }

    /// Redeems an approval before acting on it (scope `approvals`): succeeds once, for exactly
    /// its operation and user, while the device that signed it is active.
    public func redeem(_ body: Wire.Redemption) async throws(ClientError) -> Wire.RedeemedApproval {
        try await server.call(.post, "/v1/backend/approvals/redeem", body, token: apiKey)
    }

    /// Vouches for a pending enrolment request of `userID`, a user of the backend's own login,
    /// after the backend's own account recovery proved the person — an e-mail link, a support
    /// call, never the password alone (scope `recovery`). It approves the request as a recovery
    /// code would; the app then completes the enrolment. ``ClientError/Code-swift.struct/conflict``
    /// when it was approved already, ``ClientError/Code-swift.struct/requestEnded`` once it ended,
    /// ``ClientError/Code-swift.struct/notFound`` for a request or user that is not the backend's.
    public func vouch(forEnrolmentRequest id: String, of userID: String) async throws(ClientError) {
        let path = "/v1/backend/users/" + ServerAPI.escape(userID) + "/enrolment-requests/" + ServerAPI.escape(id) + "/approve"
        let _: ServerAPI.Empty = try await server.call(.post, path, ServerAPI.Empty?.none, token: apiKey)
    }
}
