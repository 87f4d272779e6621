import Foundation

/// What revoking, re-keying and logging out take away, written once for every store: a device
/// that can no longer be trusted takes its sessions, every approval not yet redeemed and every
/// challenge not yet finished with it; a session that ends takes the approvals it obtained.
extension WritePlan {
    /// Revokes an active device of the user, every session it opened and every approval it signed
    /// or its sessions obtained.
    package static func revokeDevice(id: DeviceID, userID: UserID, at: Date, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.require(.activeDevice(id: id, userID: userID))
        plan.add(.revokeDevice(id: id, at: at))
        plan.withdrawDevice(id: id, userID: userID, at: at)
        plan.audit(audit)
        return plan
    }

    /// Revokes every active device of the user, every session (device or primary) and every
    /// approval not yet redeemed: "I lost my phone" when the backend cannot tell which device,
    /// or an account taken over. The user enrols again from a primary login (or grant) and a
    /// recovery, as after losing every device.
    package static func revokeDevices(userID: UserID, at: Date, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.add(.revokeDevices(userID: userID, at: at))
        plan.add(.withdrawApprovals(.allOf(userID: userID)))
        plan.add(.deleteChallenges(.allOf(userID: userID)))
        plan.add(.revokeSessions(.allOf(userID: userID), at: at))
        plan.audit(audit)
        return plan
    }

    /// What a device whose key was replaced (re-enrolment after an enrollment change) loses: the
    /// sessions the old key opened, the approvals it signed or they obtained, and the challenges
    /// issued to it (a step-up asked of the old key is never finished by the new one).
    package static func replacedKey(deviceID: DeviceID, userID: UserID, at: Date) -> WritePlan {
        var plan = WritePlan()
        plan.withdrawDevice(id: deviceID, userID: userID, at: at)
        return plan
    }

    /// Revokes one active session of the user and the approvals it obtained.
    package static func revokeSession(id: SessionID, userID: UserID, at: Date, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.require(.activeSession(id: id, userID: userID))
        plan.endSession(id: id, userID: userID, at: at)
        plan.audit(audit)
        return plan
    }

    /// A spent refresh token came back: a copy is in other hands, so its session (revoked or not)
    /// ends with the approvals it obtained. The store finds the session inside its transaction.
    package static func reusedRefreshToken(sessionID: SessionID, userID: UserID, at: Date, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.endSession(id: sessionID, userID: userID, at: at)
        plan.audit(audit)
        return plan
    }

    /// Logs the user out everywhere: every session, and every approval not yet redeemed.
    package static func revokeSessions(userID: UserID, at: Date, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.add(.withdrawApprovals(.allOf(userID: userID)))
        plan.add(.revokeSessions(.allOf(userID: userID), at: at))
        plan.audit(audit)
        return plan
    }

    /// Renames a device of the user (revoked or not).
    package static func renameDevice(id: DeviceID, userID: UserID, name: String, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.require(.ownedDevice(id: id, userID: userID))
        plan.add(.renameDevice(id: id, name: name))
        plan.audit(audit)
        return plan
    }

    private mutating func endSession(id: SessionID, userID: UserID, at: Date) {
        add(.withdrawApprovals(.obtainedBy(sessionID: id)))
        add(.revokeSessions(.one(id: id, userID: userID), at: at))
    }

    private mutating func withdrawDevice(id: DeviceID, userID: UserID, at: Date) {
        // Approvals first: the selection names the device's sessions, revoked or not.
        add(.withdrawApprovals(.ofDevice(id: id, userID: userID)))
        add(.revokeSessions(.openedBy(deviceID: id, userID: userID), at: at))
        add(.deleteChallenges(.ofDevice(id: id, userID: userID)))
    }
}
