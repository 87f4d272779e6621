import BioAuthCore
import Crypto
import Foundation
import SwiftASN1
import X509

/// One attestation or assertion to check, read from a file in one of the published vector formats:
/// App Attest YAML documents (veehaitch/devicecheck-appattest), App Attest JSON (uebelack/node-app-attest),
/// and Android Key Attestation chains as PEM with an optional JSON expectation beside them
/// (android/keyattestation `testdata/`). What `bioauth attestation check` reads.
package struct AttestationCase: Sendable {
    package enum Evidence: Sendable {
        case appAttestation(object: Data, keyID: Data, clientDataHash: Data, appID: AppAttest.AppID?)
        case appAssertion(
            object: Data, clientData: Data, publicKey: DevicePublicKey, appID: AppAttest.AppID, environment: AppAttest.Environment,
            counter: UInt32)
        /// `expected` is the decoded expectation (android/keyattestation's JSON), when the folder has one.
        case androidChain(ders: [Data], expected: AndroidExpectation?)
    }

    package let name: String
    package let evidence: Evidence
    /// Whether the source says this case must verify.
    package let shouldPass: Bool
    /// The time the source gives (a timestamp, or when the chain was issued); nil: the caller's clock.
    package let time: Date?

    package init(name: String, evidence: Evidence, shouldPass: Bool, time: Date?) {
        self.name = name
        self.evidence = evidence
        self.shouldPass = shouldPass
        self.time = time
    }
}

/// A case's outcome: the facts proven, or the check that failed.
package struct AttestationVerdict: Sendable {
    package let passed: Bool
    package let facts: [(String, String)]
    package let error: AttestationError?
}

