import Foundation

/// What a device key signs in protocol v1, built by the device from the challenge it received
/// and rebuilt by the server from the challenge it stored. Both sides run this code.
///
/// Byte layout (`docs/Protocol.md` has vectors):
///
/// | field | bytes |
/// |---|---|
/// | tag | ASCII `BioAuth/v1` (10) |
/// | purpose | 1: 0x01 registration, 0x02 login, 0x03 step-up |
/// | relying-party id | u16 big-endian length ‖ UTF-8 |
/// | challenge id | u16 length ‖ bytes |
/// | nonce | 32 |
/// | user id | u16 length ‖ UTF-8 |
/// | device id | u16 length ‖ UTF-8 |
/// | expires at | u64 big-endian, seconds since 1970-01-01T00:00:00Z |
/// | operation hash | 32 (SHA-256 of the operation's details), step-up only |
public struct SignedMessage: Sendable, Hashable {
    /// The fixed domain-separation tag, which carries the version.
    public static let tag = Array("BioAuth/v1".utf8)
    /// The longest identifier (relying party, user, device) allowed, in UTF-8 bytes.
    public static let maximumIdentifierLength = 255

    public enum Purpose: UInt8, Sendable, Hashable, CaseIterable, Codable {
        case registration = 1
        case login = 2
        case stepUp = 3

        /// The name used in JSON and URLs.
        public var name: String {
            switch self {
            case .registration: "registration"
            case .login: "login"
            case .stepUp: "step-up"
            }
        }
    }

    public let purpose: Purpose
    public let relyingPartyID: String
    public let challengeID: Data
    public let nonce: Data
    public let userID: String
    public let deviceID: String
    public let expiresAt: UInt64
    /// SHA-256 of the operation being approved; present exactly when `purpose == .stepUp`.
    public let operationHash: Data?

    /// Checks every field's size; the message can then always be encoded.
    public init(
        purpose: Purpose, relyingPartyID: String, challengeID: Data, nonce: Data, userID: String,
        deviceID: String, expiresAt: UInt64, operationHash: Data? = nil
    ) throws(WireFormatError) {
        for (name, value) in [("relyingPartyId", relyingPartyID), ("userId", userID), ("deviceId", deviceID)] {
            guard !value.isEmpty, value.utf8.count <= Self.maximumIdentifierLength else {
                throw WireFormatError(.wrongLength, field: name)
            }
        }
        guard challengeID.count == 16 else { throw WireFormatError(.wrongLength, field: "challengeId") }
        guard nonce.count == 32 else { throw WireFormatError(.wrongLength, field: "nonce") }
        switch (purpose, operationHash) {
        case (.stepUp, let hash?) where hash.count == 32: break
        case (.stepUp, _): throw WireFormatError(.wrongLength, field: "operationHash")
        case (_, nil): break
        case (_, .some): throw WireFormatError(.invalidValue, field: "operationHash")
        }
        self.purpose = purpose
        self.relyingPartyID = relyingPartyID
        self.challengeID = challengeID
        self.nonce = nonce
        self.userID = userID
        self.deviceID = deviceID
        self.expiresAt = expiresAt
        self.operationHash = operationHash
    }

    /// The exact bytes the device signs.
    public var encoded: Data {
        var out = Data(Self.tag)
        out.append(purpose.rawValue)
        func prefixed(_ bytes: Data) {
            out.append(UInt8(bytes.count >> 8))
            out.append(UInt8(bytes.count & 0xFF))
            out.append(bytes)
        }
        prefixed(Data(relyingPartyID.utf8))
        prefixed(challengeID)
        out.append(nonce)
        prefixed(Data(userID.utf8))
        prefixed(Data(deviceID.utf8))
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: expiresAt >> UInt64(shift))) }
        if let operationHash { out.append(operationHash) }
        return out
    }
}

/// A challenge as the server sends it to the device (JSON, binary fields base64url).
/// Its description omits the nonce.
public struct ChallengeEnvelope: Codable, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var challengeId: String
    public var purpose: String
    public var relyingPartyId: String
    public var nonce: String
    public var userId: String
    public var deviceId: String
    public var expiresAt: UInt64
    public var operationHash: String?

    public init(_ message: SignedMessage) {
        challengeId = Base64URL.encode(message.challengeID)
        purpose = message.purpose.name
        relyingPartyId = message.relyingPartyID
        nonce = Base64URL.encode(message.nonce)
        userId = message.userID
        deviceId = message.deviceID
        expiresAt = message.expiresAt
        operationHash = message.operationHash.map { Base64URL.encode($0) }
    }

    public var description: String {
        "ChallengeEnvelope(\(purpose), rp: \(relyingPartyId), user: \(userId), device: \(deviceId), expiresAt: \(expiresAt), nonce: redacted)"
    }
    public var debugDescription: String { description }
    /// `dump()` and debuggers see every field but the nonce.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "challengeId": challengeId, "purpose": purpose, "relyingPartyId": relyingPartyId, "nonce": "redacted", "userId": userId,
                "deviceId": deviceId, "expiresAt": expiresAt, "operationHash": operationHash as Any,
            ])
    }

    /// Rebuilds the message the device must sign, checking every field.
    public func message() throws(WireFormatError) -> SignedMessage {
        guard let purpose = SignedMessage.Purpose.allCases.first(where: { $0.name == purpose }) else {
            throw WireFormatError(.invalidValue, field: "purpose")
        }
        guard let challengeID = Base64URL.decode(challengeId) else { throw WireFormatError(.malformedBase64, field: "challengeId") }
        guard let nonce = Base64URL.decode(nonce) else { throw WireFormatError(.malformedBase64, field: "nonce") }
        var hash: Data?
        if let operationHash {
            guard let decoded = Base64URL.decode(operationHash) else { throw WireFormatError(.malformedBase64, field: "operationHash") }
            hash = decoded
        }
        return try SignedMessage(
            purpose: purpose, relyingPartyID: relyingPartyId, challengeID: challengeID, nonce: nonce,
            userID: userId, deviceID: deviceId, expiresAt: expiresAt, operationHash: hash)
    }
}
