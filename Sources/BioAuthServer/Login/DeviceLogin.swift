import BioAuthCore
import Crypto
import Foundation
import Logging
import Metrics

/// Challenge–response login with an enrolled device key: a device session with an access token
/// and a refresh token.
struct DeviceLogin: Flow {
    let context: FlowContext

    func begin(userID: UserID, deviceID: DeviceID, request: RequestInfo) async throws(ServerError) -> ChallengeEnvelope {
        let userID = try Validate.userID(userID)
        let deviceID = try Validate.deviceID(deviceID)
        try await admit(request)
        return try await Challenges(context: context).issue(.login, user: userID, device: deviceID, request)
    }

    func finish(challengeID: ChallengeID, signature: String, appAttest: AppAttestProof? = nil, request: RequestInfo)
        async throws(ServerError)
        -> SessionGrant
    {
        let token = SecretBytes.random(count: 32)
        let refresh = SecretBytes.random(count: 32)
        // The proof is checked before the challenge is taken (a proof for another request leaves
        // it usable); its key against the device's inside the take. The single-use challenge
        // makes remembering the proof's jti unnecessary here.
        let proof = try await dpopProof(request, tokenEndpoint: true, remember: false)
        if configuration.dpop.required, proof == nil { throw ServerError(DPoPError(.missing, "this server requires DPoP")) }
        let (login, _) = try await Challenges(context: context).finish(
            challengeID, signature, appAttest: appAttest, purpose: .login, session: nil, dpopKey: .presented(proof?.thumbprint), request
        ) { proven, taken, now in
            let challenge = proven.challenge
            var session = self.sessionRecord(
                token: token, user: challenge.userID, device: challenge.deviceID, kind: .device, ttl: self.configuration.sessionTTL, at: now
            )
            session.refreshTokenHash = TokenHash(of: refresh)
            session.dpopThumbprint = proof?.thumbprint
            let audit = self.event(.loginSucceeded, user: challenge.userID, device: challenge.deviceID, request: request)
            // Clears no password counter (it says nothing about the password), but the address
            // becomes known: the owner's way back to a password login no stranger can slow down.
            return ((session, audit, taken.device), .login(session, from: request.clientAddress, audit: audit))
        }
        return try await granted(login, token: token, refresh: refresh, request: request)
    }

    /// A verified login's answer: logged, counted, and its session's tokens.
    func granted(
        _ login: (session: SessionRecord, audit: AuditEvent, device: DeviceRecord?), token: SecretBytes, refresh: SecretBytes,
        request: RequestInfo
    ) async throws(ServerError) -> SessionGrant {
        let (session, audit, device) = login
        metrics.logins.increment()
        log(audit, request: request)
        let access = try await run(request) { try await self.context.accessTokens.issue(for: session, device: device, audit: audit) }
        return SessionGrant(
            token: Base64URL.encode(token.data), session: session,
            tokens: TokenGrant(
                accessToken: access.token, accessTokenExpiresAt: access.expiresAt, refreshToken: Base64URL.encode(refresh.data),
                dpopBound: session.dpopThumbprint != nil))
    }
}
