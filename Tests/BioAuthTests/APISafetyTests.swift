import BioAuth
import BioAuthCore
import BioAuthEmulator
import Crypto
import Foundation
import Testing

/// Calls that could destroy data or leave it unusable, made safe.
struct APISafetyTests {
    @Test(arguments: EmulatedDevice.InvalidatedKeyLookup.allCases)
    func createKeyNeverReplacesAFoundKeyButReplaceKeyDoes(lookup: EmulatedDevice.InvalidatedKeyLookup) throws {
        let device = EmulatedDevice.faceID { $0.invalidatedKeyLookup = lookup }
        let signer = BiometricSigner(platform: device.platform, tag: "login")
        let first = try signer.createKey()
        #expect(throws: BioAuthError(.duplicateItem)) { try signer.createKey() }  // an app calling it at every launch keeps its key
        #expect(try signer.publicKey() == first)
        let second = try signer.replaceKey()
        #expect(try second != first && signer.publicKey() == second)
        device.enrollBiometry()  // the key dies
        switch lookup {
        case .fails:  // not found: creating a new one needs no replacement
            #expect(!signer.hasKey)
            #expect(try signer.createKey() != second)
        case .succeeds:  // still found (SecItem.m: token keys carry no biometric ACL): only replaceKey replaces it
            #expect(signer.hasKey)
            #expect(throws: BioAuthError(.duplicateItem)) { try signer.createKey() }
            #expect(try signer.replaceKey() != second)
        }
    }

    @Test func concurrentConfigurationsLeaveOneVaultKeyThatUnwraps() async throws {
        let lock = AppLock(platform: EmulatedDevice.faceID().platform, passcodePolicy: AppPasscodePolicy(rounds: 50_000))
        let results = await withTaskGroup(of: (String, SymmetricKey?).self) { group in
            for passcode in ["111111", "222222", "333333", "444444"] {
                group.addTask { (passcode, try? await lock.configure(passcode: passcode)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let winners = results.filter { $0.1 != nil }
        #expect(winners.count == 1)
        let (passcode, key) = try #require(winners.first)
        #expect(try await lock.unlockWithPasscode(passcode) == key)
    }

    @Test func concurrentPasscodeChangesNeverOrphanTheVaultKey() async throws {
        let lock = AppLock(platform: EmulatedDevice.faceID().platform, passcodePolicy: AppPasscodePolicy(rounds: 50_000))
        let vault = try await lock.configure(passcode: "111111")
        let changed = await withTaskGroup(of: String?.self) { group in
            for new in ["222222", "333333", "444444"] {
                group.addTask { (try? await lock.changePasscode(from: "111111", to: new)) != nil ? new : nil }
            }
            return await group.compactMap { $0 }.reduce(into: []) { $0.append($1) }
        }
        #expect(changed.count == 1, "the old passcode is wrong once another call changed it")
        #expect(try await lock.unlockWithPasscode(try #require(changed.first)) == vault)
    }

    @Test func identifiersAreNeverEmpty() throws {
        #expect(KeyTag(rawValue: "") == nil && ServiceName(rawValue: "") == nil && AccountName(rawValue: "") == nil)
        #expect(AccountName(rawValue: "token")?.rawValue == "token")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([KeyTag].self, from: Data(#"[""]"#.utf8)) }
        #expect(try JSONDecoder().decode([KeyTag].self, from: Data(#"["login"]"#.utf8)) == ["login"])
    }

    /// Turning biometric unlock off deletes the biometric copy and keeps it off: no prompt, the
    /// app passcode is required, and a passcode unlock does not quietly re-create the copy.
    @Test func disablingBiometricUnlockDeletesTheCopyAndStaysOff() async throws {
        let device = EmulatedDevice.faceID()
        let lock = AppLock(platform: device.platform, passcodePolicy: AppPasscodePolicy(rounds: 1_000))
        let vault = try await lock.configure(passcode: "246810")
        try await lock.enableBiometricUnlock(passcode: "246810")
        let copy = ProtectedItemStore(platform: device.platform, service: "bioauth.app-lock")
        #expect(copy.contains("bioauth.vault.biometric"))
        try await lock.disableBiometricUnlock()
        await lock.lock()
        #expect(!copy.contains("bioauth.vault.biometric"))
        #expect(await lock.state == .lockedPasscodeRequired(.biometricUnlockNotEnabled))
        let before = device.promptCount
        await #expect(throws: BioAuthError(.passcodeRequired)) { _ = try await lock.unlockWithBiometry(Prompt(reason: "Unlock")) }
        #expect(device.promptCount == before)
        #expect(try await lock.unlockWithPasscode("246810") == vault)
        await lock.lock()
        #expect(!copy.contains("bioauth.vault.biometric"))
        #expect(await lock.state == .lockedPasscodeRequired(.biometricUnlockNotEnabled))
    }
}

extension APISafetyTests {
    /// A write the keychain refuses (here: the screen locked under a `WhenUnlocked` item) leaves
    /// the previous value: records are replaced in place, never deleted and re-added.
    @Test func aRefusedWriteKeepsThePreviousValue() throws {
        let device = EmulatedDevice.faceID()
        let records = PlainRecords(keychain: device.platform.keychain, service: "app", accessibility: .whenUnlockedThisDeviceOnly)
        try records.write(SecretBytes(Data("first".utf8)), "session")
        try records.write(SecretBytes(Data("second".utf8)), "session")
        device.lockScreen()
        #expect(throws: BioAuthError.self) { try records.write(SecretBytes(Data("third".utf8)), "session") }
        device.unlockScreen()
        #expect(try records.read("session") == SecretBytes(Data("second".utf8)))
    }
}
