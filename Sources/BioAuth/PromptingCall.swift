import Foundation

/// Runs a keychain or Secure Enclave call that may show UI on a thread of its own.
///
/// `SecItemCopyMatching` and `SecKeyCreateSignature` are synchronous: when the item or key needs
/// the device passcode (a `.devicePasscode` item, or any call whose context was not evaluated
/// first), the system shows its sheet and the calling thread waits until the person answers
/// (`SecItem.h`: "these functions may block … do not call them from the main thread"). On one
/// of Swift concurrency's cooperative threads — as many as the device has cores — a few such
/// waits would stall every other task of the app. So the call gets a thread that is not part of
/// that pool; the caller awaits it.
package enum PromptingCall {
    package static func run<T: Sendable, Failure: Error>(_ body: @escaping @Sendable () throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure> = await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: Result { () throws(Failure) -> T in try body() }) }
            thread.name = "BioAuth prompting call"
            thread.start()
        }
        return try result.get()
    }
}
