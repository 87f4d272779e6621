import Foundation

/// The text a device shows, and signs in a step-up, to allow a new password for the account: the
/// built-in password changes only with an enrolled device's biometric approval
/// (`POST /v1/password`), so a phished password cannot lock the owner out by changing it.
public enum PasswordChangeText {
    /// `Change the password of account ‹userId›`.
    public static func make(userID: String) -> String { "Change the password of account \(userID)" }
}
