import BioAuthCore
import Foundation

/// What the app's backend may do for a user whose login it owns — never a password account's,
/// nor one outside its declared ids (404) — with an API key of the
/// ``ApiKeyScope/users`` scope (``ApiKeyScope/recovery`` to vouch for an enrolment): the same
/// withdrawal rules as the user's own requests (`WritePlan.revokeDevice(id:userID:at:audit:)`),
/// every change and every refusal audited with the key's id (``RequestInfo/apiKeyID``).
///
/// Reached through ``BioAuthService/users``; `BioAuthHTTP` serves it under `/v1/backend/users/{userId}/`.
public struct UserAdministration: Flow {
    let context: FlowContext

    /// The user's devices in creation order, revoked ones too.
    public func devices(of userID: UserID, request: RequestInfo) async throws(ServerError) -> [DeviceRecord] {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            try await run(request) { try await self.store.devices(userID: userID) }
        }
    }

    /// The user's sessions that are neither revoked nor expired.
    public func sessions(of userID: UserID, request: RequestInfo) async throws(ServerError) -> [SessionRecord] {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let now = clock.now()
            return try await run(request) { try await self.store.sessions(userID: userID) }.filter {
                $0.revokedAt == nil && $0.expiresAt > now
            }
        }
    }

    /// Revokes one active device of the user, with its sessions and approvals (404 otherwise).
    public func revokeDevice(id: DeviceID, of userID: UserID, request: RequestInfo) async throws(ServerError) {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let id = try Validate.deviceID(id)
            let audit = event(.deviceRevoked, user: userID, device: id, request: request)
            guard
                try await run(
                    request, { try await self.writer.apply(.revokeDevice(id: id, userID: userID, at: self.clock.now(), audit: audit)) }
                ).wasApplied
            else {
                throw ServerError(.notFound, field: "deviceId")
            }
            log(audit, request: request)
        }
    }

    /// Revokes every device of the user, every session and every unredeemed approval
    /// (`WritePlan.revokeDevices(userID:at:audit:)`): what was revoked, counted.
    public func revokeAllDevices(of userID: UserID, request: RequestInfo) async throws(ServerError) -> (devices: Int, sessions: Int) {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let audit = event(.deviceRevoked, user: userID, reason: .allDevices, request: request)
            let outcome = try await run(request) {
                try await self.writer.apply(.revokeDevices(userID: userID, at: self.clock.now(), audit: audit))
            }
            log(audit, request: request)
            return (outcome.revokedDevices, outcome.revokedSessions)
        }
    }

    /// Revokes one active session of the user and the approvals it obtained (404 otherwise).
    public func revokeSession(id: SessionID, of userID: UserID, request: RequestInfo) async throws(ServerError) {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let id = try Validate.serverAssigned(id, field: "sessionId")
            let audit = event(.sessionRevoked, user: userID, request: request)
            guard
                try await run(
                    request, { try await self.writer.apply(.revokeSession(id: id, userID: userID, at: self.clock.now(), audit: audit)) }
                ).wasApplied
            else { throw ServerError(.notFound, field: "sessionId") }
            log(audit, request: request)
        }
    }

    /// Revokes every session of the user and every unredeemed approval; devices stay enrolled.
    public func revokeAllSessions(of userID: UserID, request: RequestInfo) async throws(ServerError) -> Int {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let audit = event(.sessionsRevoked, user: userID, reason: .allSessions, request: request)
            let count = try await run(request) {
                try await self.writer.apply(.revokeSessions(userID: userID, at: self.clock.now(), audit: audit))
            }.revokedSessions
            log(audit, request: request)
            return count
        }
    }

    /// The user's enrolment requests waiting for an approval or a recovery code.
    public func pendingEnrolmentRequests(of userID: UserID, request: RequestInfo) async throws(ServerError) -> [EnrolmentRequestRecord] {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let now = clock.now()
            return try await run(request) { try await self.store.enrolmentRequests(userID: userID, now: now) }.filter {
                $0.isPending(at: now)
            }
        }
    }

    /// Ends a request of the user that is pending, or approved and unused
    /// (``EnrolmentRequestEnding/cancelled``): 404 for another user's or an unknown one, 410 once ended.
    public func cancelEnrolmentRequest(id: EnrolmentRequestID, of userID: UserID, request: RequestInfo) async throws(ServerError) {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let record = try await openRequest(id, of: userID, request: request)
            let audit = event(
                .enrolmentRequestEnded, user: userID, device: record.deviceID, reason: AuditReason(EnrolmentRequestEnding.cancelled),
                request: request)
            let now = clock.now()
            guard
                try await run(
                    request,
                    { try await self.writer.run(OwnedRequestDecision.cancel(id: record.id, userID: userID, now: now, audit: audit)) })
            else {
                throw Self.ended
            }
            log(audit, request: request)
        }
    }

    /// Vouches for a pending request of the user after the backend's own account recovery (its
    /// e-mail link, its support desk): the request is approved as a recovery code would approve
    /// it, and the device that made it enrols with it. The new key then has its cool-down like
    /// any recovered key (``EnrolmentPolicy/isCoolingDown(_:among:at:)``). 404 for another user's
    /// or an unknown request, 410 once ended, 409 when it is already approved.
    public func approveEnrolmentRequest(id: EnrolmentRequestID, of userID: UserID, request: RequestInfo) async throws(ServerError) {
        try await refusalsAudited(userID, request) { userID throws(ServerError) in
            let record = try await openRequest(id, of: userID, request: request)
            guard !record.isApproved else { throw ServerError(.conflict, field: "id", detail: "already approved") }
            let audit = event(
                .enrolmentApproved, user: userID, device: record.deviceID, reason: .approvedByBackend,
                request: request)
            let now = clock.now()
            guard
                try await run(
                    request,
                    { try await self.writer.run(OwnedRequestDecision.vouch(id: record.id, userID: userID, now: now, audit: audit)) }
                )
            else {
                // Another vouch (or a code) approved it in between: approved, not ended — 409.
                let current = try await run(request) { try await self.store.enrolmentRequest(id: record.id) }
                if current?.isApproved == true && current?.hasEnded == false {
                    throw ServerError(.conflict, field: "id", detail: "already approved")
                }
                throw Self.ended
            }
            log(audit, request: request)
        }
    }

    private static let ended = ServerError(.gone, field: "id", detail: "this enrolment request has ended")

    /// The user's request, not ended and not expired (404 if it is another user's, unknown or
    /// expired; 410 once ended).
    private func openRequest(_ id: EnrolmentRequestID, of userID: UserID, request: RequestInfo) async throws(ServerError)
        -> EnrolmentRequestRecord
    {
        let id = try Validate.serverAssigned(id, field: "id")
        guard let record = try await run(request, { try await self.store.enrolmentRequest(id: id) }), record.userID == userID,
            record.expiresAt > clock.now()
        else { throw ServerError(.notFound, field: "id") }
        guard !record.hasEnded else { throw Self.ended }
        return record
    }

    /// The backend acts only on its own users: never on a password account's id (the built-in login
    /// owns it), nor, where ``ServerConfiguration/backendUserIDPrefixes`` declares the backend's
    /// ids, on one outside them. Either is 404 `userId`, as an unknown user.
    private func requireBackendOwns(_ userID: UserID, _ request: RequestInfo) async throws(ServerError) {
        if !configuration.backendUserIDPrefixes.isEmpty && !configuration.isDeclaredBackendUserID(userID) {
            throw ServerError(.notFound, field: "userId")
        }
        let lockout = windows.lockout(client: request.clientAddress, at: clock.now())
        if try await run(request, { try await self.store.passwordLoginState(username: userID, lockout: lockout) }).user != nil {
            throw ServerError(.notFound, field: "userId")
        }
    }

    /// Runs `body` for a validated user id the backend owns; a refusal is audited (``AuditKind/backendRequestRefused``,
    /// the code and field as its reason, the key's id) before it is thrown. A failing store is
    /// not a refusal, and is not audited here.
    private func refusalsAudited<T: Sendable>(
        _ userID: UserID, _ request: RequestInfo, _ body: (UserID) async throws(ServerError) -> T
    ) async throws(ServerError) -> T {
        do {
            let userID = try Validate.userID(userID)
            try await requireBackendOwns(userID, request)
            return try await body(userID)
        } catch {
            if error.code != .unavailable && error.code != .internalError {
                let known = (try? Validate.userID(userID)) != nil
                await audit(.backendRequestRefused, user: known ? userID : nil, reason: AuditReason(refusal: error), request: request)
            }
            throw error
        }
    }
}

extension WritePlan {
    /// The backend approves the request in `rows` (read locked) after its own recovery: only a
    /// request of `userID` that is pending — not approved, ended or expired — is approved, by no
    /// device, as a recovery code approves it.
    package static func vouchForRequest(_ rows: LockedRows, userID: UserID, at now: Date, audit: AuditEvent) -> (
        verdict: Bool, plan: WritePlan
    ) {
        guard let request = rows.enrolmentRequest, request.userID == userID, request.isPending(at: now) else { return (false, WritePlan()) }
        var plan = WritePlan()
        plan.add(.approveEnrolmentRequest(id: request.id, at: now, byDevice: nil))
        plan.audit(audit)
        return (true, plan)
    }
}
