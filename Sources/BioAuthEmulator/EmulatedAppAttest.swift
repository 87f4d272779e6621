import BioAuth
import BioAuthAttestation
import BioAuthCore
import Crypto
import Foundation
import SwiftASN1
import Synchronization
import X509

/// `DCAppAttestService`, emulated: keys made "in the Secure Enclave" of this emulated device, attested
/// by a test certificate authority shaped like Apple's (a P-384 root and intermediate, a leaf that
/// carries the nonce in extension 1.2.840.113635.100.8.2), and assertions with a counter.
///
/// A server trusts these attestations only when told to (`AppAttestVerifier(roots: [EmulatedAppAttest.testRoot])`);
/// Apple's root never vouches for them. The attack scripts make what an attacker can make: an app
/// re-signed by another team, a replayed assertion, a software key with a chain of its own.
/// Behaviour follows "Establishing your app's integrity" and "Validating apps that connect to your server"
/// (developer.apple.com/documentation/devicecheck).
public final class EmulatedAppAttest: Sendable {
    /// What `DCAppAttestService` throws (`DCError.Code`), as far as the emulation produces it.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public let code: String
        public var description: String { "DCError.\(code)" }
        /// `isSupported` is false: Simulator, a Mac without App Attest, an old OS.
        public static let featureUnsupported = Failure(code: "featureUnsupported")
        /// The key id is not one this service made (or it was already attested).
        public static let invalidKey = Failure(code: "invalidKey")
        public static let invalidInput = Failure(code: "invalidInput")
    }

    /// The test root every emulated service's attestations chain to (made once per process).
    public static var testRoot: Certificate { authority.root }

    /// Whether App Attest is available, as `DCAppAttestService.isSupported` says.
    public let isSupported: Bool
    public let appID: AppAttest.AppID
    public let environment: AppAttest.Environment
    /// When attestations are made: give it the test server's clock.
    public let clock: any WallClock

    private struct Key {
        let privateKey: P256.Signing.PrivateKey
        var counter: UInt32 = 0
        var attested = false
    }
    private let keys = Mutex<[Data: Key]>([:])

    public init(
        appID: AppAttest.AppID, environment: AppAttest.Environment = .development, isSupported: Bool = true,
        clock: any WallClock = SystemWallClock()
    ) {
        self.clock = clock
        self.appID = appID
        self.environment = environment
        self.isSupported = isSupported
    }

    /// `generateKey()`: a new key; returns its id (SHA-256 of the public key), which the app stores.
    public func generateKey() throws(Failure) -> Data {
        guard isSupported else { throw .featureUnsupported }
        let key = P256.Signing.PrivateKey()
        let keyID = Data(SHA256.hash(data: key.publicKey.x963Representation))
        keys.withLock { $0[keyID] = Key(privateKey: key) }
        return keyID
    }

    /// The app deleted and installed again: every App Attest key is gone, as App Attest keys do not
    /// survive a reinstall ("Establishing your app's integrity",
    /// developer.apple.com/documentation/devicecheck/establishing-your-app-s-integrity). A key id
    /// the app kept (in the keychain, which stays) now gets ``Failure/invalidKey``.
    public func reinstall() {
        keys.withLock { $0.removeAll() }
    }

    /// `attestKey(_:clientDataHash:)`: the attestation object for a key, once per key.
    public func attestKey(_ keyID: Data, clientDataHash: Data, at time: Date? = nil) throws(Failure) -> Data {
        guard isSupported else { throw .featureUnsupported }
        guard clientDataHash.count == 32 else { throw .invalidInput }
        let key: P256.Signing.PrivateKey? = keys.withLock { keys in
            guard var key = keys[keyID], !key.attested else { return nil }
            key.attested = true
            keys[keyID] = key
            return key.privateKey
        }
        guard let key else { throw .invalidKey }
        return Self.attestation(
            for: key.publicKey, appID: appID, environment: environment, clientDataHash: clientDataHash, authority: Self.authority,
            at: time ?? clock.now())
    }

    /// `generateAssertion(_:clientDataHash:)`: signs SHA-256(authenticatorData ‖ clientDataHash) with the
    /// attested key; each assertion's counter is one above the last.
    public func generateAssertion(_ keyID: Data, clientDataHash: Data) throws(Failure) -> Data {
        guard isSupported else { throw .featureUnsupported }
        guard clientDataHash.count == 32 else { throw .invalidInput }
        let signed: (P256.Signing.PrivateKey, UInt32)? = keys.withLock { keys in
            guard var key = keys[keyID], key.attested else { return nil }
            key.counter += 1
            keys[keyID] = key
            return (key.privateKey, key.counter)
        }
        guard let (key, counter) = signed else { throw .invalidKey }
        let authenticatorData = appID.relyingPartyIDHash + Data([0x00]) + Self.bigEndian(counter)
        let nonce = Data(SHA256.hash(data: authenticatorData + clientDataHash))
        // The signature's message is the nonce (ECDSA hashes it again), as Apple's validation guide says.
        guard let signature = try? key.signature(for: nonce) else { throw .invalidInput }
        return CBOR.map([
            (.text("signature"), .bytes(signature.derRepresentation)), (.text("authenticatorData"), .bytes(authenticatorData)),
        ]).encoded
    }

    // MARK: Attack scripts

    /// What an attacker with a software key can send: a well-formed attestation for `publicKey`, under a
    /// root of the attacker's own (only Apple's root, or in tests ``testRoot``, is trusted).
    public static func forgedAttestation(
        for publicKey: P256.Signing.PublicKey, appID: AppAttest.AppID, environment: AppAttest.Environment, clientDataHash: Data,
        at time: Date = Date()
    ) -> Data {
        attestation(
            for: publicKey, appID: appID, environment: environment, clientDataHash: clientDataHash,
            authority: TestAuthority(name: "Attacker App Attestation"), at: time)
    }

    // MARK: The test authority

    static let authority = TestAuthority(name: "BioAuth Emulated App Attestation")

    /// An attestation under the test root whose `counter` or `credentialID` is not a fresh key's (0,
    /// the key id): what only a broken App Attest would sign, for the verifier's steps 7 and 9.
    package static func irregularAttestation(
        for publicKey: P256.Signing.PublicKey, appID: AppAttest.AppID, clientDataHash: Data, at time: Date, counter: UInt32 = 0,
        credentialID: Data? = nil
    ) -> Data {
        attestation(
            for: publicKey, appID: appID, environment: .development, clientDataHash: clientDataHash, authority: authority, at: time,
            counter: counter,
            credentialID: credentialID)
    }

    static func attestation(
        for publicKey: P256.Signing.PublicKey, appID: AppAttest.AppID, environment: AppAttest.Environment, clientDataHash: Data,
        authority: TestAuthority,
        at time: Date, counter: UInt32 = 0, credentialID: Data? = nil
    ) -> Data {
        let keyID = Data(SHA256.hash(data: publicKey.x963Representation))
        let credential = credentialID ?? keyID
        // authenticatorData: rpIdHash, flags (attested credential data), counter 0, aaguid, credential id, COSE key.
        let x = publicKey.x963Representation.dropFirst().prefix(32)
        let y = publicKey.x963Representation.suffix(32)
        let coseKey = CBOR.map([
            (.unsigned(1), .unsigned(2)), (.unsigned(3), .negative(6)), (.negative(0), .unsigned(1)), (.negative(1), .bytes(x)),
            (.negative(2), .bytes(y)),
        ])
        var authenticatorData = appID.relyingPartyIDHash + Data([0x40]) + bigEndian(counter) + environment.aaguid
        authenticatorData += Data([UInt8(credential.count >> 8), UInt8(credential.count & 0xFF)]) + credential + coseKey.encoded
        let nonce = Data(SHA256.hash(data: authenticatorData + clientDataHash))
        do {
            var serializer = DER.Serializer()
            try serializer.appendConstructedNode(identifier: .sequence) { sequence in
                try sequence.serialize(
                    ASN1OctetString(contentBytes: ArraySlice(nonce)), explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific)
            }
            let leaf = try authority.leaf(
                for: publicKey, subject: keyID.map { String(format: "%02x", $0) }.joined(), at: time,
                extension: Certificate.Extension(
                    oid: [1, 2, 840, 113635, 100, 8, 2], critical: false, value: ArraySlice(serializer.serializedBytes)))
            let statement = CBOR.map([
                (.text("x5c"), .array([.bytes(try TestAuthority.der(leaf)), .bytes(try TestAuthority.der(authority.intermediate))])),
                (.text("receipt"), .bytes(Data("emulated receipt".utf8))),
            ])
            return CBOR.map([
                (.text("fmt"), .text("apple-appattest")), (.text("attStmt"), statement), (.text("authData"), .bytes(authenticatorData)),
            ]).encoded
        } catch {
            fatalError("the emulated attestation could not be built: \(error)")
        }
    }

    static func bigEndian(_ value: UInt32) -> Data { Data((0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }) }
}

/// The emulated service behind the ``DevicePlatform`` seam, as `BioAuthApple` puts `DCAppAttestService` there.
struct EmulatedAppAttestService: AppAttestService {
    let service: EmulatedAppAttest

    var isSupported: Bool { service.isSupported }

    func generateKey() async throws(AppAttestFailure) -> Data {
        do { return try service.generateKey() } catch { throw Self.failure(error) }
    }

    func attestKey(_ keyID: Data, clientDataHash: Data) async throws(AppAttestFailure) -> Data {
        do { return try service.attestKey(keyID, clientDataHash: clientDataHash) } catch { throw Self.failure(error) }
    }

    func generateAssertion(_ keyID: Data, clientDataHash: Data) async throws(AppAttestFailure) -> Data {
        do { return try service.generateAssertion(keyID, clientDataHash: clientDataHash) } catch { throw Self.failure(error) }
    }

    static func failure(_ error: EmulatedAppAttest.Failure) -> AppAttestFailure {
        switch error {
        case .featureUnsupported: .featureUnsupported
        case .invalidKey: .invalidKey
        case .invalidInput: .invalidInput
        default: .unknownSystemFailure
        }
    }
}
