import BioAuthAttestation
import BioAuthCore
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509
import _CryptoExtras

/// `packed` statements with an attestation certificate made here: a vendor's root and its
/// attestation certificate (ES256 or RS256), signing a software credential's registration.
struct PackedCertificateTests {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    static let party = WebAuthnRelyingParty(id: "localhost", origins: ["http://localhost:5000"])
    static let challenge = Data((0..<32).map { UInt8($0) })
    static let clientData = Data(
        #"{"type":"webauthn.create","challenge":"\#(Base64URL.encode(challenge))","origin":"http://localhost:5000"}"#.utf8)

    /// The vendor's root (a CA) and an attestation certificate for `key` with §8.2.1's subject.
    static func chain(for key: Certificate.PublicKey, vendor: P256.Signing.PrivateKey) throws -> (leaf: Certificate, root: Certificate) {
        let rootName = try DistinguishedName { CommonName("Test Vendor Root") }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(vendor.publicKey), notValidBefore: start,
            notValidAfter: start.addingTimeInterval(86_400 * 365), issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) },
            issuerPrivateKey: .init(vendor))
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: key, notValidBefore: start, notValidAfter: start.addingTimeInterval(86_400),
            issuer: rootName,
            subject: try DistinguishedName {
                CountryName("SE")
                OrganizationName("Test Vendor")
                OrganizationalUnitName("Authenticator Attestation")
                CommonName("Test Authenticator")
            }, signatureAlgorithm: .ecdsaWithSHA256, extensions: Certificate.Extensions(), issuerPrivateKey: .init(vendor))
        return (leaf, root)
    }

    /// A registration of a new P-256 credential, its statement signed by `sign` with `alg`.
    static func registration(alg: Int, leaf: Certificate, sign: (Data) throws -> Data) throws -> Data {
        let credential = P256.Signing.PrivateKey().publicKey.x963Representation
        let cose = CBOR.map([
            (.unsigned(1), .unsigned(2)), (.unsigned(3), .negative(6)), (.negative(0), .unsigned(1)),
            (.negative(1), .bytes(credential[1..<33])), (.negative(2), .bytes(credential[33...])),
        ]).encoded
        let authData =
            Data(SHA256.hash(data: Data("localhost".utf8))) + Data([0x45, 0, 0, 0, 0]) + Data(count: 16) + Data([0, 2, 9, 9]) + cose
        var der = DER.Serializer()
        try der.serialize(leaf)
        let signature = try sign(authData + Data(SHA256.hash(data: clientData)))
        let statement = CBOR.map([
            (.text("alg"), alg < 0 ? .negative(UInt64(-1 - alg)) : .unsigned(UInt64(alg))), (.text("sig"), .bytes(signature)),
            (.text("x5c"), .array([.bytes(Data(der.serializedBytes))])),
        ])
        return CBOR.map([(.text("fmt"), .text("packed")), (.text("attStmt"), statement), (.text("authData"), .bytes(authData))]).encoded
    }

    @Test func anRS256CertificateVerifiesAndAVendorRootAnchorsIt() async throws {
        let vendor = P256.Signing.PrivateKey()
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let (leaf, root) = try Self.chain(for: .init(rsa.publicKey), vendor: vendor)
        let object = try Self.registration(alg: -257, leaf: leaf) {
            try rsa.signature(for: $0, padding: .insecurePKCS1v1_5).rawRepresentation
        }
        let time = Self.start.addingTimeInterval(60)
        let unanchored = try await Self.party.verifyRegistration(
            clientDataJSON: Self.clientData, attestationObject: object, challenge: Self.challenge, at: time)
        #expect(unanchored.attestation == .unanchored && unanchored.attestationCertificates == [leaf])

        var vendorParty = Self.party
        vendorParty.attestationRoots.packed = [root]
        let anchored = try await vendorParty.verifyRegistration(
            clientDataJSON: Self.clientData, attestationObject: object, challenge: Self.challenge, at: time)
        #expect(anchored.attestation == .anchored)
        vendorParty.attestationRoots.packed = [try Self.chain(for: .init(rsa.publicKey), vendor: P256.Signing.PrivateKey()).root]
        await #expect(throws: WebAuthnError.self) {
            try await vendorParty.verifyRegistration(
                clientDataJSON: Self.clientData, attestationObject: object, challenge: Self.challenge, at: time)
        }

        // The statement's alg must be the certificate key's: an RSA certificate does not sign ES256.
        let wrongAlg = try Self.registration(alg: -7, leaf: leaf) {
            try rsa.signature(for: $0, padding: .insecurePKCS1v1_5).rawRepresentation
        }
        do {
            _ = try await Self.party.verifyRegistration(
                clientDataJSON: Self.clientData, attestationObject: wrongAlg, challenge: Self.challenge, at: time)
            Issue.record("an ES256 alg over an RSA certificate verified")
        } catch { #expect(error.check == .algorithm) }
    }

    @Test func anES256CertificateVerifies() async throws {
        let vendor = P256.Signing.PrivateKey()
        let attestationKey = P256.Signing.PrivateKey()
        let (leaf, _) = try Self.chain(for: .init(attestationKey.publicKey), vendor: vendor)
        let object = try Self.registration(alg: -7, leaf: leaf) { try attestationKey.signature(for: $0).derRepresentation }
        let verified = try await Self.party.verifyRegistration(
            clientDataJSON: Self.clientData, attestationObject: object, challenge: Self.challenge, at: Self.start.addingTimeInterval(60))
        #expect(verified.format == "packed" && verified.attestation == .unanchored)
    }
}
