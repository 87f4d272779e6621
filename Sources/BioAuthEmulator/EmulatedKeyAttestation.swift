import BioAuthAttestation
import Crypto
import Foundation
import SwiftASN1
import X509

/// Android Key Attestation, emulated: the certificate chain `KeyStore.getCertificateChain(alias)`
/// returns for a P-256 key made with `setAttestationChallenge`, its leaf carrying a `KeyDescription`
/// (OID 1.3.6.1.4.1.11129.2.1.17, attestation version 300) as "Key and ID attestation"
/// (source.android.com/docs/security/features/keystore/attestation) defines it, under a test
/// certificate authority shaped like Google's (a P-384 root and intermediate).
///
/// For a server's tests of the Android enrolment: the Kotlin side is not Swift, but its output is
/// this chain. A server trusts it only when told to
/// (`AndroidKeyAttestationVerifier(requirements:roots: [EmulatedKeyAttestation.testRoot], revocation: .unchecked)`). Each
/// ``KeyProperties`` field is what a real device may report, so a test can make every chain a
/// careless or hostile app would send: a software key, a key usable without a biometric, an
/// unlocked bootloader, another app.
public enum EmulatedKeyAttestation {
    /// The test root every emulated chain ends below (made once per process; not in the chain,
    /// as chains issued since 2026 omit the root).
    public static var testRoot: Certificate { authority.root }
    /// ``testRoot`` as PEM: the file `bioauth-server --insecure-android-attestation-root` reads.
    public static var testRootPEM: String {
        // A certificate this process made serialises.
        (try? authority.root.serializeAsPEM().pemString) ?? ""
    }

    /// What the key description says about the key and the device.
    public struct KeyProperties: Sendable, Hashable {
        /// The app that made the key (`AttestationApplicationId`), and its signing certificate's SHA-256.
        public var packageName: String
        public var signingCertificateDigest: Data
        /// Where the key lives and the attestation was made; `.software` is what an emulator or a
        /// rooted device's software Keystore gives.
        public var securityLevel: KeyDescription.SecurityLevel = .trustedEnvironment
        /// `HardwareAuthenticatorType` bits: 2 is biometric only, 3 biometric or device credential.
        public var userAuthType: Int? = 2
        /// Seconds an authentication lasts (`setUserAuthenticationParameters(timeout, …)` with a
        /// timeout above 0); nil: every use needs one.
        public var authTimeout: Int?
        public var allowWhileOnBody = false
        public var unlockedDeviceRequired = false
        /// A verified system booted with a locked bootloader.
        public var verifiedBoot = true
        /// YYYYMM.
        public var osPatchLevel = 202_610
        /// `KeyOrigin`: 0 generated in the secure hardware, 2 imported into it.
        public var origin = 0
        /// `KeyPurpose` values: 2 is SIGN.
        public var purposes = [2]
        /// `Algorithm`: 3 is EC.
        public var algorithm = 3
        /// `EcCurve`: 1 is P_256; nil leaves the tag out.
        public var ecCurve: Int? = 1

        public init(packageName: String, signingCertificateDigest: Data) {
            self.packageName = packageName
            self.signingCertificateDigest = signingCertificateDigest
        }
    }

    /// The chain for `publicKey`, leaf first, DER each: what the Android app sends as
    /// `androidKeyAttestation` (base64url each).
    public static func chain(for publicKey: P256.Signing.PublicKey, challenge: Data, properties: KeyProperties, at time: Date = Date())
        -> [Data]
    {
        chain(for: publicKey, challenge: challenge, properties: properties, authority: authority, at: time)
    }

    // MARK: Attack scripts

    /// A chain with the same key description under a root of the attacker's own: what a
    /// software Keystore or a script can make. Only Google's roots (or ``testRoot``) are trusted.
    public static func forgedChain(
        for publicKey: P256.Signing.PublicKey, challenge: Data, properties: KeyProperties, at time: Date = Date()
    ) -> [Data] {
        chain(
            for: publicKey, challenge: challenge, properties: properties, authority: TestAuthority(name: "Attacker Key Attestation"),
            at: time)
    }

    // MARK: Encoding

    static let authority = TestAuthority(name: "BioAuth Emulated Key Attestation")

