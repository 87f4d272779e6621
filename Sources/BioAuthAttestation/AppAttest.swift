import BioAuthCore
import Crypto
import Foundation
import SwiftASN1
import X509

/// Apple App Attest, verified as "Validating apps that connect to your server"
/// (developer.apple.com/documentation/devicecheck/validating-apps-that-connect-to-your-server) says.
public enum AppAttest {
    /// An app as App Attest names it: `TEAMID.bundle.identifier`.
    public struct AppID: Sendable, Hashable, CustomStringConvertible {
        public let teamID: String
        public let bundleID: String

        public init(teamID: String, bundleID: String) throws(AttestationError) {
            let isTeamID = teamID.count == 10 && teamID.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) }
            guard isTeamID, !bundleID.isEmpty, bundleID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") })
            else {
                throw AttestationError(.appIdentifier, "an app id is a 10-character team id, a dot and a bundle id")
            }
            self.teamID = teamID
            self.bundleID = bundleID
        }

        /// Parses `TEAMID.bundle.identifier`.
        public init(_ appID: String) throws(AttestationError) {
            guard let dot = appID.firstIndex(of: ".") else {
                throw AttestationError(.appIdentifier, "an app id is TEAMID.bundle.identifier")
            }
            try self.init(teamID: String(appID[..<dot]), bundleID: String(appID[appID.index(after: dot)...]))
        }

        public var description: String { "\(teamID).\(bundleID)" }
        /// SHA-256 of the app id: the relying-party id hash of every attestation and assertion.
        public var relyingPartyIDHash: Data { Data(SHA256.hash(data: Data(description.utf8))) }
    }

    /// Where the attested key was made: `DCAppAttestService` in a development build uses Apple's
    /// development servers, an App Store or TestFlight build the production ones.
    public enum Environment: String, Sendable, Hashable, CaseIterable, Codable {
        case development, production

        /// The aaguid of the authenticator data: `appattestdevelop` or `appattest` followed by seven zero bytes.
        public var aaguid: Data {
            switch self {
            case .development: Data("appattestdevelop".utf8)
            case .production: Data("appattest".utf8) + Data(repeating: 0, count: 7)
            }
        }
    }

    /// The leaf extension that carries the nonce (a SEQUENCE holding `[1] OCTET STRING`).
    static let nonceExtension: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]
}

/// A key App Attest proved: made in the Secure Enclave by the app `appID`.
public struct AppAttestKey: Sendable, Hashable, CustomStringConvertible {
    /// SHA-256 of the public key; what `DCAppAttestService` calls the key identifier.
    public let keyID: Data
    public let publicKey: DevicePublicKey
    public let appID: AppAttest.AppID
    public let environment: AppAttest.Environment
    /// The last counter seen: 0 after the attestation, then each assertion's.
    public let counter: UInt32
    /// Apple's signed receipt, for the fraud-metric service; kept, not interpreted.
    public let receipt: Data

    public init(
        keyID: Data, publicKey: DevicePublicKey, appID: AppAttest.AppID, environment: AppAttest.Environment, counter: UInt32, receipt: Data
    ) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.appID = appID
        self.environment = environment
        self.counter = counter
        self.receipt = receipt
    }

    public var description: String { "AppAttestKey(\(appID), \(environment), key \(publicKey.fingerprint), counter \(counter))" }
}

/// Checks App Attest attestations and assertions for a deployment's apps and environments.
public struct AppAttestVerifier: Sendable, Hashable {
    public var appIDs: Set<AppAttest.AppID>
    public var environments: Set<AppAttest.Environment>
    public var roots: [Certificate]

    /// A production deployment accepts production keys only; add `.development` for development builds.
    public init(
        appIDs: Set<AppAttest.AppID>, environments: Set<AppAttest.Environment> = [.production],
        roots: [Certificate] = [TrustAnchors.appleAppAttestationRoot]
    ) {
        self.appIDs = appIDs
        self.environments = environments
        self.roots = roots
    }

    /// The attestation object `DCAppAttestService.attestKey(_:clientDataHash:)` returned, checked at `time`.
    public func verifyAttestation(_ object: Data, keyID: Data, clientDataHash: Data, at time: Date) async throws(AttestationError)
        -> AppAttestKey
    {
        let decoded: CBOR
        do { decoded = try CBOR(decoding: object) } catch {
            throw AttestationError(.malformed, "the attestation object is not CBOR (\(error.code))")
        }
        guard decoded["fmt"]?.textValue == "apple-appattest" else {
            throw AttestationError(.format, "the attestation format is not apple-appattest")
        }
        guard let statement = decoded["attStmt"], let x5c = statement["x5c"]?.arrayValue,
            let authenticatorData = decoded["authData"]?.bytesValue
        else {
            throw AttestationError(.malformed, "the attestation object lacks attStmt.x5c or authData")
        }
        var ders: [Data] = []
        for item in x5c {
            guard let der = item.bytesValue else { throw AttestationError(.malformed, "x5c holds something other than certificates") }
            ders.append(der)
        }
        let receipt = statement["receipt"]?.bytesValue ?? Data()
        guard clientDataHash.count == 32 else { throw AttestationError(.malformed, "the client data hash is not 32 bytes") }
        // 1. The chain leads to the App Attestation root.
        let leaf = try await CertificateChain.verify(try CertificateChain.parse(ders), roots: roots, at: time)
        // 2–4. The leaf's nonce is SHA-256(authenticatorData ‖ clientDataHash).
        let nonce = Data(SHA256.hash(data: authenticatorData + clientDataHash))
        guard try Self.nonce(in: leaf) == nonce else {
            throw AttestationError(.nonce, "the certificate's nonce is not SHA-256(authenticatorData ‖ clientDataHash)")
        }
        // 5. The key id is SHA-256 of the leaf's public key.
        guard let p256 = P256.Signing.PublicKey(leaf.publicKey) else {
            throw AttestationError(.publicKey, "the attested key is not a P-256 key")
        }
        let publicKey = DevicePublicKey(p256)
        guard Data(SHA256.hash(data: publicKey.x963Representation)) == keyID else {
            throw AttestationError(.keyIdentifier, "the key id is not SHA-256 of the attested public key")
        }
        let data = try AuthenticatorData(authenticatorData, attested: true)
        // 6. The relying party is one of our apps.
        guard let appID = appIDs.first(where: { $0.relyingPartyIDHash == data.relyingPartyIDHash }) else {
            throw AttestationError(.appIdentifier, "the attestation is for an app this server does not accept")
        }
        // 7. A fresh key's counter is 0.
        guard data.counter == 0 else { throw AttestationError(.counter, "an attestation's counter is not 0") }
        // 8. The environment is one the deployment accepts.
        guard let environment = AppAttest.Environment.allCases.first(where: { $0.aaguid == data.aaguid }),
            environments.contains(environment)
        else {
            throw AttestationError(.environment, "the attestation's environment is not one this server accepts")
        }
        // 9. The credential id is the key id.
        guard data.credentialID == keyID else { throw AttestationError(.credentialIdentifier, "the credential id is not the key id") }
        return AppAttestKey(keyID: keyID, publicKey: publicKey, appID: appID, environment: environment, counter: 0, receipt: receipt)
    }

