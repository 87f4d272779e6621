import Foundation

/// The text an enrolled phone shows — and signs the SHA-256 of, in a step-up — to let in a sign-in
/// started on another screen. The server builds it from what it saw of the requester; the app
/// shows it as sent and signs it with the number the user reads off the other screen.
public enum CrossDeviceApprovalText {
    /// `Sign in as ‹user› on another screen: ‹user agent›, from ‹address›, at ‹time›`, the time
    /// in ISO 8601 (UTC, seconds). What the phone shows: who asks, from where, when.
    public static func make(userID: String, userAgent: String, requester: String, at time: Date) -> String {
        "Sign in as \(userID) on another screen: \(userAgent), from \(requester), at \(time.formatted(.iso8601))"
    }

    /// The bytes an approving phone signs (their SHA-256 is the step-up's operation hash): the
    /// shown `text`, then `, number ‹NN›` — the number the other screen shows, as the user typed
    /// it, digits only (``normalisedNumber(_:)``). Only someone who sees that screen knows it, so
    /// one tap on a request the user did not make approves nothing.
    public static func signed(_ text: String, number: String) -> String { text + ", number " + normalisedNumber(number) }

    /// The digits of `typed`, in order: spaces and other characters a user may add are dropped.
    public static func normalisedNumber(_ typed: String) -> String { String(typed.filter { $0.isASCII && $0.isNumber }) }

    /// How many digits a request's number has.
    public static let numberLength = 2
}
