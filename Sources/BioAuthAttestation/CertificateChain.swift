import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Builds and checks an attestation certificate chain with swift-certificates' RFC 5280 verifier
/// (signatures, validity at the given time, basic constraints, name chaining) up to one of `roots`.
///
/// Roots are trusted **by public key**: a certificate the device sends whose key is a trusted root's
/// key is not used as an intermediate, so a chain that ends in an expired copy of a root (Google's
/// 2016 RSA root expired on 2026-05-24; its key lives on in the 2022 certificate) or that omits the
/// root (Android chains since 2026) verifies through the trusted certificate, and a self-signed
/// "root" the device made up does not verify at all.
enum CertificateChain {
    /// The longest chain accepted (Android chains have up to 5 certificates).
    static let maximumLength = 8

    /// DER of the ML-DSA algorithm OIDs' common prefix (2.16.840.1.101.3.4.3.17–19, FIPS 204), which
    /// swift-certificates does not parse: Android 17 makes such keys.
    static let mlDSAPrefix = Data([0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03])

    static func parse(_ ders: [Data]) throws(AttestationError) -> [Certificate] {
        guard !ders.isEmpty, ders.count <= maximumLength else {
            throw AttestationError(.malformed, "the certificate chain must have 1 to \(maximumLength) certificates")
        }
        var certificates: [Certificate] = []
        for der in ders {
            do { certificates.append(try Certificate(derEncoded: [UInt8](der))) } catch {
                if certificates.isEmpty, der.range(of: mlDSAPrefix) != nil {
                    throw AttestationError(.publicKey, "the attested key is an ML-DSA key; BioAuth enrols P-256 keys only")
                }
                throw AttestationError(.malformed, "a certificate of the chain is not DER X.509")
            }
        }
        return certificates
    }

    /// Verifies that `chain[0]` (the leaf) chains to one of `roots` at `time`; returns the leaf.
    static func verify(_ chain: [Certificate], roots: [Certificate], at time: Date) async throws(AttestationError) -> Certificate {
        guard let leaf = chain.first else { throw AttestationError(.malformed, "the certificate chain is empty") }
        // The first certificate is the key's own: a CA certificate there is a chain in the wrong order.
        if case .isCertificateAuthority = try? leaf.extensions.basicConstraints {
            throw AttestationError(.certificateChain, "the first certificate of the chain is a CA certificate, not the key's")
        }
        let rootKeys = Set(roots.map(\.publicKey))
        let intermediates = chain.dropFirst().filter { !rootKeys.contains($0.publicKey) }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(intermediates))
        guard case .validCertificate = result else {
            throw AttestationError(.certificateChain, "the certificate chain does not lead to a trusted root at the verification time")
        }
        return leaf
    }

    /// Verifies an Android Key Attestation chain as Google's own verifier does (android/keyattestation,
    /// `KeyAttestationCertPathValidator`: "Older Android devices produce Key Attestation certificate
    /// chains that do not fully conform to RFC 5280"): from a trusted root down to `chain[0]`, each
    /// certificate names the one above it as its issuer and carries its signature, and every one but
    /// the leaf is valid at `time` (the device sets the leaf's dates). Basic constraints, key usage
    /// and path length are not checked: factory-provisioned batch certificates are often marked
    /// `CA:FALSE` without `keyCertSign`. Roots are trusted by public key, as in ``verify(_:roots:at:)``.
    static func verifyKeyAttestationPath(_ chain: [Certificate], roots: [Certificate], at time: Date) throws(AttestationError)
        -> Certificate
    {
        guard let leaf = chain.first else { throw AttestationError(.malformed, "the certificate chain is empty") }
        if case .isCertificateAuthority = try? leaf.extensions.basicConstraints {
            throw AttestationError(.certificateChain, "the first certificate of the chain is a CA certificate, not the key's")
        }
        // The device's copy of a root (expired, or current) is replaced by the trusted one.
        let rootKeys = Set(roots.map(\.publicKey))
        var path = chain
        while path.count > 1, let last = path.last, rootKeys.contains(last.publicKey) { path.removeLast() }
        let untrusted = AttestationError(
            .certificateChain, "the certificate chain does not lead to a trusted root at the verification time")
        guard let top = path.last,
            roots.contains(where: { $0.subject == top.issuer && $0.publicKey.isValidSignature(top.signature, for: top) })
        else {
            throw untrusted
        }
        for (certificate, issuer) in zip(path, path.dropFirst()) {
            guard certificate.issuer == issuer.subject, issuer.publicKey.isValidSignature(certificate.signature, for: certificate) else {
                throw untrusted
            }
        }
        for certificate in path.dropFirst() where !(certificate.notValidBefore...certificate.notValidAfter).contains(time) {
            throw untrusted
        }
        return leaf
    }
}
