import BioAuthAttestation
import BioAuthCore
import Foundation
import Logging
import Metrics

/// Passkeys: registration and sign-in.
extension BioAuthService {
    // MARK: Passkeys

    /// Options for `navigator.credentials.create()`: a passkey registration for the session's user
    /// under the name `name`, enrolled as a device under the same ``EnrolmentPolicy`` as a phone.
    /// 404 when ``ServerConfiguration/passkeys`` is nil.
    public func beginPasskeyRegistration(session: SessionRecord, name: String, request: RequestInfo) async throws(ServerError)
        -> Wire.PasskeyCreationOptions
    {
        try await PasskeyCeremonies(context: login.context).beginRegistration(session: session, name: name, request: request)
    }

    /// Verifies the registration (WebAuthn §7.1, every attestation format ``PasskeyPolicy`` accepts)
    /// and enrols the passkey as a device of the session's user — or, when the policy asks for a
    /// proof (any device but the user's first), keeps it in an enrolment request that another
    /// device approves with its binding code, or a recovery code does.
    public func finishPasskeyRegistration(
        session: SessionRecord, challengeID: ChallengeID, credential: Wire.PasskeyRegistrationCredential, request: RequestInfo
    ) async throws(ServerError) -> PasskeyRegistration {
        try await PasskeyCeremonies(context: login.context).finishRegistration(
            session: session, challengeID: challengeID, credential: credential, request: request)
    }

    /// Enrols the passkey that an approved enrolment request of this session's holds.
    public func completePasskeyRegistration(session: SessionRecord, enrolmentRequestID: EnrolmentRequestID, request: RequestInfo)
        async throws(ServerError) -> DeviceRecord
    {
        try await PasskeyCeremonies(context: login.context).completeRegistration(
            session: session, enrolmentRequestID: enrolmentRequestID, request: request)
    }

    /// Options for `navigator.credentials.get()` for `username`'s passkeys. Answers alike whether or
    /// not the user exists or has a passkey.
    public func beginPasskeyLogin(username: String, request: RequestInfo) async throws(ServerError) -> Wire.PasskeyRequestOptions {
        try await PasskeyCeremonies(context: login.context).beginLogin(username: username, request: request)
    }

    /// Verifies the passkey's assertion (WebAuthn §7.2) and opens a device session for the passkey,
    /// with the same tokens as a phone's login. Any failure is the uniform authentication failure.
    public func finishPasskeyLogin(
        challengeID: ChallengeID, credential: Wire.PasskeyAuthenticationCredential, request: RequestInfo
    ) async throws(ServerError) -> SessionGrant {
        try await PasskeyCeremonies(context: login.context).finishLogin(challengeID: challengeID, credential: credential, request: request)
    }

    /// A new access token for a device session's refresh token, which is replaced: each refresh
    /// token works once. Using one a second time revokes its session (RFC 9700 §4.14.2: a copy is
    /// in other hands). Unknown, spent or ended: the uniform authentication failure.
    public func refresh(refreshToken: String, request: RequestInfo) async throws(ServerError) -> TokenGrant {
        try await tokens.refresh(refreshToken: refreshToken, request: request)
    }

    /// RFC 7662 for the app's backend: the claims of an access token this server issued if it is
    /// valid now — signature, issuer, audience, expiry — and its session is still active (neither
    /// revoked nor expired, its device not revoked); nil otherwise.
    public func introspect(token: String, request: RequestInfo) async throws(ServerError) -> VerifiedAccessToken? {
        try await tokens.introspect(token: token, request: request)
    }

    /// The public keys that verify access tokens now, for `/.well-known/jwks.json`.
    public func publishedKeys(request: RequestInfo) async throws(ServerError) -> [PublishedKey] {
        try await tokens.publishedKeys(request: request)
    }
}
