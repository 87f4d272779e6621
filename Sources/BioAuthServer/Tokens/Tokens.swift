import BioAuthCore
import Crypto
import Foundation
import Logging

/// Access tokens after login: refresh-token rotation with reuse detection, introspection for the
/// app's backend, and the published verification keys.
struct Tokens: Flow {
    let context: FlowContext

    func refresh(refreshToken: String, request: RequestInfo) async throws(ServerError) -> TokenGrant {
        try await admit(request)
        let presented = try Validate.base64URL(refreshToken, field: "refreshToken", count: 32...32)
        let next = SecretBytes.random(count: 32)
        let rotated = event(.tokenRefreshed, request: request)
        let reused = event(.refreshTokenReused, reason: AuditReason(FailureReason.refreshTokenReused), request: request)
        let now = clock.now(), grace = configuration.tokens.refreshRetryGrace
        let proof = try await dpopProof(request, tokenEndpoint: true, remember: true)
        let rotation = try await run(request) {
            try await self.writer.run(
                RotateRefreshToken(
                    presented: presented, successor: next, grace: grace, now: now, audit: rotated, reuseAudit: reused,
                    proofKey: proof?.thumbprint))
        }
        let (state, successor): (SessionState, SecretBytes)
        switch rotation {
        case .rotated(let rotatedState): (state, successor) = (rotatedState, next)
        case .repeated(let repeatedState, let sameSuccessor): (state, successor) = (repeatedState, sameSuccessor)
        case .reused:
            logger(for: request).warning("refresh token reused: session revoked")
            throw ServerError.authenticationFailed(.refreshTokenReused)
        case .refused:
            await audit(.refreshRejected, reason: AuditReason(FailureReason.unknownRefreshToken), request: request)
            throw ServerError.authenticationFailed(.unknownRefreshToken)
        case .keyMismatch(let code):
            await audit(.refreshRejected, reason: AuditReason(FailureReason.dpop(code)), request: request)
            throw ServerError(DPoPError(code, "the refresh token is bound to another key"))
        }
        guard state.deviceActive, state.session.kind == .device, let deviceID = state.session.deviceID else {
            await audit(.refreshRejected, reason: AuditReason(FailureReason.unknownRefreshToken), request: request)
            throw ServerError.authenticationFailed(.unknownRefreshToken)
        }
        log(rotated.about(user: state.session.userID, device: state.session.deviceID))
        // The token says what the device's current key proved, read afresh.
        let device = try await run(request) { try await self.store.device(id: deviceID) }
        let access = try await run(request) {
            try await self.context.accessTokens.issue(for: state.session, device: device, audit: rotated)
        }
        return TokenGrant(
            accessToken: access.token, accessTokenExpiresAt: access.expiresAt, refreshToken: Base64URL.encode(successor.data),
            dpopBound: state.session.dpopThumbprint != nil)
    }

    func introspect(token: String, request: RequestInfo) async throws(ServerError) -> VerifiedAccessToken? {
        // As the request's schema says: at most 4096 code points (any other string is a token that
        // is not active).
        guard token.unicodeScalars.count <= 4096 else { throw ServerError(WireFormatError(.wrongLength, field: "token")) }
        let audit = event(.tokenRefreshed, request: request)
        guard let claims = try await run(request, { try await self.context.accessTokens.verify(token, audit: audit)?.verified }) else {
            return nil
        }
        guard let state = try await run(request, { try await self.store.session(id: claims.sessionID) }), state.deviceActive,
            state.session.revokedAt == nil,
            state.session.expiresAt > clock.now(), state.session.userID.rawValue == claims.subject
        else { return nil }
        return claims
    }

    func publishedKeys(request: RequestInfo) async throws(ServerError) -> [PublishedKey] {
        let audit = event(.signingKeyAdded, request: request)
        return try await run(request) { try await self.context.accessTokens.published(audit: audit) }
    }
}

extension WritePlan {
    /// A refresh token presented (its session read locked, ``LockedRows/refreshSession``). The
    /// current token of a live, unexpired session is rotated: replaced by `successor`, the old one
    /// remembered as spent, with the successor sealed under it. A spent one presented again within
    /// `grace` of its rotation, while its successor is still current, returns that same successor:
    /// a retry whose answer was lost, or a second request of the same app racing the first. Any
    /// other spent one is reuse — a copy is in other hands — so its session ends
    /// (``reusedRefreshToken(sessionID:userID:at:audit:)``). Anything else writes nothing. Every
    /// audit event is about the session's user and device.
    package static func refresh(
        _ rows: LockedRows, presented: Data, successor: SecretBytes, grace: TimeInterval, at now: Date, audit: AuditEvent,
        reuseAudit: AuditEvent
    ) -> (verdict: RefreshRotation, plan: WritePlan) {
        guard var state = rows.refreshSession else { return (.refused, WritePlan()) }
        let session = state.session
        let live = session.revokedAt == nil && session.expiresAt > now
        if let spent = rows.spentRefreshToken {
            if live, let spentAt = spent.spentAt, spentAt <= now, now.timeIntervalSince(spentAt) < grace,
                let sealed = spent.sealedSuccessor,
                let same = RefreshSuccessor.open(sealed, under: presented), TokenHash(of: same) == session.refreshTokenHash
            {
                var plan = WritePlan()
                var retried = audit.about(user: session.userID, device: session.deviceID)
                retried.reason = .refreshRetried
                plan.audit(retried)
                return (.repeated(state, successor: same), plan)
            }
            let audit = reuseAudit.about(user: session.userID, device: session.deviceID)
            return (
                .reused(sessionID: session.id), .reusedRefreshToken(sessionID: session.id, userID: session.userID, at: now, audit: audit)
            )
        }
        guard live else { return (.refused, WritePlan()) }
        let replacement = TokenHash(of: successor)
        var plan = WritePlan()
        plan.add(
            .rotateRefreshToken(
                sessionID: session.id, spent: TokenHash(of: presented), replacement: replacement, at: now,
                sealedSuccessor: RefreshSuccessor.seal(successor, under: presented)))
        plan.audit(audit.about(user: session.userID, device: session.deviceID))
        state.session.refreshTokenHash = replacement
        return (.rotated(state), plan)
    }
}
