import BioAuthCore
import Crypto
import Foundation
import X509

/// What an Android key must be for a deployment to accept it
/// (developer.android.com/privacy-and-security/security-key-attestation).
///
/// The defaults are the strict choice; each weaker setting is named and documented in `docs/ThreatModel.md`.
public struct AndroidKeyRequirements: Sendable, Hashable {
    /// Package names of the deployment's apps; one of the key's packages must be among them.
    public var packageNames: Set<String>
    /// SHA-256 digests of the apps' signing certificates; one of the key's must be among them.
    public var signingCertificateDigests: Set<Data>
    /// The lowest security level for both the attestation and KeyMint. Never `.software`.
    public var minimumSecurityLevel: KeyDescription.SecurityLevel = .trustedEnvironment
    /// The key must need a biometric match (`userAuthType` biometric only) on every use (no `authTimeout`).
    public var biometricOnEveryUse = true
    /// Refuse keys that stay usable while the device is on the wearer's body.
    public var refuseAllowWhileOnBody = true
    /// Require `unlockedDeviceRequired` (off by default: Android 9+ only, and the biometric prompt already needs a present user).
    public var requireUnlockedDevice = false
    /// Require a verified boot state of VERIFIED and a locked bootloader.
    public var requireVerifiedBoot = true
    /// Oldest OS patch level accepted, as YYYYMM; nil accepts any.
    public var minimumOSPatchLevel: Int?

    public init(packageNames: Set<String>, signingCertificateDigests: Set<Data>) {
        self.packageNames = packageNames
        self.signingCertificateDigests = signingCertificateDigests
    }
}

/// A key Android Key Attestation proved, with the facts the chain carried.
public struct AndroidAttestedKey: Sendable, Hashable, CustomStringConvertible {
    public let publicKey: DevicePublicKey
    public let securityLevel: KeyDescription.SecurityLevel
    public let packageName: String
    public let keyDescription: KeyDescription

    public var description: String { "AndroidAttestedKey(\(packageName), \(securityLevel), key \(publicKey.fingerprint))" }
}

/// Checks an Android Key Attestation certificate chain (leaf first) against Google's hardware
/// attestation roots and a deployment's ``AndroidKeyRequirements``.
public struct AndroidKeyAttestationVerifier: Sendable, Hashable {
    /// Whether chains are checked against an attestation status list (revoked and suspended
    /// attestation keys, leaked keyboxes among them).
    public enum Revocation: Sendable, Hashable {
        /// Every certificate's serial is looked up in the list in force; with none current, every
        /// chain is refused (``AttestationError/Check/statusUnknown``).
        case checked(AttestationStatus)
        /// No list is consulted: a chain under a leaked, revoked batch key verifies. For test roots,
        /// whose chains no list names; with Google's roots, an explicit, weaker choice
        /// (`docs/ThreatModel.md`).
        case unchecked
    }

    public var requirements: AndroidKeyRequirements
    public var roots: [Certificate]
    public var revocation: Revocation

    /// A verifier; `revocation` has no default, so that skipping the status list is written down.
    public init(
        requirements: AndroidKeyRequirements, roots: [Certificate] = TrustAnchors.googleHardwareAttestationRoots, revocation: Revocation
    ) {
        self.requirements = requirements
        self.roots = roots
        self.revocation = revocation
    }

    /// Parses and chain-checks without applying the requirements: what `bioauth attestation check` prints.
    public static func decode(chain ders: [Data], roots: [Certificate] = TrustAnchors.googleHardwareAttestationRoots, at time: Date)
        async throws(AttestationError) -> (
            leaf: Certificate, description: KeyDescription
        )
    {
        let (chain, description) = try await decodeChain(ders, roots: roots, at: time)
        return (chain[0], description)
    }

    /// The parsed chain, verified, and its leaf's key description.
    static func decodeChain(_ ders: [Data], roots: [Certificate], at time: Date) async throws(AttestationError) -> (
        chain: [Certificate], description: KeyDescription
    ) {
        let chain = try CertificateChain.parse(ders)
        // Only the leaf describes the key: an intermediate carrying the extension is a forged chain.
        for certificate in chain.dropFirst() where certificate.extensions[oid: KeyDescription.oid] != nil {
            throw AttestationError(.malformed, "a certificate other than the leaf carries a key description")
        }
        guard let value = chain[0].extensions[oid: KeyDescription.oid]?.value else {
            throw AttestationError(.malformed, "the leaf carries no key description")
        }
        // The chain first: bytes no trusted root vouches for are not worth decoding.
        _ = try CertificateChain.verifyKeyAttestationPath(chain, roots: roots, at: time)
        return (chain, try KeyDescription(derEncoded: value))
    }

