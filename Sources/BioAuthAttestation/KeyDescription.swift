import Foundation
import SwiftASN1

/// The Android Key Attestation extension (OID 1.3.6.1.4.1.11129.2.1.17) of an attestation leaf, as
/// "Key and ID attestation" (source.android.com/docs/security/features/keystore/attestation,
/// schema `KeyDescription`) defines it, versions 1 to 400.
///
/// Decoding is strict where the schema is fixed and lenient where it grows: authorisation tags this
/// type does not know (there are new ones in every Android release) are skipped, but tags must be
/// in ascending order and each known tag must have its schema's type.
public struct KeyDescription: Sendable, Hashable {
    /// `SecurityLevel`: where the attestation was made or where the key lives.
    public enum SecurityLevel: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
        case software = 0
        case trustedEnvironment = 1
        case strongBox = 2

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
        public var description: String {
            switch self {
            case .software: "SOFTWARE"
            case .trustedEnvironment: "TRUSTED_ENVIRONMENT"
            case .strongBox: "STRONG_BOX"
            }
        }
    }

    public static let oid: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11129, 2, 1, 17]

    public let attestationVersion: Int
    public let attestationSecurityLevel: SecurityLevel
    public let keyMintVersion: Int
    public let keyMintSecurityLevel: SecurityLevel
    public let attestationChallenge: Data
    public let uniqueID: Data
    public let softwareEnforced: AuthorizationList
    public let hardwareEnforced: AuthorizationList

    public init(derEncoded bytes: ArraySlice<UInt8>) throws(AttestationError) {
        do {
            let node = try DER.parse(bytes)
            self = try DER.sequence(node, identifier: .sequence) { nodes in
                let version = try Int(derEncoded: &nodes)
                let attestationLevel = try Self.securityLevel(&nodes)
                let keyMintVersion = try Int(derEncoded: &nodes)
                let keyMintLevel = try Self.securityLevel(&nodes)
                let challenge = try ASN1OctetString(derEncoded: &nodes)
                let unique = try ASN1OctetString(derEncoded: &nodes)
                guard let software = nodes.next(), let hardware = nodes.next() else {
                    throw ASN1Error.invalidASN1Object(reason: "missing authorisation list")
                }
                return KeyDescription(
                    attestationVersion: version, attestationSecurityLevel: attestationLevel, keyMintVersion: keyMintVersion,
                    keyMintSecurityLevel: keyMintLevel, attestationChallenge: Data(challenge.bytes), uniqueID: Data(unique.bytes),
                    softwareEnforced: try AuthorizationList(node: software), hardwareEnforced: try AuthorizationList(node: hardware))
            }
        } catch {
            throw AttestationError(.malformed, "the key attestation extension does not follow the KeyDescription schema")
        }
    }

    init(
        attestationVersion: Int, attestationSecurityLevel: SecurityLevel, keyMintVersion: Int, keyMintSecurityLevel: SecurityLevel,
        attestationChallenge: Data, uniqueID: Data, softwareEnforced: AuthorizationList, hardwareEnforced: AuthorizationList
    ) {
        self.attestationVersion = attestationVersion
        self.attestationSecurityLevel = attestationSecurityLevel
        self.keyMintVersion = keyMintVersion
        self.keyMintSecurityLevel = keyMintSecurityLevel
        self.attestationChallenge = attestationChallenge
        self.uniqueID = uniqueID
        self.softwareEnforced = softwareEnforced
        self.hardwareEnforced = hardwareEnforced
    }

    static func securityLevel(_ nodes: inout ASN1NodeCollection.Iterator) throws -> SecurityLevel {
        guard let node = nodes.next() else { throw ASN1Error.invalidASN1Object(reason: "missing security level") }
        let value = try Int(derEncoded: node, withIdentifier: .enumerated)
        guard let level = SecurityLevel(rawValue: value) else { throw ASN1Error.invalidASN1Object(reason: "unknown security level") }
        return level
    }
}

