import BioAuthAttestation
import BioAuthCore
import Crypto
import Foundation
import Logging

/// An attestation as a registration finish carries it, decoded but not verified.
public enum PresentedAttestation: Sendable, Hashable {
    /// App Attest: the key id and the attestation object `DCAppAttestService.attestKey` returned
    /// for `AttestationBinding.registrationHash(_:publicKey:)`.
    case appAttest(keyID: Data, object: Data)
    /// Android Key Attestation: the enrolled key's certificate chain, leaf first (DER), made with
    /// the session's attestation challenge (`EnrolmentAttestation.androidChallenge(for:)`).
    case androidKey(chain: [Data])

    /// The attestation fields of a registration finish, checked for shape: both App Attest fields
    /// or neither, an Android chain of 1–8 certificates, never both kinds. Nil when none is given.
    public init?(appAttestKeyID: String?, appAttestation: String?, androidKeyAttestation: [String]?) throws(ServerError) {
        switch (appAttestKeyID, appAttestation, androidKeyAttestation) {
        case (nil, nil, nil): return nil
        case (let keyID?, let object?, nil):
            let (keyID, object) = try Self.appAttestFields(keyID: keyID, object: object)
            self = .appAttest(keyID: keyID, object: object)
        case (nil, nil, let chain?):
            guard (1...8).contains(chain.count) else {
                throw ServerError(.invalidRequest, field: "androidKeyAttestation", detail: "1 to 8 certificates, leaf first")
            }
            var ders: [Data] = []
            for certificate in chain {
                ders.append(try Validate.base64URL(certificate, field: "androidKeyAttestation", count: 1...Self.maximumCertificateSize))
            }
            self = .androidKey(chain: ders)
        case (_, _, .some):
            throw ServerError(
                .invalidRequest, field: "androidKeyAttestation", detail: "an App Attest attestation or an Android chain, not both")
        case (nil, .some, nil): throw ServerError(.invalidRequest, field: "appAttestKeyId", detail: "required with appAttestation")
        case (.some, nil, nil): throw ServerError(.invalidRequest, field: "appAttestation", detail: "required with appAttestKeyId")
        }
    }

    /// An App Attest key id (32 bytes) and attestation object, base64url, decoded: what a
    /// registration finish and a re-attesting login or step-up carry alike.
    static func appAttestFields(keyID: String, object: String) throws(ServerError) -> (keyID: Data, object: Data) {
        (
            try Validate.base64URL(keyID, field: "appAttestKeyId", count: 32...32),
            try Validate.base64URL(object, field: "appAttestation", count: 1...maximumObjectSize)
        )
    }

    /// The largest App Attest object taken, in bytes (real ones are under 6 KiB).
    public static let maximumObjectSize = 12 * 1024
    /// The largest Android certificate taken, in bytes (real ones are under 1.5 KiB).
    public static let maximumCertificateSize = 3 * 1024
    /// The largest registration-finish body: eight largest certificates fit, base64url, with room.
    public static let maximumBodySize = 48 * 1024
}

/// Verifying an enrolment's attestation under the ``AttestationPolicy``: before the registration
/// challenge is consumed, so the chain's P-384 and RSA verifications never hold the database writer.
struct EnrolmentAttestation: Flow {
    let context: FlowContext

    /// Seconds a device waits before it tries again while the attestation status list cannot tell.
    static let statusRetryAfter = 300

