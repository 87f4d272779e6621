import BioAuthCore
import Foundation
import Logging
import Metrics

/// Issuing and finishing the challenges every device proof goes through (enrolment, login,
/// step-up). Challenges are 32 random bytes, expire after `challengeTTL`, and are consumed
/// atomically by the first attempt, whether it verifies or not.
struct Challenges: Flow {
    let context: FlowContext

    /// Stores a new challenge for `binding` after the store's limits admit it.
    func issue(
        _ binding: ChallengeRecord.Binding, user: String, device: String, session: String? = nil, enrolmentRequest: String? = nil, _ request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        let now = clock.now()
        let expiry = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + configuration.challengeTTL).rounded(.down))
        let challenge = ChallengeRecord(
            id: SecretBytes.random(count: 16).data, binding: binding, relyingPartyID: configuration.relyingPartyID, userID: user,
            deviceID: device, nonce: SecretBytes.random(count: 32).data, createdAt: now, expiresAt: expiry, sessionID: session,
            enrolmentRequestID: enrolmentRequest)
        let message: SignedMessage
        do { message = try challenge.message() } catch { throw ServerError(error) }
        let limits = ChallengeLimits(
            outstandingPerDevice: configuration.maxOutstandingChallengesPerDevice, now: now,
            lockout: windows.lockout(client: request.clientAddress, at: now, factor: .signature))
        switch try await run(request, { try await self.store.issueChallenge(challenge, limits: limits) }) {
        case .issued:
            metrics.challenges.increment()
            return ChallengeEnvelope(message)
        case .lockedOut:
            throw await refuseLockedOut(user: user, device: device, request)
        case .tooManyChallenges:
            await audit(.challengeRefused, user: user, device: device, reason: FailureReason.tooManyChallenges.description, request: request)
            throw ServerError(.rateLimited, detail: "too many outstanding challenges", retryAfter: Int(configuration.challengeTTL))
        }
    }

    /// Takes the challenge (consumed whatever happens next), has ``ChallengeVerifier`` decide and,
    /// in the same store transaction, records either the failure or what `success` builds.
    /// `success` returns nil when the challenge's binding does not fit.
    func finish(
        _ challengeID: String, _ signature: String, purpose: SignedMessage.Purpose, session: SessionRecord?, _ request: RequestInfo,
        success: @escaping @Sendable (ChallengeRecord, Date) -> ChallengeVerdict?
    ) async throws(ServerError) -> RecordedVerdict {
        let id = try Validate.base64URL(challengeID, field: "challengeId", count: 16...16)
        let signatureBytes = try Validate.base64URL(signature, field: "signature", count: 1...256)
        if session == nil { try admit(request) }  // authenticated calls were admitted by authenticate(token:request:)
        let now = clock.now()
        let lockout = windows.lockout(client: request.clientAddress, at: now, factor: .signature)
        let verifier = ChallengeVerifier(relyingPartyID: configuration.relyingPartyID)
        let recorded = try await run(request) {
            try await self.store.finishChallenge(id: id, lockout: lockout) { taken in
                func failure(_ reason: FailureReason) -> ChallengeVerdict {
                    let user = taken?.challenge.userID, device = taken?.challenge.deviceID
                    let audit = self.event(purpose.auditFailure, user: user, device: device, reason: reason.description, request: request)
                    // A signature lockout query counts the sending address only (FailureSubject).
                    return .failed(FailureRecord(reason, lockout: lockout, user: user, audit: audit))
                }
                if let taken, taken.lockedOut {
                    let challenge = taken.challenge
                    return .refused([self.event(.rateLimited, user: challenge.userID, device: challenge.deviceID, reason: FailureReason.lockedOut.description, request: request)])
                }
                switch verifier.verify(challenge: taken?.challenge, device: taken?.device, signature: signatureBytes, purpose: purpose, session: session, now: now) {
                case .rejected(let reason): return failure(reason)
                case .verified(let challenge): return success(challenge, now) ?? failure(.wrongPurpose)
                }
            }
        }
        switch recorded.verdict {
        case .failed(let failure): throw failed(failure, locked: recorded.lockedSubjects, request)
        case .refused(let events):
            metrics.rateLimited.increment()
            for event in events { log(event) }
            throw ServerError(.rateLimited, retryAfter: windows.retryAfter(now))
        case .login, .enrolment, .approval: return recorded
        }
    }
}

extension SignedMessage.Purpose {
    var auditFailure: AuditKind {
        switch self {
        case .registration: .deviceEnrollmentFailed
        case .login: .loginFailed
        case .stepUp: .stepUpFailed
        }
    }
}
