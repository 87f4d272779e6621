import BioAuthAttestation
import BioAuthCore
import Foundation

/// The one decision every finish makes — a phone's signature or a passkey's assertion, for an
/// enrolment, a login or a step-up — on the rows taken with its challenge. Pure: it reads no
/// store and no clock, so each factor is tested without a database (`FinishDecisionTests`).
///
/// The factors, in order, the first that fails naming the reason: the address's failure limit;
/// the proof (``ChallengeVerifier`` for a signature, the passkey verifier for an assertion); the
/// DPoP key a device registered; the flow's own rows (`success`); then, for a device that proves
/// (not a key being enrolled), its key guarded until the writes land, and either its new App
/// Attest key's attestation or the App Attest assertion.
package struct FinishDecision: Sendable {
    package let proof: ChallengeProof
    package let purpose: SignedMessage.Purpose
    /// The session that finishes (registration and step-up); nil for a login.
    package let session: SessionRecord?
    package let dpopKey: DPoPKeyCheck
    /// The App Attest assertion sent with a login or step-up; nil: none.
    package let assertion: Data?
    /// A new App Attest key's attestation, verified before the challenge was taken; nil: none sent.
    package let reattestation: Reattestation?
    package let verifier: ChallengeVerifier
    package let assertions: AppAttestAssertion
    package let lockout: LockoutQuery
    package let now: Date
    /// The audit event of this request for a kind, user, device and reason.
    package let event: @Sendable (AuditKind, UserID?, DeviceID?, AuditReason?) -> AuditEvent

    package init(
        proof: ChallengeProof, purpose: SignedMessage.Purpose, session: SessionRecord?, dpopKey: DPoPKeyCheck, assertion: Data?,
        reattestation: Reattestation?, verifier: ChallengeVerifier, assertions: AppAttestAssertion, lockout: LockoutQuery, now: Date,
        event: @escaping @Sendable (AuditKind, UserID?, DeviceID?, AuditReason?) -> AuditEvent
    ) {
        self.proof = proof
        self.purpose = purpose
        self.session = session
        self.dpopKey = dpopKey
        self.assertion = assertion
        self.reattestation = reattestation
        self.verifier = verifier
        self.assertions = assertions
        self.lockout = lockout
        self.now = now
        self.event = event
    }

    /// The verdict on `taken` (nil: the challenge was unknown or used) and the plan to apply with
    /// it. `success` builds the flow's plan from what was proven; nil when the challenge's
    /// binding does not fit the flow.
    package func decide<Success: Sendable>(
        _ taken: TakenChallenge?, success: (Proven, TakenChallenge, Date) -> (verdict: Success, plan: WritePlan)?
    ) -> (verdict: FinishVerdict<Success>, plan: WritePlan) {
        // The device that proves: the challenge's, or the passkey the response names.
        let prover: DeviceRecord? = if case .passkey(let device, _) = proof { device } else { taken?.device }
        func record(_ reason: FailureReason) -> FailureRecord {
            let audit = event(purpose.auditFailure, taken?.challenge.userID, prover?.id ?? taken?.challenge.deviceID, AuditReason(reason))
            // A signature cannot be guessed: its failure counts against nobody (RateWindows.deviceProof).
            return FailureRecord(unguessable: reason, lockout: lockout, audit: audit)
        }
        func failure(_ reason: FailureReason) -> (verdict: FinishVerdict<Success>, plan: WritePlan) {
            let failure = record(reason)
            return (.failed(failure), .failure(failure))
        }
        if let taken, taken.lockedOut {
            let challenge = taken.challenge
            let refused = event(.rateLimited, challenge.userID, challenge.deviceID, AuditReason(FailureReason.lockedOut))
            return (.refused(refused), .events([refused]))
        }
        let proven: Proven
        switch proved(taken) {
        case .rejected(let reason): return failure(reason)
        case .proven(let value): proven = value
        }
        if let reason = Self.dpopBinding(of: taken?.device, dpopKey) { return failure(reason) }
        guard let taken, var success = success(proven, taken, now) else { return failure(.wrongPurpose) }
        guard purpose != .registration, let device = prover else { return (.succeeded(success.verdict), success.plan) }
        // The key just verified must still be the device's when the writes land.
        success.plan.require(.activeDeviceKey(id: device.id, userID: device.userID, publicKey: device.publicKey))
        if let reattestation {
            switch Self.reattested(device, reattestation) {
            case .rejected(let check):
                let failure = record(.reattestation(check))
                return (.reattestationRejected(failure, check: check), .failure(failure))
            case .accepted(let attestation):
                success.plan.add(.storeAttestation(deviceID: device.id, attestation))
                success.plan.audit(event(.deviceReattested, device.userID, device.id, nil))
                return (.succeeded(success.verdict), success.plan)
            }
        }
        let signature: Data = if case .signature(let bytes) = proof { bytes } else { Data() }
        switch assertions.check(assertion, device: device, message: { try? proven.challenge.message() }, signature: signature) {
        case .notApplicable: break
        case .accepted(let attestation): success.plan.assertion(attestation, device: device.id)
        case .rejected(let check):
            let failure = record(check.map(FailureReason.assertion) ?? .assertionMissing)
            return (.assertionRejected(failure, check: check), .failure(failure))
        }
        return (.succeeded(success.verdict), success.plan)
    }

    /// The proof's factor: a signature by the challenge's device (or the key being enrolled), or
    /// a passkey's assertion with what it verified.
    package func proved(_ taken: TakenChallenge?) -> ProofOutcome {
        switch proof {
        case .signature(let bytes):
            switch verifier.verify(
                challenge: taken?.challenge, device: taken?.device, signature: bytes, purpose: purpose, session: session, now: now)
            {
            case .verified(let challenge): .proven(Proven(challenge: challenge, assertion: nil))
            case .rejected(let reason): .rejected(reason)
            }
        case .passkey(_, let verify): verify(taken?.challenge, now)
        }
    }

    /// The DPoP factor: a device that registered a DPoP key finishes only with a proof by it.
    package static func dpopBinding(of device: DeviceRecord?, _ check: DPoPKeyCheck) -> FailureReason? {
        guard case .presented(let key) = check, let bound = device?.dpopThumbprint, bound != key else { return nil }
        return .dpop(key == nil ? .missing : .wrongKey)
    }

    /// The re-attestation factor: only a device App Attest proved has a key to replace (others
    /// enrol again), and the new key's attestation must be bound to the device key that signed.
    package static func reattested(_ device: DeviceRecord, _ reattestation: Reattestation) -> ReattestationOutcome {
        guard device.credential.attestation?.format == .appleAppAttest else { return .rejected(.format) }
        switch reattestation.result {
        case .failure(let error): return .rejected(error.check)
        case .success(let attestation):
            return reattestation.deviceKey == device.publicKey ? .accepted(attestation) : .rejected(.nonce)
        }
    }
}