/// One `AuthorizationList`: the key's properties that one security level enforces.
public struct AuthorizationList: Sendable, Hashable {
    /// `RootOfTrust`: what the bootloader verified.
    public struct RootOfTrust: Sendable, Hashable {
        public enum VerifiedBootState: Int, Sendable, Hashable, CustomStringConvertible {
            case verified = 0, selfSigned = 1, unverified = 2, failed = 3
            public var description: String {
                switch self {
                case .verified: "VERIFIED"
                case .selfSigned: "SELF_SIGNED"
                case .unverified: "UNVERIFIED"
                case .failed: "FAILED"
                }
            }
        }
        public let verifiedBootKey: Data
        public let deviceLocked: Bool
        public let verifiedBootState: VerifiedBootState
        /// Attestation version 3 and later.
        public let verifiedBootHash: Data?
    }

    /// `AttestationApplicationId`: the packages sharing the key's uid and their signing certificates' SHA-256.
    public struct ApplicationID: Sendable, Hashable {
        public struct Package: Sendable, Hashable {
            public let name: String
            public let version: Int
        }
        public let packages: [Package]
        public let signatureDigests: [Data]
    }

    /// Tag numbers (`Tag` in the KeyMint HAL, without the type bits).
    enum Tag {
        static let purpose: UInt = 1, algorithm: UInt = 2, keySize: UInt = 3, digest: UInt = 5, padding: UInt = 6, ecCurve: UInt = 10
        static let noAuthRequired: UInt = 503, userAuthType: UInt = 504, authTimeout: UInt = 505, allowWhileOnBody: UInt = 506
        static let trustedUserPresenceRequired: UInt = 507, unlockedDeviceRequired: UInt = 509, allApplications: UInt = 600
        static let creationDateTime: UInt = 701, origin: UInt = 702, rootOfTrust: UInt = 704, osVersion: UInt = 705,
            osPatchLevel: UInt = 706
        static let attestationApplicationID: UInt = 709, vendorPatchLevel: UInt = 718, bootPatchLevel: UInt = 719
    }

    public var purposes: [Int] = []
    public var algorithm: Int?
    public var keySize: Int?
    public var digests: [Int] = []
    public var ecCurve: Int?
    public var noAuthRequired = false
    /// `HardwareAuthenticatorType` bits: 1 password/PIN, 2 biometric.
    public var userAuthType: Int?
    /// Seconds a successful authentication lasts; absent means every use needs one.
    public var authTimeout: Int?
    public var allowWhileOnBody = false
    public var trustedUserPresenceRequired = false
    public var unlockedDeviceRequired = false
    /// The key is usable by every application on the device (Keymaster's `allApplications`).
    public var allApplications = false
    /// Milliseconds since 1970.
    public var creationDateTime: Int?
    /// `KeyOrigin`: 0 generated, 1 derived, 2 imported, 3 unknown, 4 securely imported.
    public var origin: Int?
    public var rootOfTrust: RootOfTrust?
    public var osVersion: Int?
    /// YYYYMM.
    public var osPatchLevel: Int?
    public var applicationID: ApplicationID?
    /// YYYYMMDD.
    public var vendorPatchLevel: Int?
    /// YYYYMMDD.
    public var bootPatchLevel: Int?

    /// Whether the list makes the key usable only after a biometric match (`userAuthType` biometric
    /// only), on every use (no `authTimeout`).
    public var requiresBiometricOnEveryUse: Bool { !noAuthRequired && userAuthType == 2 && authTimeout == nil }

    init(node: ASN1Node) throws {
        self = try DER.sequence(node, identifier: .sequence) { nodes in
            var list = AuthorizationList()
            var previous: UInt?
            while let field = nodes.next() {
                let tag = field.identifier.tagNumber
                guard field.identifier.tagClass == .contextSpecific else { throw ASN1Error.invalidASN1Object(reason: "not a tagged field") }
                if let previous, tag <= previous { throw ASN1Error.invalidASN1Object(reason: "tags out of order") }
                previous = tag
                // Every field is EXPLICIT: one constructed wrapper around one value.
                guard case .constructed(let inner) = field.content else { throw ASN1Error.invalidASN1Object(reason: "not explicit") }
                var children = inner.makeIterator()
                guard let value = children.next(), children.next() == nil else {
                    throw ASN1Error.invalidASN1Object(reason: "explicit tag holds one value")
                }
                try list.read(tag: tag, value)
            }
            return list
        }
    }

