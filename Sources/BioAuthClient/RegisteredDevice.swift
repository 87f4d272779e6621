import BioAuthCore
import Crypto
import Foundation

/// A device of the user, as the server lists it.
public struct RegisteredDevice: Sendable, Hashable {
    public let id: String
    public let name: String
    public let publicKey: P256.Signing.PublicKey
    public let createdAt: Date
    public let lastUsedAt: Date?
    public let revokedAt: Date?
    /// When the key was last replaced (a re-enrolment), and how: `approval`, `recovery`,
    /// `primaryLogin` or `grant`. Show both: a key replaced by someone else is how an attacker
    /// takes over a device that keeps its familiar name.
    public let keyReplacedAt: Date?
    public let keyReplacedBy: String?
    /// What the key's attestation proved at enrolment (format, security level, app); nil: it
    /// enrolled unattested.
    public let attestation: Wire.DeviceAttestation?
    /// What allowed the device's enrolment, in ``keyReplacedBy``'s terms; nil where the server
    /// did not record it.
    public let enrolledBy: String?
    /// Whether this is the phone the client runs on.
    public let isThisDevice: Bool

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.id == rhs.id && lhs.publicKey.x963Representation == rhs.publicKey.x963Representation && lhs.revokedAt == rhs.revokedAt
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    init(_ device: Wire.Device, thisDevice: String?) throws(ClientError) {
        guard let spki = Base64URL.decode(device.publicKey), let key = try? DevicePublicKey(spki: spki) else {
            throw ClientError(.protocolViolation)
        }
        id = device.id
        name = device.name
        publicKey = key.signingKey
        createdAt = Date(seconds: device.createdAt)
        lastUsedAt = device.lastUsedAt.map(Date.init(seconds:))
        revokedAt = device.revokedAt.map(Date.init(seconds:))
        keyReplacedAt = device.keyReplacedAt.map(Date.init(seconds:))
        keyReplacedBy = device.keyReplacedBy
        attestation = device.attestation
        enrolledBy = device.enrolledBy
        isThisDevice = device.id == thisDevice
    }
}

extension Date {
    init(seconds: Int64) { self.init(timeIntervalSince1970: TimeInterval(seconds)) }
}