/// What the proof factor decided.
package enum ProofOutcome: Sendable, Hashable {
    case proven(Proven)
    case rejected(FailureReason)
}

/// What the re-attestation factor decided: the new App Attest key's attestation, or the check
/// that failed.
package enum ReattestationOutcome: Sendable, Hashable {
    case accepted(DeviceAttestation)
    case rejected(AttestationError.Check)
}

/// What a finish's proof established, for the flow's plan.
package struct Proven: Sendable, Hashable {
    /// The challenge the proof answered.
    package let challenge: ChallengeRecord
    /// A passkey's verified assertion (its counter and backup state, to store); nil for a signature.
    package let assertion: WebAuthnRelyingParty.VerifiedAssertion?
}

/// What answers a challenge.
package enum ChallengeProof: Sendable {
    /// A DER signature over the message rebuilt from the challenge, by the challenge's device (or
    /// the key being enrolled): ``ChallengeVerifier``.
    case signature(Data)
    /// A passkey's WebAuthn response, decided by `verify` from the taken challenge (nil: unknown
    /// or used) and the time: what it proved (a sign-in's verified assertion with it); `device`
    /// is the passkey the response names (nil: none of the user's).
    case passkey(device: DeviceRecord?, verify: @Sendable (ChallengeRecord?, Date) -> ProofOutcome)
}

/// A new App Attest key's attestation, verified before the challenge is taken, and the device key
/// it was bound to.
package struct Reattestation: Sendable {
    package let deviceKey: Data
    package let result: Result<DeviceAttestation, AttestationError>

    package init(deviceKey: Data, result: Result<DeviceAttestation, AttestationError>) {
        self.deviceKey = deviceKey
        self.result = result
    }
}

/// What ``FinishDecision`` decided inside the transaction.
package enum FinishVerdict<Success: Sendable>: Sendable {
    /// A failure limit is reached: the attempt is refused unverified.
    case refused(AuditEvent)
    case failed(FailureRecord)
    /// The signature verified but the App Attest assertion did not (the failed check; nil: missing).
    case assertionRejected(FailureRecord, check: AttestationError.Check?)
    /// The signature verified but the new App Attest key's attestation did not.
    case reattestationRejected(FailureRecord, check: AttestationError.Check)
    case succeeded(Success)
}

/// Whether a finish checks the request's DPoP proof key against the device's registered one
/// (``DeviceRecord/dpopThumbprint``).
package enum DPoPKeyCheck: Sendable {
    case unchecked
    /// The thumbprint of the request's proof key; nil without a proof.
    case presented(String?)
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
