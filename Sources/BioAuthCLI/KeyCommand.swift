import ArgumentParser
import BioAuthCore
import Crypto
import Foundation

/// `bioauth key …`: public-key conversions, signature checks, protocol vectors.
public struct KeyCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "key", abstract: "P-256 public keys and signatures: convert, verify, print the protocol's vectors.",
        subcommands: [Convert.self, Verify.self, Vectors.self])
    public init() {}
}

enum KeyFormat: String, ExpressibleByArgument, CaseIterable { case x963, spki, pem, jwk }
enum BinaryEncoding: String, ExpressibleByArgument, CaseIterable { case hex, base64, base64url }

/// Reads a file (or stdin with "-") whole.
func readInput(_ path: String) throws -> Data {
    if path == "-" {
        var lines: [String] = []
        while let line = Console.input.readLine() { lines.append(line) }
        return Data(lines.joined(separator: "\n").utf8)
    }
    guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(path)") }
    return data
}

/// Text holding hex, base64 or base64url, or else the raw bytes themselves.
func decodeBinary(_ data: Data) -> Data {
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    if let hex = Data(hexString: text), !text.isEmpty { return hex }
    if let base64 = Data(base64Encoded: text), !text.isEmpty { return base64 }
    if let base64url = Base64URL.decode(text), !text.isEmpty { return base64url }
    return data
}

/// Parses a public key in any of the four forms, detected from its content.
func parsePublicKey(_ data: Data) throws -> DevicePublicKey {
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    do {
        if text.hasPrefix("-----BEGIN") { return try DevicePublicKey(pem: text) }
        if text.hasPrefix("{") { return try DevicePublicKey(jwk: text) }
        let bytes = decodeBinary(data)
        return bytes.count == 65 ? try DevicePublicKey(x963Representation: bytes) : try DevicePublicKey(spki: bytes)
    } catch {
        throw CLIError(
            "not a P-256 public key: \(error.code)",
            hint: "give X9.63 (65 bytes) or SPKI DER (91 bytes) as binary, hex or base64; PEM; or JWK")
    }
}

func encode(_ data: Data, _ encoding: BinaryEncoding) -> String {
    switch encoding {
    case .hex: data.hexString
    case .base64: data.base64EncodedString()
    case .base64url: Base64URL.encode(data)
    }
}

extension KeyCommand {
    struct Convert: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert a P-256 public key between X9.63, SPKI DER, PEM and JWK (input format detected).")
        @Option(help: "Output format: x963, spki, pem or jwk.") var to: KeyFormat
        @Option(help: "Text encoding of binary output: hex, base64 or base64url.") var encoding: BinaryEncoding = .hex
        @Argument(help: "Key file, or - for stdin.") var input: String = "-"

        func run() async throws {
            let key = try parsePublicKey(try readInput(input))
            switch to {
            case .x963: Console.line(encode(key.x963Representation, encoding))
            case .spki: Console.line(encode(key.spkiRepresentation, encoding))
            case .pem: Console.output.write(key.pemRepresentation)
            case .jwk: Console.line(key.jwkRepresentation)
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify an ECDSA P-256 SHA-256 signature (DER, or raw r‖s with --raw) over a file.")
        @Option(help: "Public key file (any format `convert` reads).") var key: String
        @Option(help: "Signature file: binary, hex or base64.") var signature: String
        @Option(help: "The signed message file (bytes as they are).") var message: String
        @Flag(help: "The signature is raw r‖s (64 bytes), not DER.") var raw = false

        func run() async throws {
            let publicKey = try parsePublicKey(try readInput(key))
            let signatureBytes = decodeBinary(try readInput(signature))
            let messageBytes = try readInput(message)
            let valid =
                raw
                ? publicKey.isValidSignature(raw: signatureBytes, for: messageBytes)
                : publicKey.isValidSignature(der: signatureBytes, for: messageBytes)
            Console.line(valid ? "valid signature" : "INVALID signature")
            if !valid { throw ExitCode.failure }
        }
    }

    struct Vectors: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print protocol v1's test vectors (docs/Protocol.md) with fresh signatures by the published test key.")
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let key = ProtocolVectors.testKey
            let publicKey = DevicePublicKey(key.publicKey)
            var records: [[String: String]] = []
            for vector in ProtocolVectors.all {
                let signature = try key.signature(for: vector.message.encoded).derRepresentation
                records.append(["vector": vector.name, "message": vector.message.encoded.hexString, "signature": signature.hexString])
            }
            if json {
                let object: [String: any Sendable] = [
                    "testPrivateKey": ProtocolVectors.testPrivateKeyHex, "publicKeySPKI": publicKey.spkiRepresentation.hexString,
                    "vectors": records,
                ]
                Console.line(
                    String(
                        decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted]), as: UTF8.self)
                )
                return
            }
            Console.line("test private key (RFC 6979 A.2.5, never for real use): \(ProtocolVectors.testPrivateKeyHex)")
            Console.output.write(publicKey.pemRepresentation)
            for record in records {
                Console.line("\nvector: \(record["vector"]!)\nmessage: \(record["message"]!)\nsignature: \(record["signature"]!)")
            }
        }
    }
}
