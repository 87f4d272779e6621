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
    /// `Change the password of account ‹user›` (`PasswordChangeText`), then the new password is
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

    // MARK: - The security delay

    /// Removals of the user's devices that wait for their recovery code or their delay: show each
    /// ("Someone is removing ‹device› — it goes at ‹executesAt›. Cancel?") and cancel the ones the
    /// user did not ask for. No prompt; needs a device session (``logIn()``).
    public func deviceRemovals() async throws(ClientError) -> [Wire.DeviceRemoval] {
        let session = try currentSession()
        return try await authorized { () async throws(ClientError) in try await api.deviceRemovals(token: session) }
    }

    /// Cancels a removal: the device stays. Any enrolled device may, in its first day too.
    public func cancelDeviceRemoval(_ removal: Wire.DeviceRemoval) async throws(ClientError) {
        let session = try currentSession()
        try await authorized { () async throws(ClientError) in try await api.cancelDeviceRemoval(id: removal.id, token: session) }
    }

    /// The lost-phone case without another device: asks to remove `deviceID` with a primary
    /// session; a recovery code goes to the user (``confirmDeviceRemoval(_:code:_:)``). The removal
    /// happens a day after the code is entered unless one of the user's devices cancels it.
    public func requestDeviceRemoval(deviceID: String, _ primary: PrimarySession) async throws(ClientError) -> Wire.DeviceRemoval {
        try await api.requestDeviceRemoval(Wire.DeviceRemovalCreation(deviceId: deviceID), token: primary.token)
    }

    /// Schedules the removal with the code the user received (the same primary session that asked).
    public func confirmDeviceRemoval(_ removal: Wire.DeviceRemoval, code: String, _ primary: PrimarySession) async throws(ClientError)
        -> Wire.DeviceRemoval
    {
        try await api.confirmDeviceRemoval(id: removal.id, Wire.RecoveryCodeEntry(code: code), token: primary.token)
    }
}
