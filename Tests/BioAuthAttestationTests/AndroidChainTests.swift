@testable import BioAuthAttestation
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

/// Issue 45 item 1: Android chains as Google's own verifier accepts them (android/keyattestation,
/// `KeyAttestationCertPathValidator`). Chains built here with a test root: each quirk a real
/// factory-provisioned phone shows verifies, and the same chain broken in one place does not.
@Suite
struct AndroidChainTests {
    static let start = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01
    static let end = Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01
    static let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09

    /// A certificate authority of the test: a name and a key.
    struct Signer {
        let name: DistinguishedName
        let key: P256.Signing.PrivateKey

        init(_ commonName: String) {
            key = P256.Signing.PrivateKey()
            name = try! DistinguishedName { CommonName(commonName) }
        }
    }

    /// A certificate for `subject`'s key, named `subject.name`, issued by `issuer`.
    static func certificate(
        _ subject: Signer, issuedBy issuer: Signer, issuerName: DistinguishedName? = nil, from: Date = start, until: Date = end,
        extensions: Certificate.Extensions = Certificate.Extensions()
    ) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(subject.key.publicKey), notValidBefore: from, notValidAfter: until,
            issuer: issuerName ?? issuer.name, subject: subject.name, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: .init(issuer.key))
    }

    static let attestation = Certificate.Extension(oid: KeyDescription.oid, critical: false, value: [0x30, 0x00])

    let root = Signer("Test Attestation Root")
    let batch = Signer("Test OEM Batch")
    let key = Signer("Android Keystore Key")

    /// Root (a CA) → an OEM batch certificate marked `CA:FALSE` with `digitalSignature` only, as
    /// many factory-provisioned phones carry → the key's leaf with the attestation extension.
    func factoryChain(
        batchFrom: Date = start, batchUntil: Date = end, leafUntil: Date = end, batchExtension: Bool = false, leafSigner: Signer? = nil,
        leafIssuerName: DistinguishedName? = nil
    ) throws -> (chain: [Certificate], root: Certificate) {
        let rootCertificate = try Self.certificate(
            root, issuedBy: root,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            })
        var batchExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
        }
        if batchExtension { try batchExtensions.append(Self.attestation) }
        let batchCertificate = try Self.certificate(batch, issuedBy: root, from: batchFrom, until: batchUntil, extensions: batchExtensions)
        let leaf = try Self.certificate(
            key, issuedBy: leafSigner ?? batch, issuerName: leafIssuerName ?? batch.name, until: leafUntil,
            extensions: try Certificate.Extensions([Self.attestation]))
        return ([leaf, batchCertificate], rootCertificate)
    }

    func check(_ chain: [Certificate], roots: [Certificate], at time: Date = now) -> AttestationError.Check? {
        do {
            _ = try CertificateChain.verifyKeyAttestationPath(chain, roots: roots, at: time)
            return nil
        } catch { return error.check }
    }

    @Test func aBatchCertificateThatIsNoCAVerifiesAsGooglesVerifierAcceptsIt() async throws {
        let (chain, rootCertificate) = try factoryChain()
        #expect(check(chain, roots: [rootCertificate]) == nil)
        #expect(check(chain + [rootCertificate], roots: [rootCertificate]) == nil, "with the root sent along")
        // RFC 5280 refuses the same chain: the relaxation is what makes such phones enrol.
        await #expect(throws: AttestationError.self) {
            _ = try await CertificateChain.verify(chain, roots: [rootCertificate], at: Self.now)
        }
    }

    @Test func theLeafsOwnDatesDoNotMatterButEveryOtherCertificatesDo() throws {
        let expiredLeaf = try factoryChain(leafUntil: Self.now.addingTimeInterval(-86_400))
        #expect(check(expiredLeaf.chain, roots: [expiredLeaf.root]) == nil, "the device sets the leaf's dates")
        let expiredBatch = try factoryChain(batchUntil: Self.now.addingTimeInterval(-86_400))
        #expect(check(expiredBatch.chain, roots: [expiredBatch.root]) == .certificateChain)
        let futureBatch = try factoryChain(batchFrom: Self.now.addingTimeInterval(86_400))
        #expect(check(futureBatch.chain, roots: [futureBatch.root]) == .certificateChain)
    }

    @Test func aChainBrokenInOnePlaceIsRefused() throws {
        let stranger = Signer("Test OEM Batch")  // the batch's name, another key
        let forged = try factoryChain(leafSigner: stranger)
        #expect(check(forged.chain, roots: [forged.root]) == .certificateChain, "a signature the batch key did not make")
        let misnamed = try factoryChain(leafIssuerName: try DistinguishedName { CommonName("Another Batch") })
        #expect(check(misnamed.chain, roots: [misnamed.root]) == .certificateChain, "broken name chaining")
        let good = try factoryChain()
        let impostor = Signer("Test Attestation Root")
        let otherRoot = try Self.certificate(
            impostor, issuedBy: impostor,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) })
        #expect(check(good.chain, roots: [otherRoot]) == .certificateChain, "a root with the right name and another key")
        #expect(check([good.chain[0]], roots: [good.root]) == .certificateChain, "the batch certificate missing")
        #expect(check(Array(good.chain.reversed()), roots: [good.root]) == .certificateChain, "the wrong order")
    }

    /// A leaf with the key description twice (which one would the verifier read?) is refused when
    /// it is parsed: RFC 5280 §4.2 allows each extension once, and swift-certificates holds to it.
    @Test func aLeafWithTwoKeyDescriptionsIsRefused() async throws {
        let (chain, rootCertificate) = try factoryChain()
        let sibling = ASN1ObjectIdentifier(arrayLiteral: 1, 3, 6, 1, 4, 1, 11129, 2, 1, 18)  // same length, last arc differs
        let leaf = try Self.certificate(
            key, issuedBy: batch,
            extensions: try Certificate.Extensions([
                Self.attestation, Certificate.Extension(oid: sibling, critical: false, value: [0x30, 0x00]),
            ]))
        var serializer = DER.Serializer()
        try serializer.serialize(leaf)
        var der = Data(serializer.serializedBytes)
        var encoded = DER.Serializer()
        try encoded.serialize(sibling)
        var attestationOID = DER.Serializer()
        try attestationOID.serialize(KeyDescription.oid)
        let range = try #require(der.range(of: Data(encoded.serializedBytes)))
        der.replaceSubrange(range, with: attestationOID.serializedBytes)
        var batchDER = DER.Serializer()
        try batchDER.serialize(chain[1])
        do {
            _ = try await AndroidKeyAttestationVerifier.decode(
                chain: [der, Data(batchDER.serializedBytes)], roots: [rootCertificate], at: Self.now)
            Issue.record("a leaf with two key descriptions was accepted")
        } catch { #expect(error.check == .malformed, "\(error)") }
    }

    @Test func anAttestationExtensionOutsideTheLeafIsRefused() async throws {
        let (chain, rootCertificate) = try factoryChain(batchExtension: true)
        let ders = try chain.map { certificate in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes)
        }
        await #expect(throws: AttestationError.self) {
            _ = try await AndroidKeyAttestationVerifier.decode(chain: ders, roots: [rootCertificate], at: Self.now)
        }
    }
}
