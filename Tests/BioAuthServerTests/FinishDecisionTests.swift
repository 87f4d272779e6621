import BioAuthAttestation
import BioAuthCore
import BioAuthServer
import BioAuthServerTesting
import Crypto
import Foundation
import Testing

/// The one finish, store-free: each factor of ``FinishDecision`` decides its case on rows made
/// in the test, for a phone's signature and a passkey's assertion alike.
struct FinishDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let key = P256.Signing.PrivateKey()
    let login = ChallengeRecord(
        id: ChallengeID(bytes: Data(repeating: 7, count: 16)), binding: .login, relyingPartyID: "example.com", userID: "alice",
        deviceID: "device-1", nonce: Data(repeating: 9, count: 32), createdAt: Self.now, expiresAt: Self.now.addingTimeInterval(60))

    func device(dpop: String? = nil, attestation: DeviceAttestation? = nil) -> DeviceRecord {
        DeviceRecord(
            id: "device-1", userID: "alice", name: "Phone", publicKey: key.publicKey.derRepresentation, createdAt: Self.now,
            credential: .appKey(attestation: attestation), dpopThumbprint: dpop)
    }

    func decision(
        _ proof: ChallengeProof, dpopKey: DPoPKeyCheck = .unchecked, reattestation: Reattestation? = nil
    ) -> FinishDecision {
        FinishDecision(
            proof: proof, purpose: .login, session: nil, dpopKey: dpopKey, assertion: nil, reattestation: reattestation,
            verifier: ChallengeVerifier(relyingPartyID: "example.com"), assertions: AppAttestAssertion(policy: AttestationPolicy()),
            lockout: LockoutQuery(windowStart: Self.now, client: "203.0.113.7", clientLimit: 30), now: Self.now
        ) { kind, user, device, reason in AuditEvent(at: Self.now, kind: kind, userID: user, deviceID: device, reason: reason) }
    }

    func signed() throws -> ChallengeProof { .signature(try key.signature(for: login.message().encoded).derRepresentation) }

    /// Decides with a `success` that opens nothing but says it ran; the verdict's reason or "ok".
    func decide(_ decision: FinishDecision, _ taken: TakenChallenge?) -> (String, WritePlan) {
        let (verdict, plan) = decision.decide(taken) { proven, _, _ in (proven.challenge.id, WritePlan()) }
        switch verdict {
        case .succeeded: return ("ok", plan)
        case .failed(let failure): return (failure.reason.description, plan)
        case .refused: return ("refused", plan)
        case .assertionRejected(let failure, _), .reattestationRejected(let failure, _): return (failure.reason.description, plan)
        }
    }

    @Test func theDevicesSignatureSucceedsWithItsKeyGuarded() throws {
        let (verdict, plan) = decide(decision(try signed()), TakenChallenge(challenge: login, device: device(), lockedOut: false))
        #expect(verdict == "ok")
        #expect(plan.guards == [.activeDeviceKey(id: "device-1", userID: "alice", publicKey: key.publicKey.derRepresentation)])
    }

    @Test func aLockedOutAddressIsRefusedUnverified() throws {
        let (verdict, plan) = decide(decision(.signature(Data([1]))), TakenChallenge(challenge: login, device: device(), lockedOut: true))
        #expect(verdict == "refused" && plan.guards.isEmpty)
    }

    @Test func theProofFactorNamesItsReason() throws {
        #expect(decide(decision(try signed()), nil).0 == "unknownChallenge")
        let forged = try P256.Signing.PrivateKey().signature(for: login.message().encoded).derRepresentation
        #expect(
            decide(decision(.signature(forged)), TakenChallenge(challenge: login, device: device(), lockedOut: false)).0 == "badSignature")
        // A passkey's proof is its verifier's verdict, audited against the passkey it names.
        let revoked = ChallengeProof.passkey(device: device()) { _, _ in .rejected(.revokedDevice) }
        let (verdict, plan) = decision(revoked).decide(TakenChallenge(challenge: login, device: nil, lockedOut: false)) {
            proven, _, _ in (proven.challenge.id, WritePlan())
        }
        guard case .failed(let failure) = verdict else { Issue.record("\(verdict)"); return }
        #expect(failure.reason == .revokedDevice && failure.audit.deviceID == "device-1" && plan.guards.isEmpty)
    }

    @Test func aDeviceWithADPoPKeyFinishesOnlyWithAProofByIt() throws {
        let taken = TakenChallenge(challenge: login, device: device(dpop: "thumbprint-a"), lockedOut: false)
        #expect(decide(decision(try signed(), dpopKey: .presented(nil)), taken).0 == "dpop.missing")
        #expect(decide(decision(try signed(), dpopKey: .presented("thumbprint-b")), taken).0 == "dpop.wrongKey")
        #expect(decide(decision(try signed(), dpopKey: .presented("thumbprint-a")), taken).0 == "ok")
        #expect(FinishDecision.dpopBinding(of: device(), .presented(nil)) == nil, "a device that registered none")
    }

    @Test func aFlowWhoseRowsDoNotFitRefusesAsTheWrongPurpose() throws {
        let (verdict, _) = decision(try signed()).decide(TakenChallenge(challenge: login, device: device(), lockedOut: false)) {
            _, _, _ -> (verdict: Int, plan: WritePlan)? in nil
        }
        guard case .failed(let failure) = verdict else { Issue.record("\(verdict)"); return }
        #expect(failure.reason == .wrongPurpose)
    }

    @Test func aNewAppAttestKeyReplacesOnlyAnAppAttestedDevicesKeyItIsBoundTo() throws {
        let appAttested = DeviceAttestation(format: .appleAppAttest, securityLevel: .secureEnclave, appID: "app", verifiedAt: Self.now)
        let android = DeviceAttestation(format: .androidKey, securityLevel: .strongBox, appID: "app", verifiedAt: Self.now)
        let mine = key.publicKey.derRepresentation, other = P256.Signing.PrivateKey().publicKey.derRepresentation
        #expect(
            FinishDecision.reattested(device(attestation: android), Reattestation(deviceKey: mine, result: .success(appAttested)))
                == .rejected(.format))
        #expect(
            FinishDecision.reattested(device(attestation: appAttested), Reattestation(deviceKey: other, result: .success(appAttested)))
                == .rejected(.nonce))
        #expect(
            FinishDecision.reattested(device(attestation: appAttested), Reattestation(deviceKey: mine, result: .success(appAttested)))
                == .accepted(appAttested))
        let taken = TakenChallenge(challenge: login, device: device(attestation: appAttested), lockedOut: false)
        let (verdict, plan) = decide(
            decision(try signed(), reattestation: Reattestation(deviceKey: mine, result: .success(appAttested))), taken)
        #expect(verdict == "ok" && plan.mutations.contains(WritePlan.Mutation.storeAttestation(deviceID: "device-1", appAttested)))
    }
}
