import BioAuth
import BioAuthCore
import BioAuthEmulator
import Foundation
import Testing

/// The README's example, as written, runs.
struct ReadmeExampleTests {
    @Test func readmeExampleRuns() async throws {
        let challenge = ChallengeEnvelope(try SignedMessage(
            purpose: .login, relyingPartyID: "example.com", challengeID: Data(count: 16), nonce: Data(count: 32),
            userID: "alice", deviceID: "phone", expiresAt: 1_767_225_660))

        let platform = EmulatedDevice(biometry: .faceID).platform
        let lock = AppLock(platform: platform)
        try await lock.configure(passcode: "246810")                 // app passcode guards a random vault key
        try await lock.enableBiometricUnlock(passcode: "246810")     // Face ID copy in a .biometryCurrentSet item
        let vaultKey = try await lock.unlockWithBiometry(Prompt(reason: "Unlock"))  // one prompt; a new face forces the passcode
        let signer = BiometricSigner(platform: platform, tag: "login")
        let publicKey = try signer.createKey()                       // Secure Enclave P-256: send publicKey.spkiRepresentation
        let signature = try await signer.sign(challenge, prompt: Prompt(reason: "Sign in"))  // the server verifies, once

        #expect(vaultKey.count == 32)
        #expect(publicKey.isValidSignature(der: signature, for: try challenge.message().encoded))
    }
}
