import Foundation

/// How often ``BioAuthClient`` asks for Face ID / Touch ID, in the spirit of Auth0.swift's
/// `BiometricPolicy`.
///
/// Every choice but ``always`` lets one match authorise several signatures: a weaker choice,
/// documented in `docs/ThreatModel.md` (someone handed the unlocked phone within the window signs
/// without a match). The context is never reused across an enrollment change: the key dies with it.
public enum BiometricPolicy: Sendable, Hashable {
    /// One prompt for every login and approval. The default.
    case always
    /// One prompt, then the authenticated context signs again without one for `timeout` seconds.
    case session(timeout: TimeInterval)
    /// One prompt, then no other until ``BioAuthClient/endBiometricSession()`` — call it when the
    /// app leaves the foreground.
    case appLifecycle
}
