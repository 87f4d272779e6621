import Foundation

/// Your own primary login, for a team embedding `BioAuthServer` beside its existing users: it
/// decides whether a credential proves a user — an OAuth authorization code exchanged with your
/// identity provider, a password checked against your own database — and names the user.
/// ``BioAuthService/primaryLogin(_:with:request:)`` turns a success into the primary session
/// that may enrol the user's first device. (The standalone server's backend API does the same
/// with enrolment grants; the built-in username + password accounts are the demo's.)
public protocol PrimaryAuthenticator: Sendable {
    associatedtype Credential: Sendable
    /// The user id `credential` proves (1–64 of A–Z a–z 0–9 . _ @ -), or nil if it proves none.
    /// Throwing means your login could not decide (its service is down): answered 503, counted
    /// as nothing.
    func authenticate(_ credential: Credential, request: RequestInfo) async throws -> String?
}