    /// A new Android attestation challenge for `session`: 32 random bytes, stored by their hash
    /// until they expire or the registration finish whose chain carries them takes them. A chain
    /// made for it enrols once, in this session, within ``AttestationPolicy/androidChallengeLifetime``.
    func androidChallenge(for session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Data {
        try authorizeUnread(.enrolDevice, session)
        let challenge = Data((0..<32).map { _ in UInt8.random(in: .min ... .max) })
        let expiresAt = clock.now().addingTimeInterval(AttestationPolicy.androidChallengeLifetime)
        var issue = WritePlan()
        issue.add(
            .setCounter(.attestationChallenge(session.id, challenge: TokenHash(of: challenge)), FailureCounter(since: expiresAt, count: 0)))
        let plan = issue
        _ = try await run(request) { try await self.writer.apply(plan) }
        return challenge
    }

    /// Takes `challenge` if it is a live one of `session`'s: true for exactly one caller.
    private func takeAndroidChallenge(_ challenge: Data, session: SessionRecord, request: RequestInfo) async throws(ServerError) -> Bool {
        let subject = FailureSubject.attestationChallenge(session.id, challenge: TokenHash(of: challenge))
        let now = clock.now()
        return try await run(request) {
            try await self.writer.decide(locking: RowLocks(counters: [subject])) { rows in
                guard let issued = rows.counters[subject], issued.since > now else { return (false, WritePlan()) }
                var plan = WritePlan()
                plan.add(.clearFailures([subject]))
                return (true, plan)
            }.verdict
        }
    }

    /// What `presented` proves about the key the registration challenge `challengeID` enrols,
    /// or nil for an enrolment the policy lets go unattested. A challenge that is not this
    /// session's unexpired registration gets nil: finishing it fails as it would without one.
    /// Refusals are audited and counted against the sending address.
    func verify(_ presented: PresentedAttestation?, challengeID: ChallengeID, session: SessionRecord, request: RequestInfo)
        async throws(ServerError) -> DeviceAttestation?
    {
        let policy = configuration.attestation
        // An attestation of a platform whose rule is off is ignored, as if none were sent.
        let verifiable: Bool =
            switch presented {
            case .appAttest?: policy.apple.verifier != nil
            case .androidKey?: policy.android.verifier != nil
            case nil: false
            }
        if !verifiable, policy.acceptsUnattested { return nil }
        let now = clock.now()
        guard let challenge = try await run(request, { try await self.store.challenge(id: challengeID) }),
            challenge.sessionID == session.id,
            challenge.expiresAt > now, case .registration(let spki, _, _) = challenge.binding
        else { return nil }
        let message: SignedMessage, key: DevicePublicKey
        do {
            message = try challenge.message()
            key = try DevicePublicKey(spki: spki)
        } catch { throw ServerError(error) }
        switch (presented, policy.apple.verifier, policy.android.verifier) {
        case (.appAttest(let keyID, let object)?, let verifier?, _):
            let clientDataHash = AttestationBinding.registrationHash(message, publicKey: spki)
            do {
                return DeviceAttestation(
                    try await verifier.verifyAttestation(object, keyID: keyID, clientDataHash: clientDataHash, at: now), at: now)
            } catch {
                throw try await refuse(error, field: "appAttestation", challenge: challenge, request: request)
            }
        case (.androidKey(let chain)?, _, let verifier?):
            do {
                // The chain is verified with the challenge it claims, then that challenge is taken:
                // only one this server issued to this session, unused and unexpired, is there to take.
                let claimed = try AndroidKeyAttestationVerifier.claimedChallenge(chain: chain)
                let attested = try await verifier.verify(chain: chain, challenge: claimed, publicKey: key, at: now)
                guard try await takeAndroidChallenge(claimed, session: session, request: request) else {
                    throw try await refuse(
                        AttestationError(
                            .challenge, "the attestation challenge is not one this server issued to this session, or it was used or expired"
                        ),
                        field: "androidKeyAttestation", challenge: challenge, request: request)
                }
                return DeviceAttestation(attested, at: now)
            } catch let error as ServerError {
                throw error
            } catch let error as AttestationError {
                // The server cannot tell (its status list is missing or too old): fail closed, but as
                // the server's failure — the challenge stays, nothing is counted, the device retries.
                if error.check == .statusUnknown {
                    throw ServerError(.unavailable, field: "androidKeyAttestation", retryAfter: Self.statusRetryAfter)
                }
                throw try await refuse(error, field: "androidKeyAttestation", challenge: challenge, request: request)
            } catch { throw ServerError(.internalError) }
        default: throw try await refuse(nil, field: "attestation", challenge: challenge, request: request)
        }
    }

    /// A refused attestation (`error` nil: a missing one) is a failed finish like a bad signature:
    /// the challenge is consumed and the failure audited in one transaction; like a forged
    /// signature it counts against nobody (an attestation cannot be guessed either).
    /// Returns the 403 to throw.
    private func refuse(_ error: AttestationError?, field: String, challenge: ChallengeRecord, request: RequestInfo)
        async throws(ServerError) -> ServerError
    {
        let reason = error.map { FailureReason.attestation($0.check) } ?? .attestationMissing
        let audit = event(
            .deviceEnrollmentFailed, user: challenge.userID, device: challenge.deviceID, reason: AuditReason(reason), request: request)
        let lockout = windows.deviceProof(client: request.clientAddress, at: clock.now())
        let failure = FailureRecord(unguessable: reason, lockout: lockout, audit: audit)
        let (_, outcome) = try await run(request) {
            try await self.writer.consumeChallenge(id: challenge.id, lockout: lockout) { _ in ((), .failure(failure)) }
        }
        _ = failed(failure, locked: outcome.lockedSubjects, request)
        if let error {
            logger(for: request).debug("attestation refused", metadata: metadata(audit).merging(["why": "\(error.reason)"]) { $1 })
        }
        return ServerError(.attestationRejected, field: field, detail: (error?.check).refusalDetail)
    }
}
