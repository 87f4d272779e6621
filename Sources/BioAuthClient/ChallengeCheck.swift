import BioAuthCore
import Crypto
import Foundation

/// What the client expects of a challenge before it lets the key sign it. Checked before any
/// prompt: a server (or anything between) that asks for another purpose, relying party, user,
/// device or operation — or a signature valid for longer than a challenge lives — gets nothing.
struct ChallengeExpectation {
    var purpose: SignedMessage.Purpose
    var relyingPartyID: String
    var userID: String
    /// nil: any device id (a first enrolment, where the server assigns it).
    var deviceID: String?
    /// Step-up: the exact text shown to the user, hashed as the server hashes it.
    var operation: String?

    /// Returns the message to sign, or the field that differs.
    func check(_ envelope: ChallengeEnvelope, now: Date, maximumLifetime: TimeInterval, clockSkew: TimeInterval) throws(ClientError)
        -> SignedMessage
    {
        let message: SignedMessage
        do { message = try envelope.message() } catch { throw ClientError(.challengeMismatch, field: error.field) }
        guard message.purpose == purpose else { throw ClientError(.challengeMismatch, field: "purpose") }
        guard message.relyingPartyID == relyingPartyID else { throw ClientError(.challengeMismatch, field: "relyingPartyId") }
        guard message.userID == userID else { throw ClientError(.challengeMismatch, field: "userId") }
        if let deviceID, message.deviceID != deviceID { throw ClientError(.challengeMismatch, field: "deviceId") }
        if let operation {
            let expected = Data(SHA256.hash(data: Data(operation.utf8)))
            guard let hash = message.operationHash, constantTimeEquals(hash, expected) else {
                throw ClientError(.challengeMismatch, field: "operationHash")
            }
        }
        let seconds = now.timeIntervalSince1970
        guard Double(message.expiresAt) > seconds - clockSkew, Double(message.expiresAt) <= seconds + maximumLifetime + clockSkew else {
            throw ClientError(.challengeMismatch, field: "expiresAt")
        }
        return message
    }
}
