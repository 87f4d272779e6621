import BioAuthCore
import Foundation

/// What the owner does for the account from this phone: read its security events, change the password.
extension BioAuthClient {
    /// The account's security events after `since`, newest first (at most 100): someone asked to
    /// add a device or for a recovery code, a device was enrolled, re-keyed or revoked, the
    /// password changed — each with the address it came from. Show the new ones ("Someone at
    /// ‹client› asked to add ‹device› — cancel?") and keep the newest `at` for the next call; a
    /// request to add a device is cancelled with ``cancelEnrolment(_:)``. No prompt.
    public func securityEvents(since: Date? = nil) async throws(ClientError) -> [Wire.SecurityEvent] {
        let session = try currentSession()
        let seconds = since.map { Int64(max(0, $0.timeIntervalSince1970.rounded(.down))) }
        return try await authorized { () async throws(ClientError) in try await api.securityEvents(since: seconds, token: session) }
    }

    /// Changes the account's built-in password with this phone's approval: one prompt showing
    /// `Change the password of account ‹user›` (``PasswordChangeText``), then the new password is
    /// sent with the approval. Every other password session of the user ends; this phone's stays.
    /// A phone in its first day cannot approve (`forbidden`, reason `coolingDown`).
    public func changePassword(to newPassword: String) async throws(ClientError) {
        let registration = try enrolled()
        let approval = try await approve(operation: PasswordChangeText.make(userID: registration.userID))
        let session = try currentSession()
        try await authorized { () async throws(ClientError) in
            try await api.changePassword(Wire.PasswordChange(password: newPassword, approval: approval.token.value), token: session)
        }
    }
}