    /// An assertion `DCAppAttestService.generateAssertion(_:clientDataHash:)` made over SHA-256(`clientData`)
    /// with `key`. Returns the key with the assertion's counter, which must be above `key.counter`;
    /// the caller stores it in the same transaction as what the assertion authorises.
    public func verifyAssertion(_ object: Data, clientData: Data, key: AppAttestKey) throws(AttestationError) -> AppAttestKey {
        let decoded: CBOR
        do { decoded = try CBOR(decoding: object) } catch {
            throw AttestationError(.malformed, "the assertion is not CBOR (\(error.code))")
        }
        guard let signature = decoded["signature"]?.bytesValue, let authenticatorData = decoded["authenticatorData"]?.bytesValue else {
            throw AttestationError(.malformed, "the assertion lacks signature or authenticatorData")
        }
        let data = try AuthenticatorData(authenticatorData, attested: false)
        // The signature is ECDSA-SHA256 over nonce = SHA-256(authenticatorData ‖ SHA-256(clientData)).
        let nonce = Data(SHA256.hash(data: authenticatorData + Data(SHA256.hash(data: clientData))))
        guard key.publicKey.isValidSignature(der: signature, for: nonce) else {
            throw AttestationError(.signature, "the assertion's signature does not verify with the attested key")
        }
        guard data.relyingPartyIDHash == key.appID.relyingPartyIDHash, appIDs.contains(key.appID) else {
            throw AttestationError(.appIdentifier, "the assertion is for an app this server does not accept")
        }
        guard data.counter > key.counter else { throw AttestationError(.counter, "the assertion's counter is not above the last one") }
        return AppAttestKey(
            keyID: key.keyID, publicKey: key.publicKey, appID: key.appID, environment: key.environment, counter: data.counter,
            receipt: key.receipt)
    }

    static func nonce(in leaf: Certificate) throws(AttestationError) -> Data {
        // swift-certificates refuses a certificate that names an extension twice.
        guard let value = leaf.extensions[oid: AppAttest.nonceExtension]?.value else {
            throw AttestationError(.nonce, "the certificate carries no nonce")
        }
        do {
            let node = try DER.parse(value)
            return try DER.sequence(node, identifier: .sequence) { nodes in
                let octets = try DER.explicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) {
                    try ASN1OctetString(derEncoded: $0)
                }
                return Data(octets.bytes)
            }
        } catch {
            throw AttestationError(.malformed, "the nonce extension is not SEQUENCE { [1] OCTET STRING }")
        }
    }
}

/// WebAuthn authenticator data as App Attest fills it.
struct AuthenticatorData {
    let relyingPartyIDHash: Data
    let counter: UInt32
    let aaguid: Data
    let credentialID: Data

    /// An attestation's data carries the attested credential (aaguid, id, COSE key); an assertion's is 37 bytes.
    init(_ bytes: Data, attested: Bool) throws(AttestationError) {
        let bytes = [UInt8](bytes)
        guard bytes.count >= 37 else { throw AttestationError(.malformed, "authenticator data is shorter than 37 bytes") }
        relyingPartyIDHash = Data(bytes[0..<32])
        counter = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        guard attested else {
            guard bytes.count == 37 else { throw AttestationError(.malformed, "an assertion's authenticator data is not 37 bytes") }
            aaguid = Data()
            credentialID = Data()
            return
        }
        guard bytes[32] & 0x40 != 0, bytes.count >= 55 else {
            throw AttestationError(.malformed, "authenticator data carries no attested credential")
        }
        aaguid = Data(bytes[37..<53])
        let length = Int(bytes[53]) << 8 | Int(bytes[54])
        guard bytes.count >= 55 + length else { throw AttestationError(.malformed, "the credential id is truncated") }
        credentialID = Data(bytes[55..<(55 + length)])
        // The COSE key follows; the key that counts is the certificate's, so it is only checked to be CBOR that fills the rest.
        let used: Int
        do { used = try CBOR.decodePrefix(bytes[(55 + length)...]).length } catch {
            throw AttestationError(.malformed, "the credential public key is not CBOR")
        }
        guard 55 + length + used == bytes.count else { throw AttestationError(.malformed, "bytes follow the credential public key") }
    }
}
