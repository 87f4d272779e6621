import BioAuthAttestation
import BioAuthCore
import Foundation

/// What an enrolment's attestation proved about a device key, stored with the device and shown in
/// its device list. A device without one enrolled unattested: nothing was proven about where its
/// key lives or which app made it.
public struct DeviceAttestation: Sendable, Hashable, Codable {
    /// How the key was attested.
    public enum Format: String, Sendable, Hashable, Codable, CaseIterable {
        /// Apple App Attest: the genuine app, whose attested key vouched for the enrolled key.
        case appleAppAttest = "apple-appattest"
        /// Android Key Attestation: the enrolled key itself, described by the secure hardware.
        case androidKey = "android-key"
    }

    /// Where the attested key lives.
    public enum SecurityLevel: String, Sendable, Hashable, Codable, CaseIterable {
        /// An Apple device's Secure Enclave (App Attest keys always are).
        case secureEnclave
        /// An Android Trusted Execution Environment.
        case trustedEnvironment
        /// An Android StrongBox secure element.
        case strongBox
    }

    public var format: Format
    public var securityLevel: SecurityLevel
    /// The app: `TEAMID.bundle` (App Attest) or the Android package name.
    public var appID: String
    /// App Attest only: `development` or `production`.
    public var environment: String?
    public var verifiedAt: Date
    /// App Attest only: the app's attested key, for assertions later (`docs/Attestation.md`).
    public var appAttestKey: StoredAppAttestKey?

    public init(
        format: Format, securityLevel: SecurityLevel, appID: String, environment: String? = nil, verifiedAt: Date,
        appAttestKey: StoredAppAttestKey? = nil
    ) {
        self.format = format
        self.securityLevel = securityLevel
        self.appID = appID
        self.environment = environment
        self.verifiedAt = verifiedAt
        self.appAttestKey = appAttestKey
    }

    /// What a verified App Attest attestation proves.
    public init(_ key: AppAttestKey, at time: Date) {
        self.init(
            format: .appleAppAttest, securityLevel: .secureEnclave, appID: key.appID.description, environment: key.environment.rawValue,
            verifiedAt: time,
            appAttestKey: StoredAppAttestKey(key))
    }

    /// What a verified Android key attestation proves.
    public init(_ key: AndroidAttestedKey, at time: Date) {
        self.init(
            format: .androidKey, securityLevel: key.securityLevel == .strongBox ? .strongBox : .trustedEnvironment, appID: key.packageName,
            verifiedAt: time)
    }

    /// The App Attest key this attestation proved, to verify the device's assertions with; nil
    /// for another format, and for a stored key that no longer parses.
    package var attestedAppKey: AppAttestKey? {
        guard let stored = appAttestKey, let environment = environment.flatMap(AppAttest.Environment.init(rawValue:)),
            let app = try? AppAttest.AppID(appID), let key = try? DevicePublicKey(x963Representation: stored.publicKey)
        else { return nil }
        return AppAttestKey(
            keyID: stored.keyID, publicKey: key, appID: app, environment: environment, counter: stored.counter, receipt: stored.receipt)
    }

    /// This attestation with its App Attest key's counter at `key`'s: what an accepted assertion stores.
    package func advanced(to key: AppAttestKey) -> DeviceAttestation {
        var advanced = self
        advanced.appAttestKey?.counter = key.counter
        return advanced
    }

    /// The stored column: JSON, binary values base64.
    package var stored: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .secondsSince1970
        // Encoding plain strings, numbers and data cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// Decodes the `devices.attestation` column; nil for a device enrolled unattested.
    package init?(stored: String?) throws(StoreError) {
        guard let stored else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        do { self = try decoder.decode(DeviceAttestation.self, from: Data(stored.utf8)) } catch {
            throw StoreError(.corruptRow, detail: "devices.attestation")
        }
    }
}

/// An App Attest key as stored: enough to verify its assertions (`AppAttestVerifier.verifyAssertion(_:clientData:key:)`).
public struct StoredAppAttestKey: Sendable, Hashable, Codable {
    /// SHA-256 of the key's X9.63 point.
    public var keyID: Data
    /// The X9.63 point (65 bytes).
    public var publicKey: Data
    /// The counter of the last assertion accepted (0 after attestation).
    public var counter: UInt32
    /// Apple's receipt, for the fraud-risk metric (`DCAppAttestService` documentation).
    public var receipt: Data

    public init(keyID: Data, publicKey: Data, counter: UInt32, receipt: Data) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.counter = counter
        self.receipt = receipt
    }

    public init(_ key: AppAttestKey) {
        self.init(keyID: key.keyID, publicKey: key.publicKey.x963Representation, counter: key.counter, receipt: key.receipt)
    }
}
