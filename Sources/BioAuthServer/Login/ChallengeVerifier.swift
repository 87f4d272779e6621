import BioAuthCore
import Crypto
import Foundation

/// Decides whether a signature over a consumed challenge proves what the finishing request
/// claims. Pure: it reads no store and no clock (the caller passes both rows and `now`), so every
/// ``FailureReason`` it gives is tested without a database (`ChallengeVerifierTests`).
///
/// The checks run in a fixed order and the first that fails names the reason; an unknown, revoked
/// or foreign device still costs a full signature verification (against a key nobody holds), so
/// timing does not tell which device ids exist or are active.
package struct ChallengeVerifier: Sendable {
    /// What a verification decides.
    package enum Outcome: Sendable, Hashable {
        /// The signature is the device's over the message rebuilt from `challenge`.
        case verified(ChallengeRecord)
        case rejected(FailureReason)
    }

    /// The relying party this server issues challenges for.
    package var relyingPartyID: String

    package init(relyingPartyID: String) { self.relyingPartyID = relyingPartyID }

    /// - Parameters:
    ///   - challenge: the consumed challenge; nil if the id named none (unknown or already used).
    ///   - device: the row of `challenge.deviceID`, whoever owns it; nil if none exists.
    ///   - signature: the DER signature as presented.
    ///   - purpose: what the finishing endpoint is for.
    ///   - session: the session that finishes (registration and step-up); nil for a login.
    ///   - now: the clock's reading for this request.
    package func verify(
        challenge: ChallengeRecord?, device: DeviceRecord?, signature: Data, purpose: SignedMessage.Purpose, session: SessionRecord?,
        now: Date
    ) -> Outcome {
        guard let challenge else { return .rejected(.unknownChallenge) }
        guard challenge.purpose == purpose, challenge.relyingPartyID == relyingPartyID else { return .rejected(.wrongPurpose) }
        guard now <= challenge.expiresAt else { return .rejected(.expiredChallenge) }
        if let session, session.userID != challenge.userID { return .rejected(.wrongUser) }
        // Bound to the session that asked: a challenge leaked from one session is useless in another.
        if let bound = challenge.sessionID, bound != session?.id { return .rejected(.wrongSession) }
        var spki = Self.decoySPKI
        var deviceProblem: FailureReason?
        if case .registration(let key, _, _) = challenge.binding {
            spki = key  // proof of possession: the key being enrolled signs
        } else if let device {
            if device.isRevoked {
                deviceProblem = .revokedDevice
            } else if !device.credential.signsBioAuthMessages {
                // A passkey answers WebAuthn ceremonies only, never a BioAuth message.
                deviceProblem = .unknownDevice
            } else if device.userID != challenge.userID {
                deviceProblem = .wrongUser
            } else if case .stepUp(_, let issuedTo) = challenge.binding,
                issuedTo != device.publicKey || device.keySince > challenge.createdAt
            {
                // Issued to another key of this device, or before its key arrived: the cool-down
                // decided at issue was about another key. Verified against a key nobody holds.
                deviceProblem = .replacedKey
            } else {
                spki = device.publicKey
            }
        } else {
            deviceProblem = .unknownDevice
        }
        guard let key = try? DevicePublicKey(spki: spki) else { return .rejected(.unknownDevice) }
        guard let der = try? ECDSADERSignature(der: signature) else { return .rejected(deviceProblem ?? .malformedSignature) }
        let verified = (try? challenge.message()).map { key.isValidSignature(raw: der.rawRepresentation, for: $0.encoded) } ?? false
        if let deviceProblem { return .rejected(deviceProblem) }
        return verified ? .verified(challenge) : .rejected(.badSignature)
    }

    /// The key verified against when the device is unknown, revoked or foreign. Its private half
    /// is discarded at start-up: no signature ever verifies.
    static let decoyKey: DevicePublicKey = {
        guard let key = try? DevicePublicKey(spki: P256.Signing.PrivateKey().publicKey.derRepresentation) else {
            fatalError("P-256 key generation failed")
        }
        return key
    }()
    /// ``decoyKey``'s SubjectPublicKeyInfo, encoded once.
    static let decoySPKI = decoyKey.spkiRepresentation
}