    private init() {}

    private mutating func read(tag: UInt, _ value: ASN1Node) throws {
        func integers() throws -> [Int] { try DER.set(of: Int.self, identifier: .set, rootNode: value) }
        func present() throws -> Bool {
            _ = try ASN1Null(derEncoded: value)
            return true
        }
        switch tag {
        case Tag.purpose: purposes = try integers()
        case Tag.algorithm: algorithm = try Int(derEncoded: value)
        case Tag.keySize: keySize = try Int(derEncoded: value)
        case Tag.digest: digests = try integers()
        case Tag.ecCurve: ecCurve = try Int(derEncoded: value)
        case Tag.noAuthRequired: noAuthRequired = try present()
        case Tag.userAuthType: userAuthType = try Int(derEncoded: value)
        case Tag.authTimeout: authTimeout = try Int(derEncoded: value)
        case Tag.allowWhileOnBody: allowWhileOnBody = try present()
        case Tag.trustedUserPresenceRequired: trustedUserPresenceRequired = try present()
        case Tag.unlockedDeviceRequired: unlockedDeviceRequired = try present()
        case Tag.allApplications: allApplications = try present()
        case Tag.creationDateTime: creationDateTime = try Int(derEncoded: value)
        case Tag.origin: origin = try Int(derEncoded: value)
        case Tag.rootOfTrust: rootOfTrust = try Self.rootOfTrust(value)
        case Tag.osVersion: osVersion = try Int(derEncoded: value)
        case Tag.osPatchLevel: osPatchLevel = try Int(derEncoded: value)
        case Tag.attestationApplicationID: applicationID = try Self.applicationID(ASN1OctetString(derEncoded: value))
        case Tag.vendorPatchLevel: vendorPatchLevel = try Int(derEncoded: value)
        case Tag.bootPatchLevel: bootPatchLevel = try Int(derEncoded: value)
        default: break  // A tag from a newer Android: skipped, not fatal.
        }
    }

    private static func rootOfTrust(_ node: ASN1Node) throws -> RootOfTrust {
        try DER.sequence(node, identifier: .sequence) { nodes in
            let key = try ASN1OctetString(derEncoded: &nodes)
            let locked = try Bool(derEncoded: &nodes)
            guard let stateNode = nodes.next(),
                let state = RootOfTrust.VerifiedBootState(rawValue: try Int(derEncoded: stateNode, withIdentifier: .enumerated))
            else {
                throw ASN1Error.invalidASN1Object(reason: "verified boot state")
            }
            let hash = try nodes.next().map { try ASN1OctetString(derEncoded: $0) }
            return RootOfTrust(
                verifiedBootKey: Data(key.bytes), deviceLocked: locked, verifiedBootState: state,
                verifiedBootHash: hash.map { Data($0.bytes) })
        }
    }

    /// The application id is DER inside an OCTET STRING.
    private static func applicationID(_ octets: ASN1OctetString) throws -> ApplicationID {
        try DER.sequence(try DER.parse(octets.bytes), identifier: .sequence) { nodes in
            guard let packagesNode = nodes.next(), let digestsNode = nodes.next() else {
                throw ASN1Error.invalidASN1Object(reason: "application id")
            }
            let packages = try DER.set(packagesNode, identifier: .set) { packageNodes in
                var packages: [ApplicationID.Package] = []
                while let package = packageNodes.next() {
                    packages.append(
                        try DER.sequence(package, identifier: .sequence) { fields in
                            let name = try ASN1OctetString(derEncoded: &fields)
                            let version = try Int(derEncoded: &fields)
                            guard let text = String(validating: name.bytes, as: UTF8.self) else {
                                throw ASN1Error.invalidASN1Object(reason: "package name")
                            }
                            return ApplicationID.Package(name: text, version: version)
                        })
                }
                return packages
            }
            let digests = try DER.set(of: ASN1OctetString.self, identifier: .set, rootNode: digestsNode).map { Data($0.bytes) }
            return ApplicationID(packages: packages, signatureDigests: digests)
        }
    }
}
