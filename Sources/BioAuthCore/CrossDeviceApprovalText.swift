import Foundation

/// The text an enrolled phone shows — and signs the SHA-256 of, in a step-up — to let in a sign-in
/// started on another screen. The server builds it from facts it holds, in a fixed form: nothing
/// the requester writes reaches it (its `User-Agent` only picks a ``ScreenLabel`` from a fixed
/// vocabulary). The app shows it as sent and signs it with the number the user reads off the other
/// screen; the phone never shows that number.
public enum CrossDeviceApprovalText {
    /// `Sign in as ‹user› on another screen, from ‹address› at ‹time›: ‹screen›`, the time in
    /// ISO 8601 (UTC, seconds): who asks, from where and when — the server's facts first — then
    /// what the screen claims to be, in the server's words.
    public static func make(userID: String, screen: ScreenLabel, requester: String, at time: Date) -> String {
        "Sign in as \(userID) on another screen, from \(requester) at \(time.formatted(.iso8601)): \(screen)"
    }

    /// The bytes an approving phone signs (their SHA-256 is the step-up's operation hash): the
    /// shown `text`, then `, number ‹NNNN›` — the number the other screen shows, as the user typed
    /// it, digits only (``normalisedNumber(_:)``). Only someone who sees that screen knows it, so
    /// one tap on a request the user did not make approves nothing.
    public static func signed(_ text: String, number: String) -> String { text + ", number " + normalisedNumber(number) }

    /// The digits of `typed`, in order: spaces and other characters a user may add are dropped.
    public static func normalisedNumber(_ typed: String) -> String { String(typed.filter { $0.isASCII && $0.isNumber }) }

    /// How many digits a request's number has: four, so that a requester who starts requests
    /// until the number is one it guessed needs thousands of them (a two-digit number took about
    /// a hundred), while a person still types it at a glance.
    public static let numberLength = 4
}

/// What a sign-in's screen is, as the phone is told: a browser family and a system from a fixed
/// vocabulary, picked from the requester's `User-Agent` and never quoting it. A requester can
/// claim another browser — the label is a hint, not a proof — but cannot write a word of its own.
public struct ScreenLabel: Sendable, Hashable, CustomStringConvertible {
    /// The browser family: `Chrome`, `Edge`, `Firefox`, `Safari`, `Opera`, `Samsung Internet`, or nil.
    public let browser: String?
    /// The system: `Windows`, `macOS`, `iOS`, `iPadOS`, `Android`, `ChromeOS`, `Linux`, or nil.
    public let system: String?

    /// The label for a `User-Agent` header (nil: none sent).
    public init(userAgent header: String?) {
        let ua = header ?? ""
        func has(_ token: String) -> Bool { ua.range(of: token, options: .caseInsensitive) != nil }
        browser =
            if has("Edg/") || has("EdgA/") || has("EdgiOS/") { "Edge" } else if has("OPR/") || has("Opera") {
                "Opera"
            } else if has("SamsungBrowser/") { "Samsung Internet" } else if has("Firefox/") || has("FxiOS/") {
                "Firefox"
            } else if has("Chrome/") || has("CriOS/") || has("Chromium/") { "Chrome" } else if has("Safari/") && has("Version/") {
                "Safari"
            } else { nil }
        system =
            if has("Windows") { "Windows" } else if has("iPad") { "iPadOS" } else if has("iPhone") || has("iPod") {
                "iOS"
            } else if has("Android") { "Android" } else if has("CrOS") { "ChromeOS" } else if has("Macintosh") || has("Mac OS X") {
                "macOS"
            } else if has("Linux") { "Linux" } else { nil }
    }

    /// A label read back from its ``description`` (a stored request); unknown words are dropped.
    public init(stored: String) {
        let parts = stored.components(separatedBy: " on ")
        let browsers = ["Chrome", "Edge", "Firefox", "Safari", "Opera", "Samsung Internet"]
        let systems = ["Windows", "macOS", "iOS", "iPadOS", "Android", "ChromeOS", "Linux"]
        browser = parts.first.flatMap { browsers.contains($0) ? $0 : nil }
        system = parts.last.flatMap { systems.contains($0) ? $0 : nil }
    }

    /// `Chrome on Windows`, `a browser on Android`, `Firefox`, or `an unknown browser`.
    public var description: String {
        switch (browser, system) {
        case (let browser?, let system?): "\(browser) on \(system)"
        case (let browser?, nil): browser
        case (nil, let system?): "a browser on \(system)"
        case (nil, nil): "an unknown browser"
        }
    }
}
