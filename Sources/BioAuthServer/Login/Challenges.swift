import BioAuthAttestation
import BioAuthCore
import Foundation
import Logging
import Metrics

/// Issuing and finishing the challenges every device proof goes through (enrolment, login,
/// step-up). Challenges are 32 random bytes, expire after `challengeTTL`, and are consumed
/// atomically by the first attempt, whether it verifies or not.
struct Challenges: Flow {
    let context: FlowContext

    /// Stores a new challenge for `binding` unless the sending address is locked out.
    func issue(
        _ binding: ChallengeRecord.Binding, user: UserID, device: DeviceID, session: SessionID? = nil,
        enrolmentRequest: EnrolmentRequestID? = nil, _ request: RequestInfo
    ) async throws(ServerError) -> ChallengeEnvelope {
        let challenge = try await stored(
            binding, user: user, device: device, session: session, enrolmentRequest: enrolmentRequest, ttl: configuration.challengeTTL,
            request)
        do { return ChallengeEnvelope(try challenge.message()) } catch { throw ServerError(error) }
    }

    /// Stores a new challenge that lives `ttl` unless the sending address is locked out; returns it.
    func stored(
        _ binding: ChallengeRecord.Binding, user: UserID, device: DeviceID, session: SessionID? = nil,
        enrolmentRequest: EnrolmentRequestID? = nil, ttl: TimeInterval, _ request: RequestInfo
    ) async throws(ServerError) -> ChallengeRecord {
        let now = clock.now()
        let expiry = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + ttl).rounded(.down))
        let challenge = ChallengeRecord(
            id: .random(), binding: binding, relyingPartyID: configuration.relyingPartyID, userID: user,
            deviceID: device, nonce: SecretBytes.random(count: 32).data, createdAt: now, expiresAt: expiry, sessionID: session,
            enrolmentRequestID: enrolmentRequest)
        let plan = WritePlan.issueChallenge(challenge, lockout: windows.deviceProof(client: request.clientAddress, at: now))
        guard try await run(request, { try await self.writer.apply(plan) }).wasApplied else {
            throw await refuseLockedOut(user: user, device: device, request)
        }
        metrics.challenges.increment()
        return challenge
    }

    /// Takes the challenge (consumed whatever happens next), has ``ChallengeVerifier`` decide and,
    /// in the same store transaction, applies either the failure's plan or the one `success`
    /// builds from the verified challenge and the rows read with it (``TakenChallenge``); returns what `success`
    /// decided with the outcome of its plan. `success` returns nil
    /// when the challenge's binding does not fit.
    ///
    /// A login or step-up's App Attest assertion (nil: none sent) is checked after the signature
    /// (``AppAttestAssertion``): a refusal is a failure like a bad signature, answered 403
    /// `attestation_rejected`; an accepted one stores its counter in `success`'s plan. A
    /// re-attestation (``AppAttestProof/reattestation(keyID:object:)``) is verified before the
    /// challenge is taken, like an enrolment's, and an accepted one replaces the device's App Attest key.
    func finish<Success: Sendable>(
        _ id: ChallengeID, _ signature: String, appAttest: AppAttestProof? = nil, purpose: SignedMessage.Purpose,
        session: SessionRecord?, dpopKey: DPoPKeyCheck = .unchecked,
        _ request: RequestInfo, success: @escaping @Sendable (Proven, TakenChallenge, Date) -> (verdict: Success, plan: WritePlan)?
    ) async throws(ServerError) -> (verdict: Success, outcome: PlanOutcome) {
        let signatureBytes = try Validate.base64URL(signature, field: "signature", count: 1...256)
        return try await finish(
            id, proof: .signature(signatureBytes), appAttest: appAttest, purpose: purpose, session: session, dpopKey: dpopKey, request,
            success: success)
    }

    /// ``finish(_:_:appAttest:purpose:session:dpopKey:_:success:)`` for any ``ChallengeProof``:
    /// the decision (``FinishDecision``) is the same for a passkey's response as for a signature.
    /// `admitted`: the flow has already charged this anonymous request to the client's budget.
    func finish<Success: Sendable>(
        _ id: ChallengeID, proof: ChallengeProof, appAttest: AppAttestProof? = nil, purpose: SignedMessage.Purpose,
        session: SessionRecord?, admitted: Bool = false, dpopKey: DPoPKeyCheck = .unchecked,
        _ request: RequestInfo, success: @escaping @Sendable (Proven, TakenChallenge, Date) -> (verdict: Success, plan: WritePlan)?
    ) async throws(ServerError) -> (verdict: Success, outcome: PlanOutcome) {
        // Authenticated calls were admitted by authenticate(token:request:); `admitted` ones by their flow.
        if session == nil, !admitted { try await admit(request) }
        var assertion: Data?, reattestation: Reattestation?
        switch appAttest {
        case .assertion(let bytes)?: assertion = bytes
        case .reattestation(let keyID, let object)?:
            reattestation = try await reattested(keyID: keyID, object: object, challengeID: id, purpose: purpose, request: request)
        case nil: break
        }
        let now = clock.now()
        let lockout = windows.deviceProof(client: request.clientAddress, at: now)
        let decision = FinishDecision(
            proof: proof, purpose: purpose, session: session, dpopKey: dpopKey, assertion: assertion, reattestation: reattestation,
            verifier: ChallengeVerifier(relyingPartyID: configuration.relyingPartyID),
            assertions: AppAttestAssertion(policy: configuration.attestation), lockout: lockout, now: now
        ) { kind, user, device, reason in self.event(kind, user: user, device: device, reason: reason, request: request) }
        let (verdict, outcome) = try await run(request) {
            try await self.writer.consumeChallenge(id: id, lockout: lockout) { taken in decision.decide(taken, success: success) }
        }
        switch verdict {
        case .failed(let failure): throw failed(failure, locked: outcome.lockedSubjects, request)
        case .assertionRejected(let failure, let check):
            _ = failed(failure, locked: outcome.lockedSubjects, request)
            throw ServerError(.attestationRejected, field: "appAttestAssertion", detail: check.refusalDetail)
        case .reattestationRejected(let failure, let check):
            _ = failed(failure, locked: outcome.lockedSubjects, request)
            throw ServerError(.attestationRejected, field: "appAttestation", detail: check.description)
        case .refused(let event):
            metrics.rateLimited.increment()
            log(event, request: request)
            throw ServerError(.rateLimited, retryAfter: windows.retryAfter(now))
        case .succeeded(let success): return try await succeeded(success, outcome, purpose: purpose, request)
        }
    }

    /// A success whose plan a guard may still have refused.
    private func succeeded<Success>(_ success: Success, _ outcome: PlanOutcome, purpose: SignedMessage.Purpose, _ request: RequestInfo)
        async throws(ServerError) -> (
            verdict: Success, outcome: PlanOutcome
        )
    {
        if case .activeDeviceKey(let device, let user, _)? = outcome.refusal {
            // A revocation or re-key committed after the rows were read: nothing was written.
            await audit(
                purpose.auditFailure, user: user, device: device, reason: AuditReason(FailureReason.revokedDevice), request: request)
            throw ServerError.authenticationFailed(.revokedDevice)
        }
        if case .appAttestCounter(let device, _, _)? = outcome.refusal {
            // A concurrent request advanced the counter as far, or re-keyed the device: this assertion came second.
            await audit(purpose.auditFailure, device: device, reason: AuditReason(FailureReason.assertion(.counter)), request: request)
            throw ServerError(.attestationRejected, field: "appAttestAssertion", detail: AttestationError.Check.counter.description)
        }
        if case .passkeyCounter(let device, _, _)? = outcome.refusal {
            // A concurrent sign-in stored this counter first (a clone racing its original): this one came second.
            let reason = FailureReason.passkey(WebAuthnError.Check.signCount)
            await audit(purpose.auditFailure, device: device, reason: AuditReason(reason), request: request)
            throw ServerError.authenticationFailed(reason)
        }
        return (success, outcome)
    }

    /// A re-attestation verified against the challenge before it is taken: the App Attest key
    /// attested over SHA-256(message ‖ the device key's SPKI), or the check that failed; nil when
    /// there is nothing to verify it against (App Attest off, an unknown or used challenge: the
    /// finish then fails as it would without it).
    private func reattested(keyID: Data, object: Data, challengeID: ChallengeID, purpose: SignedMessage.Purpose, request: RequestInfo)
        async throws(ServerError)
        -> Reattestation?
    {
        guard let verifier = configuration.attestation.apple.verifier,
            let challenge = try await run(request, { try await self.store.challenge(id: challengeID) }), challenge.purpose == purpose,
            let device = try await run(request, { try await self.store.device(id: challenge.deviceID) })
        else { return nil }
        let message: SignedMessage
        do { message = try challenge.message() } catch { return nil }
        let now = clock.now()
        do {
            let key = try await verifier.verifyAttestation(
                object, keyID: keyID, clientDataHash: AttestationBinding.registrationHash(message, publicKey: device.publicKey), at: now)
            return Reattestation(deviceKey: device.publicKey, result: .success(DeviceAttestation(key, at: now)))
        } catch {
            return Reattestation(deviceKey: device.publicKey, result: .failure(error))
        }
    }
}
