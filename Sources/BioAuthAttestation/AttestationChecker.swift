import BioAuthCore
import Crypto
import Foundation
import X509

/// android/keyattestation's decoded expectation of a chain (numbers as strings, bytes base64).
package struct AndroidExpectation: Decodable, Sendable {
    package struct List: Decodable, Sendable {
        struct RootOfTrust: Decodable, Sendable {
            let verifiedBootKey: String
            let deviceLocked: Bool
            let verifiedBootState: String
            let verifiedBootHash: String?
        }
        struct ApplicationID: Decodable, Sendable {
            struct Package: Decodable, Sendable {
                let name: String
                let version: String
            }
            let packages: [Package]
            let signatures: [String]
        }
        let purposes: [String]?
        let algorithms: String?
        let keySize: String?
        let ecCurve: String?
        let noAuthRequired: Bool?
        let userAuthType: String?
        let authTimeout: String?
        let allowWhileOnBody: Bool?
        let unlockedDeviceRequired: Bool?
        let origin: String?
        let rootOfTrust: RootOfTrust?
        let osVersion: String?
        let osPatchLevel: String?
        let vendorPatchLevel: String?
        let bootPatchLevel: String?
        let creationDateTime: String?
        let attestationApplicationId: ApplicationID?
    }
    let attestationVersion: String
    package let attestationSecurityLevel: String
    let keyMintVersion: String
    let keyMintSecurityLevel: String
    let attestationChallenge: String
    let softwareEnforced: List?
    let hardwareEnforced: List?

    /// The fields where `decoded` differs from this expectation, by name.
    func mismatches(_ decoded: KeyDescription) -> [String] {
        var out: [String] = []
        func check(_ name: String, _ expected: String?, _ actual: String?) {
            if let expected, expected != actual { out.append(name) }
        }
        check("attestationVersion", attestationVersion, String(decoded.attestationVersion))
        check("attestationSecurityLevel", attestationSecurityLevel, decoded.attestationSecurityLevel.description)
        check("keyMintVersion", keyMintVersion, String(decoded.keyMintVersion))
        check("keyMintSecurityLevel", keyMintSecurityLevel, decoded.keyMintSecurityLevel.description)
        check("attestationChallenge", attestationChallenge, decoded.attestationChallenge.base64EncodedString())
        for (label, expected, actual) in [
            ("softwareEnforced", softwareEnforced, decoded.softwareEnforced),
            ("hardwareEnforced", hardwareEnforced, decoded.hardwareEnforced),
        ] {
            guard let expected else { continue }
            let origins = ["GENERATED", "DERIVED", "IMPORTED", "UNKNOWN", "SECURELY_IMPORTED"]
            check("\(label).purposes", expected.purposes?.joined(separator: ","), actual.purposes.map(String.init).joined(separator: ","))
            check("\(label).algorithms", expected.algorithms, actual.algorithm.map(String.init))
            check("\(label).keySize", expected.keySize, actual.keySize.map(String.init))
            check("\(label).ecCurve", expected.ecCurve, actual.ecCurve.map(String.init))
            check("\(label).noAuthRequired", expected.noAuthRequired.map(String.init), String(actual.noAuthRequired))
            check("\(label).userAuthType", expected.userAuthType, actual.userAuthType.map(String.init))
            check("\(label).authTimeout", expected.authTimeout, actual.authTimeout.map(String.init))
            check("\(label).allowWhileOnBody", expected.allowWhileOnBody.map(String.init), String(actual.allowWhileOnBody))
            check(
                "\(label).unlockedDeviceRequired", expected.unlockedDeviceRequired.map(String.init), String(actual.unlockedDeviceRequired))
            check("\(label).origin", expected.origin, actual.origin.map { origins.indices.contains($0) ? origins[$0] : String($0) })
            check("\(label).osVersion", expected.osVersion, actual.osVersion.map(String.init))
            check("\(label).osPatchLevel", expected.osPatchLevel, actual.osPatchLevel.map(String.init))
            check("\(label).vendorPatchLevel", expected.vendorPatchLevel, actual.vendorPatchLevel.map(String.init))
            check("\(label).bootPatchLevel", expected.bootPatchLevel, actual.bootPatchLevel.map(String.init))
            check("\(label).creationDateTime", expected.creationDateTime, actual.creationDateTime.map(String.init))
            if let root = expected.rootOfTrust {
                check(
                    "\(label).rootOfTrust.verifiedBootKey", root.verifiedBootKey, actual.rootOfTrust?.verifiedBootKey.base64EncodedString())
                check("\(label).rootOfTrust.deviceLocked", String(root.deviceLocked), actual.rootOfTrust.map { String($0.deviceLocked) })
                check("\(label).rootOfTrust.verifiedBootState", root.verifiedBootState, actual.rootOfTrust?.verifiedBootState.description)
                check(
                    "\(label).rootOfTrust.verifiedBootHash", root.verifiedBootHash,
                    actual.rootOfTrust?.verifiedBootHash?.base64EncodedString())
            }
            if let application = expected.attestationApplicationId {
                let packages = application.packages.map { "\($0.name)@\($0.version)" }.sorted()
                check(
                    "\(label).attestationApplicationId.packages", packages.joined(separator: ","),
                    actual.applicationID?.packages.map { "\($0.name)@\($0.version)" }.sorted().joined(separator: ","))
                check(
                    "\(label).attestationApplicationId.signatures", application.signatures.sorted().joined(separator: ","),
                    actual.applicationID?.signatureDigests.map { $0.base64EncodedString() }.sorted().joined(separator: ","))
            }
        }
        return out
    }
}

