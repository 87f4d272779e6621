import BioAuth
import BioAuthCore
import BioAuthEmulator
import Foundation
import Testing

/// A keychain read or enclave operation that shows the passcode sheet blocks its thread until the
/// person answers (`SecItem.h`). BioAuth runs such calls off Swift concurrency's cooperative
/// threads, so however many wait at once, the app's other tasks keep running.
struct PromptingCallTests {
    /// A keychain whose reads wait like `SecItemCopyMatching` behind a passcode sheet.
    final class WaitingKeychain: KeychainService, @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let answered = DispatchSemaphore(value: 0)
        func copyData(_ query: KeychainQuery) throws(SecStatus) -> SecretBytes {
            entered.signal()
            answered.wait()
            return SecretBytes(Data("secret".utf8))
        }
        func add(_ item: KeychainItem, data: SecretBytes) throws(SecStatus) { throw .errSecUnimplemented }
        func copyAttributes(_ query: KeychainQuery) throws(SecStatus) -> [KeychainRecord] { throw .errSecUnimplemented }
        func update(_ query: KeychainQuery, data: SecretBytes) throws(SecStatus) { throw .errSecUnimplemented }
        func delete(_ query: KeychainQuery) throws(SecStatus) { throw .errSecUnimplemented }
    }

    /// What a plain thread (not one of Swift concurrency's) saw while the reads waited.
    struct Observation: Sendable {
        var everyReadWaiting = true
        var otherTaskRan = false
    }

    /// Twice as many passcode-sheet reads as the machine has cores (and two more) all reach the
    /// keychain, and while every one of them waits another task still runs. Reads on the
    /// cooperative threads would fill them: the rest would never start and the other task would
    /// wait for an answer.
    @Test func readsWaitingForThePasscodeSheetLeaveSwiftConcurrencysThreadsFree() async throws {
        let keychain = WaitingKeychain()
        var platform = EmulatedDevice.faceID().platform
        platform.keychain = keychain
        let store = ProtectedItemStore(platform: platform, service: try #require(ServiceName(rawValue: "test")), policy: .devicePasscode)
        let account = try #require(AccountName(rawValue: "vault"))
        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let reads = Task {
            try await withThrowingTaskGroup(of: SecretBytes.self) { group in
                for _ in 0..<count { group.addTask { try await store.read(account, prompt: Prompt(reason: "Unlock")) } }
                return try await group.reduce(into: 0) { total, _ in total += 1 }
            }
        }
        let observation: Observation = await withCheckedContinuation { continuation in
            Thread {
                var observation = Observation()
                // Generous bounds: the whole suite starts at once on two cores, and a correct
                // implementation passes in milliseconds; only a broken one waits them out.
                let deadline = DispatchTime.now() + 60
                for _ in 0..<count where keychain.entered.wait(timeout: deadline) == .timedOut { observation.everyReadWaiting = false }
                let probe = DispatchSemaphore(value: 0)
                Task { probe.signal() }
                observation.otherTaskRan = probe.wait(timeout: .now() + 30) == .success
                for _ in 0..<count { keychain.answered.signal() }  // the person answers every sheet
                continuation.resume(returning: observation)
            }.start()
        }
        #expect(observation.everyReadWaiting, "every read reached the keychain while the others waited")
        #expect(observation.otherTaskRan, "a task ran while \(count) reads waited for the passcode sheet")
        #expect(try await reads.value == count)
    }
}
