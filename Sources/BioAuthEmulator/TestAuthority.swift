import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority for emulated attestation: a P-384 root and an intermediate that signs
/// leaves, valid 2020–2100, made fresh (new keys) for each instance. Only a verifier told to trust
/// its ``root`` accepts what it signs.
struct TestAuthority: Sendable {
    let root: Certificate
    let intermediate: Certificate
    let intermediateKey: P384.Signing.PrivateKey

    /// An authority whose certificates are named "`name` Root CA" and "`name` CA 1".
    init(name: String) {
        let rootKey = P384.Signing.PrivateKey()
        let intermediateKey = P384.Signing.PrivateKey()
        let start = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01
        let end = Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01
        do {
            let rootName = try DistinguishedName {
                CommonName("\(name) Root CA")
                OrganizationName("BioAuth tests")
            }
            let intermediateName = try DistinguishedName {
                CommonName("\(name) CA 1")
                OrganizationName("BioAuth tests")
            }
            let caExtensions = try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }
            root = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: start, notValidAfter: end,
                issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA384, extensions: caExtensions,
                issuerPrivateKey: .init(rootKey))
            intermediate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: start, notValidAfter: end,
                issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA384, extensions: caExtensions,
                issuerPrivateKey: .init(rootKey))
            self.intermediateKey = intermediateKey
        } catch {
            // Fixed names and fresh keys: building these certificates cannot fail.
            fatalError("the emulated certificate authority could not be built: \(error)")
        }
    }

    /// A leaf for `publicKey` signed by the intermediate, valid from a minute before `time` for three days.
    func leaf(for publicKey: P256.Signing.PublicKey, subject: String, at time: Date, extension: Certificate.Extension) throws -> Certificate
    {
        try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(publicKey), notValidBefore: time.addingTimeInterval(-60),
            notValidAfter: time.addingTimeInterval(3 * 86_400),
            issuer: intermediate.subject, subject: try DistinguishedName { CommonName(subject) }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                `extension`
            },
            issuerPrivateKey: .init(intermediateKey))
    }

    static func der(_ certificate: Certificate) throws -> Data {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes)
    }
}