/// Runs one ``AttestationCase``: what `bioauth attestation check` prints and the vector tests assert.
package enum AttestationChecker {
    /// `appIDs` are the apps App Attest cases may be for (a case that names its app adds it); `time`
    /// overrides the case's own.
    package static func check(
        _ item: AttestationCase, appIDs: Set<AppAttest.AppID>,
        environments: Set<AppAttest.Environment> = Set(AppAttest.Environment.allCases), at time: Date? = nil
    ) async -> AttestationVerdict {
        let when = time ?? item.time ?? Date()
        do throws(AttestationError) {
            switch item.evidence {
            case .appAttestation(let object, let keyID, let clientDataHash, let appID):
                let verifier = AppAttestVerifier(appIDs: appIDs.union(appID.map { [$0] } ?? []), environments: environments)
                let key = try await verifier.verifyAttestation(object, keyID: keyID, clientDataHash: clientDataHash, at: when)
                return AttestationVerdict(passed: true, facts: facts(key) + [("receipt", "\(key.receipt.count) bytes")], error: nil)
            case .appAssertion(let object, let clientData, let publicKey, let appID, let environment, let counter):
                let verifier = AppAttestVerifier(appIDs: appIDs.union([appID]), environments: environments)
                let keyID = Data(SHA256.hash(data: publicKey.x963Representation))
                let before = AppAttestKey(
                    keyID: keyID, publicKey: publicKey, appID: appID, environment: environment, counter: counter - 1, receipt: Data())
                let after = try verifier.verifyAssertion(object, clientData: clientData, key: before)
                guard after.counter == counter else {
                    throw AttestationError(.counter, "the assertion's counter is not the one the source gives")
                }
                return AttestationVerdict(passed: true, facts: facts(after), error: nil)
            case .androidChain(let ders, let expected):
                let (leaf, description) = try await AndroidKeyAttestationVerifier.decode(chain: ders, at: when)
                let level = min(description.attestationSecurityLevel, description.keyMintSecurityLevel)
                guard level >= .trustedEnvironment else {
                    throw AttestationError(.securityLevel, "the key or its attestation is not in the TEE or StrongBox")
                }
                if let mismatches = expected?.mismatches(description), !mismatches.isEmpty {
                    throw AttestationError(.malformed, "decoded differently from its expectation: \(mismatches.joined(separator: ", "))")
                }
                let enforced = description.hardwareEnforced
                var facts: [(String, String)] = [
                    ("security level", description.attestationSecurityLevel.description),
                    ("KeyMint", "\(description.keyMintVersion) \(description.keyMintSecurityLevel)"),
                    ("key", "\(leaf.publicKey.description.prefix(40))"),
                    (
                        "user authentication",
                        enforced.noAuthRequired
                            ? "none"
                            : "type \(enforced.userAuthType.map(String.init) ?? "-"), timeout \(enforced.authTimeout.map(String.init) ?? "none")"
                    ),
                    ("verified boot", enforced.rootOfTrust.map { "\($0.verifiedBootState), locked \($0.deviceLocked)" } ?? "-"),
                    ("OS patch level", enforced.osPatchLevel.map(String.init) ?? "-"),
                ]
                if let application = description.softwareEnforced.applicationID ?? enforced.applicationID {
                    facts.append(("packages", application.packages.map(\.name).joined(separator: ", ")))
                }
                return AttestationVerdict(passed: true, facts: facts, error: nil)
            }
        } catch {
            return AttestationVerdict(passed: false, facts: [], error: error)
        }
    }

    static func facts(_ key: AppAttestKey) -> [(String, String)] {
        [
            ("app", key.appID.description), ("environment", key.environment.rawValue), ("key", key.publicKey.fingerprint),
            ("counter", String(key.counter)),
        ]
    }
}