    static func chain(
        for publicKey: P256.Signing.PublicKey, challenge: Data, properties: KeyProperties, authority: TestAuthority, at time: Date
    ) -> [Data] {
        do {
            let description = try keyDescription(challenge: challenge, properties: properties, at: time)
            let leaf = try authority.leaf(
                for: publicKey, subject: "Android Keystore Key", at: time,
                extension: Certificate.Extension(oid: KeyDescription.oid, critical: false, value: ArraySlice(description)))
            return [try TestAuthority.der(leaf), try TestAuthority.der(authority.intermediate)]
        } catch {
            // Fixed shapes and fresh keys: encoding cannot fail.
            fatalError("the emulated key attestation could not be built: \(error)")
        }
    }

    /// `KeyDescription ::= SEQUENCE { attestationVersion, attestationSecurityLevel, keyMintVersion,
    /// keyMintSecurityLevel, attestationChallenge, uniqueId, softwareEnforced, hardwareEnforced }`.
    static func keyDescription(challenge: Data, properties p: KeyProperties, at time: Date) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { description in
            try description.serialize(300)
            try p.securityLevel.rawValue.serialize(into: &description, withIdentifier: .enumerated)
            try description.serialize(300)
            try p.securityLevel.rawValue.serialize(into: &description, withIdentifier: .enumerated)
            try description.serialize(ASN1OctetString(contentBytes: ArraySlice(challenge)))
            try description.serialize(ASN1OctetString(contentBytes: []))
            // What Android's software enforces: the creation time and the app.
            try description.appendConstructedNode(identifier: .sequence) { list in
                try explicit(701, &list) { try $0.serialize(Int(time.timeIntervalSince1970 * 1000)) }
                try explicit(709, &list) { try $0.serialize(ASN1OctetString(contentBytes: ArraySlice(try applicationID(p)))) }
            }
            // What the secure hardware enforces, tags ascending.
            try description.appendConstructedNode(identifier: .sequence) { list in
                try explicit(1, &list) { try $0.serializeSetOf(p.purposes) }
                try explicit(2, &list) { try $0.serialize(p.algorithm) }
                try explicit(3, &list) { try $0.serialize(256) }  // key size
                try explicit(5, &list) { try $0.serializeSetOf([4]) }  // digest: SHA-256
                if let curve = p.ecCurve { try explicit(10, &list) { try $0.serialize(curve) } }
                if let type = p.userAuthType {
                    try explicit(504, &list) { try $0.serialize(type) }
                } else {
                    try explicit(503, &list) { try $0.serialize(ASN1Null()) }
                }
                if let timeout = p.authTimeout { try explicit(505, &list) { try $0.serialize(timeout) } }
                if p.allowWhileOnBody { try explicit(506, &list) { try $0.serialize(ASN1Null()) } }
                if p.unlockedDeviceRequired { try explicit(509, &list) { try $0.serialize(ASN1Null()) } }
                try explicit(702, &list) { try $0.serialize(p.origin) }
                try explicit(704, &list) { list in
                    try list.appendConstructedNode(identifier: .sequence) { root in
                        try root.serialize(ASN1OctetString(contentBytes: ArraySlice(repeating: 0xB0, count: 32)))
                        try root.serialize(p.verifiedBoot)
                        try (p.verifiedBoot ? 0 : 2).serialize(into: &root, withIdentifier: .enumerated)  // VERIFIED or UNVERIFIED
                        try root.serialize(ASN1OctetString(contentBytes: ArraySlice(repeating: 0xB1, count: 32)))
                    }
                }
                try explicit(705, &list) { try $0.serialize(160_000) }  // Android 16
                try explicit(706, &list) { try $0.serialize(p.osPatchLevel) }
            }
        }
        return serializer.serializedBytes
    }

    /// `AttestationApplicationId ::= SEQUENCE { SET OF SEQUENCE { packageName OCTET STRING, version INTEGER }, SET OF OCTET STRING }`.
    static func applicationID(_ p: KeyProperties) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { id in
            try id.appendConstructedNode(identifier: .set) { packages in
                try packages.appendConstructedNode(identifier: .sequence) { package in
                    try package.serialize(ASN1OctetString(contentBytes: ArraySlice(Data(p.packageName.utf8))))
                    try package.serialize(1)
                }
            }
            try id.serializeSetOf([ASN1OctetString(contentBytes: ArraySlice(p.signingCertificateDigest))])
        }
        return serializer.serializedBytes
    }

    /// One `[tag] EXPLICIT` field of an `AuthorizationList`.
    static func explicit(_ tag: UInt, _ list: inout DER.Serializer, _ body: (inout DER.Serializer) throws -> Void) throws {
        try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: tag, tagClass: .contextSpecific), body)
    }
}
