import BioAuth
import BioAuthCore
import BioAuthEmulator
import BioAuthTesting
import Crypto
import Foundation
import Testing

// README-BLOCKS-BEGIN
func unlockAndSign(_ challenge: ChallengeEnvelope) async throws -> (vaultKey: SymmetricKey, signature: P256.Signing.ECDSASignature) {
    let platform = EmulatedDevice(biometry: .faceID).platform  // on a device: DevicePlatform.system
    let lock = AppLock(platform: platform)
    try await lock.configure(passcode: "246810")  // an app passcode guards a random vault key
    try await lock.enableBiometricUnlock(passcode: "246810")  // its Face ID copy: a .biometryCurrentSet item
    let vaultKey = try await lock.unlockWithBiometry(Prompt(reason: "Unlock"))  // one prompt; a new face demands the passcode
    let signer = BiometricSigner(platform: platform, tag: "login")
    try signer.createKey()  // Secure Enclave P-256; send signer.publicKey().spkiRepresentation to your server
    return (vaultKey, try await signer.sign(challenge, prompt: Prompt(reason: "Sign in")))  // a server challenge, signed once
}
// README-BLOCKS-END

/// The README's second example is this file's, byte for byte, and it runs.
struct ReadmeExampleTests {
    @Test func theReadmeShowsThisExampleExactly() throws {
        #expect(try PackagePaths.document("README.md", printsBlock: "README-BLOCKS", of: "Tests/BioAuthTests/ReadmeExampleTests.swift"))
    }

    @Test func readmeExampleRuns() async throws {
        let challenge = ChallengeEnvelope(
            try SignedMessage(
                purpose: .login, relyingPartyID: "example.com", challengeID: Data(count: 16), nonce: Data(count: 32),
                userID: "alice", deviceID: "phone", expiresAt: 1_767_225_660))
        let (vaultKey, signature) = try await unlockAndSign(challenge)
        #expect(vaultKey.bitCount == 256)
        #expect(!signature.derRepresentation.isEmpty)
    }
}
