import BioAuthCore
import Crypto
import Foundation

/// Changing the built-in password: only with a step-up approval of an enrolled device over
/// ``PasswordChangeText`` (so out of its cool-down), never with the old password alone. Whatever
/// the old password could have started ends: every other session below a device (password
/// sessions, screens a phone let in) with the approvals it obtained, and every enrolment request
/// still open; the caller's own session stays.
struct PasswordChange: Flow {
    let context: FlowContext

    func change(to newPassword: String, approval: String, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await authorize(.changePassword, session, request: request)
        guard configuration.passwordLogin else { throw ServerError(.notFound, detail: "password login is switched off") }
        let password = try Validate.password(newPassword)
        let token = try Validate.base64URL(approval, field: "approval", count: 32...32)
        let userID = session.userID
        let lockout = windows.lockout(client: request.clientAddress, at: clock.now())
        guard let user = try await run(request, { try await self.store.passwordLoginState(username: userID, lockout: lockout) }).user else {
            throw ServerError(.notFound, field: "userId", detail: "no password account")
        }
        let salt = SecretBytes.random(count: 16).data
        let hash = try await Account(context: context).hashNewPassword(password, salt: salt)
        let replaced = UserRecord(
            id: userID, passwordSalt: salt, passwordRounds: configuration.passwordRounds, passwordHash: hash, createdAt: user.createdAt)
        let audit = event(.passwordChanged, user: userID, device: session.deviceID, request: request)
        let now = clock.now(), keep = session.id,
            operationHash = Data(SHA256.hash(data: Data(PasswordChangeText.make(userID: userID.rawValue).utf8)))
        let changed = try await run(request) {
            try await self.writer.decide(locking: RowLocks(approval: TokenHash(of: token))) { rows in
                WritePlan.passwordChange(rows, to: replaced, operationHash: operationHash, keeping: keep, at: now, audit: audit)
            }.verdict
        }
        guard changed else {
            await self.audit(
                .approvalRejected, user: userID, device: session.deviceID, reason: AuditReason(FailureReason.approvalRejected),
                request: request)
            throw ServerError.authenticationFailed(.approvalRejected)
        }
        log(audit, request: request)
    }
}

extension WritePlan {
    /// A new password for `user` with the approval in `rows` (read locked): only an approval of
    /// that user for `operationHash` (``PasswordChangeText``), redeemable now and signed by a device
    /// that still holds the signing key, allows it. The approval is consumed, the password row
    /// replaced, every session below a device but `keeping` revoked with the approvals those
    /// obtained, and every open enrolment request of the user ended (`cancelled`); nothing is
    /// written otherwise.
    package static func passwordChange(
        _ rows: LockedRows, to user: UserRecord, operationHash: Data, keeping session: SessionID, at now: Date, audit: AuditEvent
    ) -> (verdict: Bool, plan: WritePlan) {
        guard let approval = rows.approval, rows.approvalSignerActive, approval.isRedeemable(for: operationHash, by: user.id, at: now)
        else {
            return (false, WritePlan())
        }
        var plan = WritePlan()
        plan.add(.redeemApproval(tokenHash: approval.tokenHash, at: now))
        plan.add(.replacePassword(user))
        plan.add(.withdrawApprovals(.obtainedBySessionsBelowDevicesOf(userID: user.id, except: session)))
        plan.add(.revokeSessions(.belowDevicesOf(userID: user.id, except: session), at: now))
        plan.add(.endOpenEnrolmentRequests(userID: user.id, at: now, ending: .cancelled))
        plan.audit(audit)
        return (true, plan)
    }
}