    /// The attestation challenge the leaf of `chain` claims, unverified: for a server that issues
    /// one-time challenges to learn which one to take, and then to ``verify(chain:challenge:publicKey:at:)`` with it.
    public static func claimedChallenge(chain ders: [Data]) throws(AttestationError) -> Data {
        let chain = try CertificateChain.parse(ders)
        guard let value = chain[0].extensions[oid: KeyDescription.oid]?.value else {
            throw AttestationError(.malformed, "the leaf carries no key description")
        }
        return try KeyDescription(derEncoded: value).attestationChallenge
    }

    /// Verifies `chain` for a key that must be `publicKey` and was made with `challenge`.
    public func verify(chain ders: [Data], challenge: Data, publicKey: DevicePublicKey, at time: Date) async throws(AttestationError)
        -> AndroidAttestedKey
    {
        let (chain, key) = try await Self.decodeChain(ders, roots: roots, at: time)
        let leaf = chain[0]
        // A verified chain first: a forgery is refused as such, even while the list is stale.
        if case .checked(let status) = revocation { try status.check(chain, at: time) }
        guard let p256 = P256.Signing.PublicKey(leaf.publicKey), DevicePublicKey(p256) == publicKey else {
            throw AttestationError(.publicKey, "the attested key is not the key being enrolled")
        }
        guard key.attestationChallenge == challenge else {
            throw AttestationError(.challenge, "the attestation challenge is not the one this server issued")
        }
        let level = min(key.attestationSecurityLevel, key.keyMintSecurityLevel)
        guard level >= max(requirements.minimumSecurityLevel, .trustedEnvironment) else {
            throw AttestationError(.securityLevel, "the key or its attestation is not in the TEE or StrongBox")
        }
        // What the secure hardware enforces counts; what Android's software enforces does not.
        let enforced = key.hardwareEnforced
        try Self.checkKind(enforced)
        guard let application = key.softwareEnforced.applicationID ?? enforced.applicationID,
            let package = application.packages.first(where: { requirements.packageNames.contains($0.name) })
        else { throw AttestationError(.appIdentifier, "the key belongs to an app this server does not accept") }
        guard application.signatureDigests.contains(where: requirements.signingCertificateDigests.contains) else {
            throw AttestationError(.signingCertificate, "the app is not signed with a certificate this server accepts")
        }
        if requirements.biometricOnEveryUse, !enforced.requiresBiometricOnEveryUse {
            throw AttestationError(.userAuthentication, "the key is not usable only after a biometric match on every use")
        }
        if requirements.refuseAllowWhileOnBody, enforced.allowWhileOnBody {
            throw AttestationError(.keyAuthorization, "the key stays usable while the device is on the body")
        }
        if requirements.requireUnlockedDevice, !enforced.unlockedDeviceRequired {
            throw AttestationError(.keyAuthorization, "the key does not require an unlocked device")
        }
        if requirements.requireVerifiedBoot {
            guard let root = enforced.rootOfTrust, root.verifiedBootState == .verified, root.deviceLocked else {
                throw AttestationError(.verifiedBoot, "the device did not boot a verified system with a locked bootloader")
            }
        }
        if let minimum = requirements.minimumOSPatchLevel {
            guard let level = enforced.osPatchLevel, level >= minimum else {
                throw AttestationError(.patchLevel, "the OS patch level is older than this server accepts")
            }
        }
        return AndroidAttestedKey(publicKey: publicKey, securityLevel: level, packageName: package.name, keyDescription: key)
    }

    /// What the key is, as the secure hardware says: generated there (an imported key's private
    /// half existed outside it), for signing, EC on P-256. The SPKI match proves the curve of the
    /// leaf's key; these prove the hardware made that key and holds it for this use. Not
    /// configurable: BioAuth's device keys are all of this kind.
    static func checkKind(_ enforced: AuthorizationList) throws(AttestationError) {
        guard enforced.origin == KeyMint.originGenerated else {
            throw AttestationError(.keyOrigin, "the key was not generated in the secure hardware")
        }
        guard enforced.purposes.contains(KeyMint.purposeSign) else { throw AttestationError(.keyPurpose, "the key may not sign") }
        guard enforced.algorithm == KeyMint.algorithmEC else {
            throw AttestationError(.keyAlgorithm, "the secure hardware does not hold the key as an EC key")
        }
        guard enforced.ecCurve == KeyMint.curveP256 else {
            throw AttestationError(.keyCurve, "the secure hardware does not hold the key on P-256")
        }
    }
}

/// Values of the KeyMint HAL's enums (`hardware/interfaces/security/keymint/aidl`: `KeyOrigin`,
/// `KeyPurpose`, `Algorithm`, `EcCurve`), the same in Keymaster 2 to 4.
enum KeyMint {
    static let originGenerated = 0
    static let purposeSign = 2
    static let algorithmEC = 3
    static let curveP256 = 1
}
