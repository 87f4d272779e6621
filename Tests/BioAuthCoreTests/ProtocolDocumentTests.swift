import BioAuthCore
import BioAuthTesting
import Crypto
import Foundation
import Testing

/// `docs/Protocol.md` says what the code does: its vectors are the code's output, its signatures
/// verify with BioAuth and with OpenSSL.
struct ProtocolDocumentTests {
    struct DocumentVector { var name = "", message = "", signature = "" }

    static var document: String { (try? PackagePaths.text("docs/Protocol.md")) ?? "" }

    static var vectors: [DocumentVector] {
        var vectors: [DocumentVector] = []
        for line in document.split(separator: "\n") {
            if line.hasPrefix("vector: ") { vectors.append(DocumentVector(name: String(line.dropFirst(8)))) }
            if line.hasPrefix("message: ") { vectors[vectors.count - 1].message = String(line.dropFirst(9)) }
            if line.hasPrefix("signature: ") { vectors[vectors.count - 1].signature = String(line.dropFirst(11)) }
        }
        return vectors
    }

    @Test func documentedMessagesAreWhatTheCodeBuilds() {
        let documented = Self.vectors
        #expect(documented.map(\.name) == ProtocolVectors.all.map(\.name))
        for (doc, vector) in zip(documented, ProtocolVectors.all) {
            #expect(doc.message == vector.message.encoded.hexString, "\(vector.name)")
        }
        #expect(
            Self.document.contains(DevicePublicKey(ProtocolVectors.testKey.publicKey).pemRepresentation.trimmingCharacters(in: .newlines)))
        #expect(Self.document.contains(Data(SHA256.hash(data: ProtocolVectors.stepUpOperation)).hexString.prefix(8)))
    }

    @Test func documentedSignaturesVerify() throws {
        let key = DevicePublicKey(ProtocolVectors.testKey.publicKey)
        for vector in Self.vectors {
            #expect(key.isValidSignature(der: Data(hexString: vector.signature)!, for: Data(hexString: vector.message)!), "\(vector.name)")
        }
    }

    /// `openssl dgst -sha256 -verify` accepts the documented signatures (OpenSSL is installed by `.ci/run`).
    @Test(.enabled(if: Self.openssl != nil || TestServices.isCI, "openssl not installed"))
    func opensslVerifiesTheDocumentedSignatures() throws {
        let openssl = try #require(Self.openssl, "openssl is required under CI")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-vectors-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = directory.appendingPathComponent("public.pem")
        try DevicePublicKey(ProtocolVectors.testKey.publicKey).pemRepresentation.write(to: pem, atomically: true, encoding: .utf8)
        for vector in Self.vectors {
            let message = directory.appendingPathComponent("\(vector.name).bin")
            let signature = directory.appendingPathComponent("\(vector.name).der")
            try Data(hexString: vector.message)!.write(to: message)
            try Data(hexString: vector.signature)!.write(to: signature)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: openssl)
            process.arguments = ["dgst", "-sha256", "-verify", pem.path, "-signature", signature.path, message.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            process.waitUntilExit()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0 && text.contains("Verified OK"), "\(vector.name): \(text)")
        }
    }

    static var openssl: String? {
        ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}

/// The approval text of an added device is what `docs/Protocol.md` flow 2a specifies.
struct EnrolmentApprovalTextTests {
    @Test func theTextIsBuiltFromNameAndKeyAsDocumented() throws {
        let key = DevicePublicKey(ProtocolVectors.testKey.publicKey)
        let fingerprint = Data(SHA256.hash(data: key.spkiRepresentation).prefix(8)).hexString
        #expect(fingerprint.count == 16 && fingerprint == fingerprint.lowercased())
        #expect(
            EnrolmentApprovalText.make(deviceName: "Pad", publicKey: key.spkiRepresentation, replacing: false)
                == "Add device Pad, key \(fingerprint)")
        #expect(
            EnrolmentApprovalText.make(deviceName: "Pad", publicKey: key.spkiRepresentation, replacing: true)
                == "Replace the key of device Pad, new key \(fingerprint)")
        let document = ProtocolDocumentTests.document
        #expect(document.contains("`Add device ‹name›, key ‹fingerprint›`"))
        #expect(document.contains("`Replace the key of device ‹name›, new key ‹fingerprint›`"))
    }
}
