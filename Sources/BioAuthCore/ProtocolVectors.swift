import Crypto
import Foundation

/// Fixed inputs of protocol v1 and the bytes they produce: the vectors published in
/// `docs/Protocol.md` and printed by `bioauth key vectors`.
public enum ProtocolVectors {
    /// A published test key (RFC 6979 A.2.5's P-256 key). Never use it for anything real.
    public static let testPrivateKeyHex = "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721"

    public static var testKey: P256.Signing.PrivateKey {
        try! P256.Signing.PrivateKey(rawRepresentation: Data(hexString: testPrivateKeyHex)!)
    }

    /// The operation a step-up vector approves.
    public static let stepUpOperation = Data("transfer 100.00 EUR to bob".utf8)

    public struct Vector: Sendable {
        public let name: String
        public let message: SignedMessage
    }

    /// One vector per purpose.
    public static var all: [Vector] {
        let challengeID = Data((0..<16).map { UInt8($0) })
        let nonce = Data((0..<32).map { UInt8(0xA0 + $0) })
        func make(_ purpose: SignedMessage.Purpose, _ hash: Data?) -> SignedMessage {
            try! SignedMessage(
                purpose: purpose, relyingPartyID: "example.com", challengeID: challengeID, nonce: nonce, userID: "alice",
                deviceID: "3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10", expiresAt: 1_767_225_660, operationHash: hash)
        }
        return [
            Vector(name: "registration", message: make(.registration, nil)),
            Vector(name: "login", message: make(.login, nil)),
            Vector(name: "step-up", message: make(.stepUp, Data(SHA256.hash(data: stepUpOperation)))),
        ]
    }
}
