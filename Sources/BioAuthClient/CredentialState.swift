import BioAuth
import BioAuthCore
import Foundation

/// What the app's UI should offer, from what this phone holds — decided without a prompt or a
/// network call.
public enum CredentialState: Sendable, Hashable, CustomStringConvertible {
    /// No registration: offer sign-in with the primary login, then enrolment.
    case notEnrolled
    /// An enrolment started here waits for an approval or a recovery code
    /// (``BioAuthClient/enrolmentInProgress()``).
    case enrolmentPending
    /// Enrolled, no valid session: offer "Sign in with Face ID" (``BioAuthClient/logIn()``).
    case signedOut
    /// Enrolled with a valid device session.
    case signedIn
    /// The device key can no longer sign (a face or finger was added): offer the way back in
    /// (primary login, then ``BioAuthClient/reenrol(_:deviceName:)`` or a request).
    case reenrolmentRequired
    /// The device is locked, so the stored credentials cannot be read: wait for the unlock. Nothing is lost.
    case locked

    public var description: String {
        switch self {
        case .notEnrolled: "notEnrolled"
        case .enrolmentPending: "enrolmentPending"
        case .signedOut: "signedOut"
        case .signedIn: "signedIn"
        case .reenrolmentRequired: "reenrolmentRequired"
        case .locked: "locked"
        }
    }
}

extension BioAuthClient {
    /// The state now: no prompt, no network.
    public func credentialState() -> CredentialState {
        do {
            if try storage.pending() != nil { return .enrolmentPending }
            guard try storage.registration() != nil else { return .notEnrolled }
            guard try keyCondition() == .usable else { return .reenrolmentRequired }
            return try session() == nil ? .signedOut : .signedIn
        } catch  where error.code == .credentialsUnavailable {
            return .locked
        } catch {
            return .signedOut
        }
    }

    /// The state now, then each change, for as long as the caller iterates: after every call of
    /// this client that changes it (enrolment, login, logout, a refused session, a dead key found),
    /// and on ``refreshCredentialState()`` (call it when the app comes to the foreground: the device
    /// may have been unlocked, or a face added, in the meantime).
    public func credentialStates() -> AsyncStream<CredentialState> {
        let (stream, continuation) = AsyncStream.makeStream(of: CredentialState.self, bufferingPolicy: .bufferingNewest(8))
        let id = UUID()
        publishState()
        observers[id] = continuation
        let now = credentialState()
        if publishedState == nil { publishedState = now }
        continuation.yield(now)
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.removeObserver(id) }
        }
        return stream
    }

    /// Tells the observers of ``credentialStates()`` the state now, if it changed.
    public func refreshCredentialState() { publishState() }

    /// Whether a device session is stored and unexpired (false while the device is locked).
    public var hasValidSession: Bool { (try? session()) != nil }

    /// Whether a new access token can be had without a prompt: a stored, unexpired session with a refresh token.
    public var canRefresh: Bool {
        guard let stored = try? storage.session(), stored.refreshToken != nil else { return false }
        return Date(seconds: stored.expiresAt) > configuration.clock.now()
    }

    func publishState() {
        guard !observers.isEmpty else {
            publishedState = nil
            return
        }
        let state = credentialState()
        guard state != publishedState else { return }
        publishedState = state
        for continuation in observers.values { continuation.yield(state) }
    }

    func removeObserver(_ id: UUID) { observers[id] = nil }
}
