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
        _ request: RequestInfo, success: @escaping @Sendable (ChallengeRecord, TakenChallenge, Date) -> (verdict: Success, plan: WritePlan)?
    ) async throws(ServerError) -> (verdict: Success, outcome: PlanOutcome) {
        let signatureBytes = try Validate.base64URL(signature, field: "signature", count: 1...256)
        return try await finish(
            id, proof: .signature(signatureBytes), appAttest: appAttest, purpose: purpose, session: session, dpopKey: dpopKey, request,
            success: success)
    }

    /// ``finish(_:_:appAttest:purpose:session:_:success:)`` for any ``ChallengeProof``: a passkey's
    /// response is decided by its own verifier, and the rest (consumed once, failures counted,
    /// the proving device's key guarded until the writes land) is the same. `admitted`: the flow
    /// has already charged this anonymous request to the client's budget.
    func finish<Success: Sendable>(
        _ id: ChallengeID, proof: ChallengeProof, appAttest: AppAttestProof? = nil, purpose: SignedMessage.Purpose,
        session: SessionRecord?, admitted: Bool = false, dpopKey: DPoPKeyCheck = .unchecked,
        _ request: RequestInfo, success: @escaping @Sendable (ChallengeRecord, TakenChallenge, Date) -> (verdict: Success, plan: WritePlan)?
    ) async throws(ServerError) -> (verdict: Success, outcome: PlanOutcome) {
        let signatureBytes: Data = if case .signature(let bytes) = proof { bytes } else { Data() }
        let assertionBytes: Data? = if case .assertion(let bytes)? = appAttest { bytes } else { nil }
        let assertions = AppAttestAssertion(policy: configuration.attestation)
        // Authenticated calls were admitted by authenticate(token:request:); `admitted` ones by their flow.
        if session == nil, !admitted { try await admit(request) }
        let reattested: Reattestation?
        if case .reattestation(let keyID, let object)? = appAttest {
            reattested = try await reattestation(keyID: keyID, object: object, challengeID: id, purpose: purpose, request: request)
        } else {
            reattested = nil
        }
        let now = clock.now()
        let lockout = windows.deviceProof(client: request.clientAddress, at: now)
        let verifier = ChallengeVerifier(relyingPartyID: configuration.relyingPartyID)
        let (verdict, outcome) = try await run(request) {
            try await self.writer.consumeChallenge(id: id, lockout: lockout) { taken -> (verdict: Finished<Success>, plan: WritePlan) in
                // The device that proves: the challenge's, or the passkey the response names.
                let prover: DeviceRecord? = if case .passkey(let device, _) = proof { device } else { taken?.device }
                func record(_ reason: FailureReason) -> FailureRecord {
                    let user = taken?.challenge.userID, device = prover?.id ?? taken?.challenge.deviceID
                    let audit = self.event(purpose.auditFailure, user: user, device: device, reason: AuditReason(reason), request: request)
                    // A signature cannot be guessed: its failure counts against nobody (RateWindows.deviceProof).
                    return FailureRecord(unguessable: reason, lockout: lockout, audit: audit)
                }
                func failure(_ reason: FailureReason) -> (verdict: Finished<Success>, plan: WritePlan) {
                    let failure = record(reason)
                    return (.failed(failure), .failure(failure))
                }
                if let taken, taken.lockedOut {
                    let challenge = taken.challenge
                    let refused = self.event(
                        .rateLimited, user: challenge.userID, device: challenge.deviceID, reason: AuditReason(FailureReason.lockedOut),
                        request: request)
                    return (.refused(refused), .events([refused]))
                }
                let decided =
                    switch proof {
                    case .signature(let bytes):
                        verifier.verify(
                            challenge: taken?.challenge, device: taken?.device, signature: bytes, purpose: purpose, session: session,
                            now: now)
                    case .passkey(_, let verify): verify(taken?.challenge, now)
                    }
                switch decided {
                case .rejected(let reason): return failure(reason)
                case .verified(let challenge):
                    // A device that registered a DPoP key logs in only with a proof by that key.
                    if case .presented(let key) = dpopKey, let bound = taken?.device?.dpopThumbprint, bound != key {
                        return failure(.dpop(key == nil ? .missing : .wrongKey))
                    }
                    guard let taken, var success = success(challenge, taken, now) else { return failure(.wrongPurpose) }
                    guard purpose != .registration, let device = prover else { return (.succeeded(success.verdict), success.plan) }
                    // The key just verified must still be the device's when the writes land.
                    success.plan.require(.activeDeviceKey(id: device.id, userID: device.userID, publicKey: device.publicKey))
                    if let reattested {
                        // Only a device App Attest proved has a key to replace (others enrol again); the
                        // attestation must be bound to the key that has just signed.
                        let check: AttestationError.Check? =
                            device.credential.attestation?.format != .appleAppAttest
                            ? .format : reattested.result.failedCheck ?? (reattested.deviceKey == device.publicKey ? nil : .nonce)
                        guard check == nil, case .success(let attestation) = reattested.result else {
                            let check = check ?? .malformed
                            let failure = record(.reattestation(check))
                            return (.reattestationRejected(failure, check: check), .failure(failure))
                        }
                        success.plan.add(.storeAttestation(deviceID: device.id, attestation))
                        success.plan.audit(self.event(.deviceReattested, user: device.userID, device: device.id, request: request))
                        return (.succeeded(success.verdict), success.plan)
                    }
                    switch assertions.check(
                        assertionBytes, device: device, message: { try? challenge.message() }, signature: signatureBytes)
                    {
                    case .notApplicable: break
                    case .accepted(let attestation): success.plan.assertion(attestation, device: device.id)
                    case .rejected(let check):
                        let failure = record(check.map(FailureReason.assertion) ?? .assertionMissing)
                        return (.assertionRejected(failure, check: check), .failure(failure))
                    }
                    return (.succeeded(success.verdict), success.plan)
                }
            }
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
    private func reattestation(keyID: Data, object: Data, challengeID: ChallengeID, purpose: SignedMessage.Purpose, request: RequestInfo)
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

/// What answers a challenge.
enum ChallengeProof: Sendable {
    /// A DER signature over the message rebuilt from the challenge, by the challenge's device (or
    /// the key being enrolled): ``ChallengeVerifier``.
    case signature(Data)
    /// A passkey's WebAuthn response, decided by `verify` from the taken challenge (nil: unknown
    /// or used) and the time; `device` is the passkey the response names (nil: none of the user's).
    case passkey(device: DeviceRecord?, verify: @Sendable (ChallengeRecord?, Date) -> ChallengeVerifier.Outcome)
}

/// A new App Attest key's attestation, verified before the challenge is taken, and the device key
/// it was bound to.
private struct Reattestation: Sendable {
    let deviceKey: Data
    let result: Result<DeviceAttestation, AttestationError>
}

extension Result where Failure == AttestationError {
    fileprivate var failedCheck: AttestationError.Check? {
        if case .failure(let error) = self { error.check } else { nil }
    }
}

/// What ``Challenges/finish(_:_:purpose:session:_:success:)`` decided inside the transaction.
private enum Finished<Success: Sendable>: Sendable {
    /// A failure limit is reached: the attempt is refused unverified.
    case refused(AuditEvent)
    case failed(FailureRecord)
    /// The signature verified but the App Attest assertion did not (the failed check; nil: missing).
    case assertionRejected(FailureRecord, check: AttestationError.Check?)
    /// The signature verified but the new App Attest key's attestation did not.
    case reattestationRejected(FailureRecord, check: AttestationError.Check)
    case succeeded(Success)
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

/// Whether a finish checks the request's DPoP proof key against the device's registered one
/// (``DeviceRecord/dpopThumbprint``).
enum DPoPKeyCheck: Sendable {
    case unchecked
    /// The thumbprint of the request's proof key; nil without a proof.
    case presented(String?)
}
