import BioAuthAttestation
import BioAuthCore
import Foundation
import Logging
import Metrics

/// The backend API: what an app's backend does with its API key.
extension BioAuthService {
    // MARK: - The backend API

    /// A one-time enrolment grant for `userID`, for a backend that owns the login: after its own
    /// login it asks for a grant and hands the token to the app, which enrols with it as with a
    /// primary session (`Authorization: Bearer`). The grant may enrol one device — it is revoked
    /// when the enrolment succeeds — and nothing else; it lives
    /// ``EnrolmentPolicy/grantTTL``. The user needs no password account here.
    public func issueEnrolmentGrant(userID: UserID, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        try await backend.issueEnrolmentGrant(userID: userID, request: request)
    }

    /// Creates an API key for the app's backend (`bioauth-server api-key create`). The secret is
    /// returned once and stored only as its hash.
    public func createApiKey(name: String, scopes: Set<ApiKeyScope>, request: RequestInfo) async throws(ServerError) -> (
        record: ApiKeyRecord, secret: ApiKeySecret
    ) {
        try await backend.createApiKey(name: name, scopes: scopes, request: request)
    }

    /// Every API key, revoked ones too, in creation order.
    public func apiKeys(request: RequestInfo) async throws(ServerError) -> [ApiKeyRecord] {
        try await backend.apiKeys(request: request)
    }

    /// Revokes an API key: the next request with it is refused by every instance.
    /// - Throws: ``ServerError`` `notFound` if no active key has that id.
    public func revokeApiKey(id: ApiKeyID, request: RequestInfo) async throws(ServerError) {
        try await backend.revokeApiKey(id: id, request: request)
    }

    /// The API key a backend request presents, if it is active and has `scope`. A missing,
    /// malformed, unknown or revoked key is the uniform 401; a key without the scope is 403.
    public func authenticateBackend(apiKey presented: String?, scope: ApiKeyScope, request: RequestInfo) async throws(ServerError)
        -> ApiKeyRecord
    {
        try await backend.authenticate(apiKey: presented, scope: scope, request: request)
    }

    /// The backend API for users whose login the backend owns: their devices, sessions and
    /// enrolment requests (``UserAdministration``).
    public var users: UserAdministration { UserAdministration(context: context) }
}
