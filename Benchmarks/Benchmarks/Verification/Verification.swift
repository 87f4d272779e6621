import Benchmark
import BioAuthCore
import Crypto
import Foundation

// Micro benchmarks with allocation counts (ordo-one/benchmark):
//   swift package --package-path Benchmarks benchmark --target Verification
// The baseline is swift-crypto's own parse + verify, measured in the same run.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock, .mallocCountTotal], maxDuration: .seconds(3))
    let signer = P256.Signing.PrivateKey()
    let spki = signer.publicKey.derRepresentation
    let messages = (0..<64).map { Data("message \($0)".utf8) }
    let signatures = messages.map { try! signer.signature(for: $0).derRepresentation }

    Benchmark("baseline: swift-crypto SPKI parse + DER parse + verify") { benchmark in
        for index in benchmark.scaledIterations {
            let key = try P256.Signing.PublicKey(derRepresentation: spki)
            let signature = try P256.Signing.ECDSASignature(derRepresentation: signatures[index & 63])
            blackHole(key.isValidSignature(signature, for: messages[index & 63]))
        }
    }

    Benchmark("BioAuth: strict 91-byte SPKI + strict DER + verify") { benchmark in
        for index in benchmark.scaledIterations {
            let key = try DevicePublicKey(spki: spki)
            blackHole(key.isValidSignature(der: signatures[index & 63], for: messages[index & 63]))
        }
    }

    Benchmark("BioAuth: rebuild and encode the signed login message") { benchmark in
        let challengeID = Data(repeating: 1, count: 16), nonce = Data(repeating: 2, count: 32)
        for _ in benchmark.scaledIterations {
            let message = try SignedMessage(
                purpose: .login, relyingPartyID: "example.com", challengeID: challengeID, nonce: nonce, userID: "alice",
                deviceID: "3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10", expiresAt: 1_767_225_660)
            blackHole(message.encoded)
        }
    }
}
