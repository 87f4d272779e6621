import Crypto
import Foundation
import SwiftASN1
import X509

/// The `packed` attestation statement format (WebAuthn §8.2): a signature over the authenticator
/// data and the client data's hash, by the credential's own key (self attestation) or by an
/// attestation certificate (`x5c`) whose subject, basic constraints and AAGUID extension the
/// specification fixes (§8.2.1).
enum PackedAttestation {
    /// id-fido-gen-ce-aaguid: the authenticator model's AAGUID in an attestation certificate.
    static let aaguidExtension: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]

    /// What a verified statement proved: nil for self attestation, the certificate chain (leaf
    /// first) otherwise.
    static func verify(
        _ statement: CBOR, authenticatorData: Data, clientDataHash: Data, credential: WebAuthnAuthenticatorData.AttestedCredential
    )
        throws(WebAuthnError) -> [Certificate]?
    {
        guard case .map = statement, let signature = statement["sig"]?.bytesValue, let algorithm = statement["alg"]?.intValue else {
            throw WebAuthnError(.malformed, "a packed statement lacks alg or sig")
        }
        let signed = authenticatorData + clientDataHash
        guard let x5c = statement["x5c"] else {
            guard algorithm == credential.publicKey.algorithm else {
                throw WebAuthnError(.attestation, "a self attestation's alg is not the credential key's")
            }
            guard credential.publicKey.isValidSignature(signature, for: signed) else {
                throw WebAuthnError(.attestation, "the self attestation's signature does not verify")
            }
            return nil
        }
        guard let ders = x5c.arrayValue?.compactMap(\.bytesValue), !ders.isEmpty, ders.count == x5c.arrayValue?.count, ders.count <= 8
        else {
            throw WebAuthnError(.malformed, "x5c is not 1 to 8 certificates")
        }
        var chain: [Certificate] = []
        for der in ders {
            do { chain.append(try Certificate(derEncoded: [UInt8](der))) } catch {
                throw WebAuthnError(.malformed, "a certificate of x5c is not DER X.509")
            }
        }
        let leaf = chain[0]
        // ES256 for most security keys; RS256 and EdDSA certificates verify the same way.
        guard let key = COSEKey(leaf.publicKey, algorithm: algorithm) else {
            throw WebAuthnError(.algorithm, "the attestation certificate's key is not one for alg \(algorithm)")
        }
        guard key.isValidSignature(signature, for: signed) else {
            throw WebAuthnError(.attestation, "the attestation signature does not verify with the certificate's key")
        }
        try checkRequirements(leaf, aaguid: credential.aaguid)
        return chain
    }

    /// §8.2.1: version 3; a subject with C, O, OU "Authenticator Attestation" and CN; not a CA;
    /// and the AAGUID extension, if present, not critical and equal to the credential's AAGUID.
    static func checkRequirements(_ leaf: Certificate, aaguid: Data) throws(WebAuthnError) {
        guard leaf.version == .v3 else { throw WebAuthnError(.attestation, "the attestation certificate is not version 3") }
        var attributes: [ASN1ObjectIdentifier: String] = [:]
        for name in leaf.subject {
            for attribute in name { attributes[attribute.type] = String(describing: attribute.value) }
        }
        let required: [ASN1ObjectIdentifier] = [
            .RDNAttributeType.countryName, .RDNAttributeType.organizationName, .RDNAttributeType.commonName,
        ]
        guard required.allSatisfy({ attributes[$0] != nil }),
            attributes[.RDNAttributeType.organizationalUnitName] == "Authenticator Attestation"
        else { throw WebAuthnError(.attestation, "the attestation certificate's subject is not C, O, OU=Authenticator Attestation, CN") }
        if case .isCertificateAuthority? = try? leaf.extensions.basicConstraints {
            throw WebAuthnError(.attestation, "the attestation certificate is a CA certificate")
        }
        if let fido = leaf.extensions.first(where: { $0.oid == aaguidExtension }) {
            // extnValue holds an OCTET STRING of the 16 bytes.
            let value = [UInt8](fido.value)
            guard !fido.critical, value.count == 18, value[0] == 0x04, value[1] == 16, Data(value[2...]) == aaguid else {
                throw WebAuthnError(.attestation, "the attestation certificate's AAGUID is not the credential's")
            }
        }
    }
}