package enum AttestationFiles {
    /// Every case in `url` (a file, or a folder searched recursively), in a stable order.
    package static func cases(at url: URL) throws -> [AttestationCase] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { throw CocoaError(.fileNoSuchFile) }
        guard isDirectory.boolValue else { return try cases(inFile: url) }
        let files = (FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? [])
            .filter { ["yaml", "json", "pem"].contains($0.pathExtension) }
            .sorted { $0.path < $1.path }
        return try files.flatMap { try cases(inFile: $0) }
    }

    /// The apps the cases name: a file that does not name its app (node-app-attest's attestation) is
    /// checked against the apps its neighbours name.
    package static func appIDs(in cases: [AttestationCase]) -> Set<AppAttest.AppID> {
        Set(
            cases.compactMap {
                switch $0.evidence {
                case .appAttestation(_, _, _, let appID): appID
                case .appAssertion(_, _, _, let appID, _, _): appID
                case .androidChain: nil
                }
            })
    }

    static func cases(inFile url: URL) throws -> [AttestationCase] {
        let text = try String(contentsOf: url, encoding: .utf8)
        let name = url.lastPathComponent
        switch url.pathExtension {
        case "yaml": return try yamlCases(text, name: name)
        case "pem": return try pemCase(text, url: url).map { [$0] } ?? []
        case "json": return try jsonCases(text, name: name)
        default: return []
        }
    }

    // MARK: App Attest YAML: documents of `key: value` lines and `key: |` blocks.

    static func yamlCases(_ text: String, name: String) throws -> [AttestationCase] {
        var cases: [AttestationCase] = []
        for (index, document) in yamlDocuments(text).enumerated() {
            guard let type = document["type"], type != "receipt" else { continue }
            let label = "\(name)#\(index + 1) \(type)"
            guard let appID = try? AppAttest.AppID(teamID: document["teamIdentifier"] ?? "", bundleID: document["bundleIdentifier"] ?? ""),
                let environment = document["environment"].flatMap(AppAttest.Environment.init(rawValue:)),
                let keyID = document["keyIdBase64"].flatMap({ Data(base64Encoded: $0) }),
                let clientData = document["clientDataBase64"].flatMap({ Data(base64Encoded: $0) })
            else { throw CocoaError(.fileReadCorruptFile) }
            let time = document["timestamp"].flatMap(parseTime)
            if type == "attestation", let object = document["attestationBase64"].flatMap({ Data(base64Encoded: $0) }) {
                let evidence = AttestationCase.Evidence.appAttestation(
                    object: object, keyID: keyID, clientDataHash: Data(SHA256.hash(data: clientData)), appID: appID)
                cases.append(AttestationCase(name: label, evidence: evidence, shouldPass: true, time: time))
            } else if type == "assertion", let object = document["assertionBase64"].flatMap({ Data(base64Encoded: $0) }),
                let pem = document["publicKey"], let key = try? DevicePublicKey(pem: pem),
                let counter = document["counter"].flatMap({ UInt32($0) })
            {
                let evidence = AttestationCase.Evidence.appAssertion(
                    object: object, clientData: clientData, publicKey: key, appID: appID, environment: environment, counter: counter)
                cases.append(AttestationCase(name: label, evidence: evidence, shouldPass: true, time: time))
            }
        }
        return cases
    }

    static func yamlDocuments(_ text: String) -> [[String: String]] {
        var documents: [[String: String]] = []
        var current: [String: String] = [:]
        var block: (key: String, lines: [String])?
        func endBlock() {
            if let open = block { current[open.key] = open.lines.joined(separator: "\n") + "\n" }
            block = nil
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "---" {
                endBlock()
                if !current.isEmpty { documents.append(current) }
                current = [:]
            } else if line.hasPrefix(" ") {
                block?.lines.append(line.trimmingCharacters(in: .whitespaces))
            } else if let colon = line.firstIndex(of: ":") {
                endBlock()
                let key = String(line[..<colon])
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if value == "|" {
                    block = (key, [])
                } else if !value.isEmpty {
                    current[key] =
                        value.hasPrefix("'") && value.hasSuffix("'") && value.count >= 2 ? String(value.dropFirst().dropLast()) : value
                }
            }
        }
        endBlock()
        if !current.isEmpty { documents.append(current) }
        return documents
    }

    // MARK: JSON: App Attest (node-app-attest) or an Android expectation (read with its PEM).

    static func jsonCases(_ text: String, name: String) throws -> [AttestationCase] {
        guard let json = try JSONSerialization.jsonObject(with: withoutComments(text)) as? [String: Any] else { return [] }
        func bytes(_ key: String) -> Data? { (json[key] as? String).flatMap { Data(base64Encoded: $0) } }
        if let object = bytes("attestation"), let keyID = bytes("keyId"), let challenge = bytes("challenge") {
            let evidence = AttestationCase.Evidence.appAttestation(
                object: object, keyID: keyID, clientDataHash: Data(SHA256.hash(data: challenge)), appID: nil)
            // No timestamp: the moment its chain was issued.
            let chain = (try? CBOR(decoding: object))?["attStmt"]?["x5c"]?.arrayValue?.compactMap(\.bytesValue) ?? []
            return [AttestationCase(name: name, evidence: evidence, shouldPass: true, time: try? issuedAt(chain))]
        }
        if let object = bytes("assertionBase64"), let clientData = json["clientData"] as? String,
            let key = (json["publicKeyPem"] as? String).flatMap({ try? DevicePublicKey(pem: $0) }),
            let appID = try? AppAttest.AppID(
                teamID: json["teamIdentifier"] as? String ?? "", bundleID: json["bundleIdentifier"] as? String ?? ""),
            let counter = json["expectedCounter"] as? Int
        {
            let evidence = AttestationCase.Evidence.appAssertion(
                object: object, clientData: Data(clientData.utf8), publicKey: key, appID: appID, environment: .development,
                counter: UInt32(counter))
            return [AttestationCase(name: name, evidence: evidence, shouldPass: true, time: nil)]
        }
        return []  // An Android expectation: read with its PEM.
    }

    // MARK: Android: a PEM chain, leaf first, with `NAME.json` beside it as the expectation.

    static func pemCase(_ text: String, url: URL) throws -> AttestationCase? {
        let ders = pemBlocks(text)
        guard ders.count > 1 else { return nil }  // A single certificate is not a chain.
        let expectationURL = url.deletingPathExtension().appendingPathExtension("json")
        var expected: AndroidExpectation?
        if let json = try? String(contentsOf: expectationURL, encoding: .utf8) {
            expected = try JSONDecoder().decode(AndroidExpectation.self, from: withoutComments(json))
        }
        // Negative cases: a chain from an `invalid` folder; one its expectation says is software-attested or
        // an ML-DSA key (BioAuth enrols P-256 keys); one that brings its own root, not Google's.
        let invalid = url.deletingLastPathComponent().lastPathComponent == "invalid"
        let software = expected?.attestationSecurityLevel == "SOFTWARE" || expected?.hardwareEnforced?.algorithms == "4"
        let shouldPass = !invalid && !software && !bringsOwnRoot(ders)
        let time = try? issuedAt(ders)
        return AttestationCase(
            name: url.pathComponents.suffix(3).joined(separator: "/"), evidence: .androidChain(ders: ders, expected: expected),
            shouldPass: shouldPass, time: time)
    }

    /// Some expectations carry `//` comment lines, which JSON does not allow.
    static func withoutComments(_ json: String) -> Data {
        Data(
            json.split(separator: "\n", omittingEmptySubsequences: false).filter {
                !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
            }.joined(separator: "\n").utf8)
    }

    /// The DER of every PEM block in `text`.
    package static func pemBlocks(_ text: String) -> [Data] {
        var ders: [Data] = []
        var body: String?
        for line in text.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("-----BEGIN") {
                body = ""
            } else if line.hasPrefix("-----END") {
                if let base64 = body, let der = Data(base64Encoded: base64) { ders.append(der) }
                body = nil
            } else if body != nil {
                body! += line.trimmingCharacters(in: .whitespaces)
            }
        }
        return ders
    }

    /// The latest `notBefore` of the chain and of the trusted root it names: the first moment the whole
    /// chain was valid, when the attestation was made.
    static func issuedAt(_ ders: [Data]) throws -> Date {
        let chain = try ders.map { try Certificate(derEncoded: [UInt8]($0)) }
        let issuers = Set(chain.map(\.issuer))
        let roots = (TrustAnchors.googleHardwareAttestationRoots + [TrustAnchors.appleAppAttestationRoot]).filter {
            issuers.contains($0.subject)
        }
        return (chain + roots).map(\.notValidBefore).max() ?? Date()
    }

    /// Whether the chain ends in a self-signed certificate whose key is not a trusted root's.
    static func bringsOwnRoot(_ ders: [Data]) -> Bool {
        guard let last = ders.last, let top = try? Certificate(derEncoded: [UInt8](last)), top.subject == top.issuer else { return false }
        return !TrustAnchors.googleHardwareAttestationRoots.contains { $0.publicKey == top.publicKey }
    }

    /// An ISO 8601 time with or without fractional seconds.
    package static func parseTime(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }
}
