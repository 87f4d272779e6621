import BioAuthCore
import Crypto
import Foundation
import Testing

import BioAuthServer
import BioAuthServerTesting

/// The verifier alone: every reason it gives, with rows made in the test and no store.
struct ChallengeVerifierTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let verifier = ChallengeVerifier(relyingPartyID: "example.com")
    let key = P256.Signing.PrivateKey()
    let session = SessionRecord(
        id: "session-1", tokenHash: TokenHash(digest: Data(repeating: 1, count: 32)), userID: "alice", deviceID: nil, kind: .primary,
        createdAt: Self.now,
        expiresAt: Self.now.addingTimeInterval(600))

    func challenge(
        _ binding: ChallengeRecord.Binding = .login, user: UserID = "alice", relyingParty: String = "example.com", session: SessionID? = nil
    ) -> ChallengeRecord {
        ChallengeRecord(
            id: ChallengeID(bytes: Data(repeating: 7, count: 16)), binding: binding, relyingPartyID: relyingParty, userID: user,
            deviceID: "device-1",
            nonce: Data(repeating: 9, count: 32), createdAt: Self.now, expiresAt: Self.now.addingTimeInterval(60), sessionID: session)
    }

    func device(user: UserID = "alice", revoked: Bool = false, key: P256.Signing.PrivateKey? = nil) -> DeviceRecord {
        DeviceRecord(
            id: "device-1", userID: user, name: "Phone", publicKey: (key ?? self.key).publicKey.derRepresentation, createdAt: Self.now,
            revokedAt: revoked ? Self.now : nil)
    }

    func signature(_ challenge: ChallengeRecord, by signer: P256.Signing.PrivateKey? = nil) throws -> Data {
        try (signer ?? key).signature(for: challenge.message().encoded).derRepresentation
    }

    func verify(
        _ challenge: ChallengeRecord?, device: DeviceRecord?, signature: Data, purpose: SignedMessage.Purpose = .login,
        session: SessionRecord? = nil,
        at now: Date = Self.now
    ) -> ChallengeVerifier.Outcome {
        verifier.verify(challenge: challenge, device: device, signature: signature, purpose: purpose, session: session, now: now)
    }

    @Test func theDevicesSignatureOverTheRebuiltMessageVerifies() throws {
        let login = challenge()
        #expect(verify(login, device: device(), signature: try signature(login)) == .verified(login))
        // The last second before expiry still counts (the device signs whole seconds).
        #expect(verify(login, device: device(), signature: try signature(login), at: login.expiresAt) == .verified(login))
    }

    @Test func aRegistrationIsVerifiedWithTheKeyBeingEnrolledNotARow() throws {
        let newKey = P256.Signing.PrivateKey()
        let registration = challenge(
            .registration(publicKey: newKey.publicKey.derRepresentation, deviceName: "Phone", replacing: false), session: session.id)
        #expect(
            verify(registration, device: nil, signature: try signature(registration, by: newKey), purpose: .registration, session: session)
                == .verified(registration))
        #expect(
            verify(registration, device: device(), signature: try signature(registration), purpose: .registration, session: session)
                == .rejected(.badSignature))
    }

    @Test func noChallengeIsUnknownChallenge() {
        #expect(verify(nil, device: device(), signature: Data([0x30])) == .rejected(.unknownChallenge))
    }

    @Test func anotherPurposeOrRelyingPartyIsWrongPurpose() throws {
        let login = challenge()
        #expect(
            verify(login, device: device(), signature: try signature(login), purpose: .stepUp, session: session) == .rejected(.wrongPurpose)
        )
        let elsewhere = challenge(relyingParty: "evil.example")
        #expect(verify(elsewhere, device: device(), signature: try signature(elsewhere)) == .rejected(.wrongPurpose))
    }

    @Test func aChallengePastItsExpiryIsExpired() throws {
        let login = challenge()
        #expect(
            verify(login, device: device(), signature: try signature(login), at: login.expiresAt.addingTimeInterval(0.001))
                == .rejected(.expiredChallenge))
    }

    @Test func aSessionOfAnotherUserOrAForeignDeviceIsWrongUser() throws {
        let stepUp = challenge(
            .stepUp(operationHash: Data(repeating: 3, count: 32), deviceKey: key.publicKey.derRepresentation), user: "bob",
            session: session.id)
        #expect(
            verify(stepUp, device: device(user: "bob"), signature: try signature(stepUp), purpose: .stepUp, session: session)
                == .rejected(.wrongUser))
        let login = challenge()
        #expect(verify(login, device: device(user: "mallory"), signature: try signature(login)) == .rejected(.wrongUser))
    }

    @Test func aChallengeFinishedByAnotherSessionOrNoneIsWrongSession() throws {
        let stepUp = challenge(
            .stepUp(operationHash: Data(repeating: 3, count: 32), deviceKey: key.publicKey.derRepresentation), session: "session-2")
        #expect(
            verify(stepUp, device: device(), signature: try signature(stepUp), purpose: .stepUp, session: session)
                == .rejected(.wrongSession))
        let bound = challenge(session: "session-2")
        #expect(verify(bound, device: device(), signature: try signature(bound)) == .rejected(.wrongSession))
    }

    @Test func aMissingDeviceIsUnknownAndARevokedOneRevokedEvenWithAValidSignature() throws {
        let login = challenge()
        #expect(verify(login, device: nil, signature: try signature(login)) == .rejected(.unknownDevice))
        #expect(verify(login, device: device(revoked: true), signature: try signature(login)) == .rejected(.revokedDevice))
        // The device problem is named even when the signature does not parse.
        #expect(verify(login, device: nil, signature: Data([1, 2, 3])) == .rejected(.unknownDevice))
    }

    /// Issue 42: a step-up challenge belongs to the key it was issued to. After a re-key the new
    /// key's valid signature does not finish it, and neither does a challenge that names no key.
    @Test func aStepUpIssuedToAnotherKeyOfTheDeviceIsReplacedKey() throws {
        let newKey = P256.Signing.PrivateKey()
        let issuedToOld = challenge(
            .stepUp(operationHash: Data(repeating: 3, count: 32), deviceKey: key.publicKey.derRepresentation), session: session.id)
        #expect(
            verify(
                issuedToOld, device: device(key: newKey), signature: try signature(issuedToOld, by: newKey), purpose: .stepUp,
                session: session)
                == .rejected(.replacedKey))
        let unbound = challenge(.stepUp(operationHash: Data(repeating: 3, count: 32), deviceKey: nil), session: session.id)
        #expect(
            verify(unbound, device: device(), signature: try signature(unbound), purpose: .stepUp, session: session)
                == .rejected(.replacedKey))
        #expect(
            verify(issuedToOld, device: device(), signature: try signature(issuedToOld), purpose: .stepUp, session: session)
                == .verified(issuedToOld))
    }

    @Test func aStoredKeyThatDoesNotParseIsUnknownDevice() throws {
        let login = challenge()
        var broken = device()
        broken.publicKey = Data(repeating: 0, count: 91)
        #expect(verify(login, device: broken, signature: try signature(login)) == .rejected(.unknownDevice))
    }

    @Test func aSignatureThatIsNotStrictDERIsMalformed() throws {
        let login = challenge()
        let raw = try key.signature(for: login.message().encoded).rawRepresentation
        #expect(verify(login, device: device(), signature: raw) == .rejected(.malformedSignature))
        #expect(verify(login, device: device(), signature: Data()) == .rejected(.malformedSignature))
    }

    @Test func anotherKeysSignatureOrAnotherMessageIsBadSignature() throws {
        let login = challenge()
        #expect(verify(login, device: device(), signature: try signature(login, by: P256.Signing.PrivateKey())) == .rejected(.badSignature))
        var other = login
        other.nonce = Data(repeating: 8, count: 32)
        #expect(verify(login, device: device(), signature: try signature(other)) == .rejected(.badSignature))
    }
}
