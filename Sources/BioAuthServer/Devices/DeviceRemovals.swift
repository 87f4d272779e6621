import BioAuthCore
import Foundation
import Logging

/// The security delay (``DeviceRemovalRecord``): the owner with no other device removes a lost
/// one with the password and a recovery code, after a delay every enrolled device sees and may
/// cancel. A backend that owns the user revokes at once instead (`DELETE
/// /v1/backend/users/{userId}/devices/{id}`): it answers for its own login.
struct DeviceRemovals: Flow {
    let context: FlowContext

    /// Asks to remove `deviceID`: sends a recovery code to the owner and returns the removal,
    /// waiting for it. 404 for a device that is not the user's or is revoked; 409 while a removal
    /// of it is scheduled; 403 without a recovery channel; 429 when the requester's daily codes
    /// are spent.
    func request(deviceID: DeviceID, session: SessionRecord, request: RequestInfo) async throws(ServerError) -> DeviceRemovalRecord {
        try await authorize(.requestDeviceRemoval, session, request: request)
        guard let channel = context.recoveryChannel else { throw ServerError(.forbidden, detail: "noRecoveryChannel") }
        let id = try Validate.deviceID(deviceID)
        guard let device = try await run(request, { try await self.store.device(id: id) }), device.userID == session.userID,
            !device.isRevoked
        else {
            throw ServerError(.notFound, field: "deviceId")
        }
        let now = clock.now(), userID = session.userID
        let removals = try await run(request) { try await self.store.deviceRemovals(userID: userID) }
        if removals.contains(where: { $0.deviceID == id && $0.status(at: now) == .scheduled }) {
            throw ServerError(.conflict, field: "deviceId", detail: "a removal of this device is scheduled already")
        }
        let code = RecoveryCode.random(), policy = configuration.enrolment
        let removal = DeviceRemovalRecord(
            id: .random(), userID: userID, deviceID: id, sessionID: session.id, requester: request.clientAddress, createdAt: now,
            codeExpiresAt: now.addingTimeInterval(policy.requestTTL), codeHash: code.hash)
        let audit = event(.deviceRemovalRequested, user: userID, device: id, request: request)
        let decided = try await run(request) {
            try await self.writer.decide(
                locking: RowLocks(counters: FailureSubject.recoveryCodeCounters(userID, client: removal.requester))
            ) { rows in
                WritePlan.requestDeviceRemoval(removal, rows, limits: policy.recoveryCodes, audit: audit)
            }
        }
        if let until = decided.verdict {
            await self.audit(
                .rateLimited, user: userID, device: id,
                reason: AuditReason(limit: FailureSubject.recoveryCodes(userID, client: removal.requester)),
                request: request)
            throw ServerError(.rateLimited, detail: "too many recovery codes", retryAfter: retryAfter(until: until, from: now))
        }
        guard decided.outcome.wasApplied else { throw ServerError(.notFound, field: "deviceId") }  // revoked meanwhile
        do { try await channel.deliver(RecoveryMessage(code, for: removal, of: device, delay: policy.lostDeviceDelay)) } catch {
            logger(for: request).error(
                "recovery code delivery failed", metadata: metadata(audit).merging(["error": "\(type(of: error))"]) { $1 })
            throw ServerError(.unavailable, detail: "the recovery code could not be delivered", retryAfter: 30)
        }
        log(audit, request: request)
        return removal
    }

    /// The recovery code for a removal this session asked for: schedules it. A wrong code is the
    /// uniform 401, and the last allowed one ends the removal; 410 for one that ended or whose
    /// code expired.
    func confirm(id: DeviceRemovalID, code: String, session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> DeviceRemovalRecord
    {
        try authorizeUnread(.confirmDeviceRemoval, session)
        let removal = try await own(id, of: session, request: request)
        guard removal.sessionID == session.id else { throw ServerError(.notFound, field: "id") }
        let entered = try Validate.recoveryCode(code)
        let now = clock.now(), policy = configuration.enrolment, sessionID = session.id
        guard removal.status(at: now) == .awaitingCode else { throw Self.ended }
        let audit = event(
            .deviceRemovalScheduled, user: removal.userID, device: removal.deviceID, reason: .recoveryCode,
            request: request)
        let decided = try await run(request) {
            try await self.writer.decide(locking: RowLocks(deviceRemoval: removal.id)) { rows in
                WritePlan.confirmDeviceRemoval(
                    rows, sessionID: sessionID, entered: entered, maxAttempts: policy.maxRecoveryAttempts, delay: policy.lostDeviceDelay,
                    at: now, audit: audit)
            }
        }
        switch decided.verdict {
        case .scheduled(let scheduled):
            log(audit, request: request)
            return scheduled
        case .wrongCode:
            log(audit.rejectedRecovery, request: request)
            throw ServerError.authenticationFailed(.recoveryCodeRejected)
        case .unavailable:
            throw Self.ended
        }
    }

    /// The user's removals that still matter: waiting for their code, or scheduled.
    func list(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRemovalRecord] {
        try authorizeUnread(.listDeviceRemovals, session)
        let now = clock.now(), userID = session.userID
        return try await run(request) { try await self.store.deviceRemovals(userID: userID) }.filter { $0.isOpen(at: now) }
    }

    /// A device of the user with an older key than the target's (or the target, while it is the
    /// user's oldest active device) ends an open removal: the device stays
    /// (``DeviceRemovalRecord/mayCancel(removalOf:by:among:)``). 403 `olderDeviceRequired` for
    /// any other device; 410 for one that ended already.
    func cancel(id: DeviceRemovalID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await authorize(.cancelDeviceRemoval, session, request: request)
        let removal = try await own(id, of: session, request: request)
        let now = clock.now(), userID = session.userID
        let devices = try await run(request) { try await self.store.devices(userID: userID) }
        guard let actor = devices.first(where: { $0.id == session.deviceID && !$0.isRevoked }),
            DeviceRemovalRecord.mayCancel(removalOf: devices.first { $0.id == removal.deviceID }, by: actor, among: devices)
        else {
            throw ServerError(.forbidden, field: "id", detail: "olderDeviceRequired")
        }
        let audit = event(.deviceRemovalCancelled, user: userID, device: removal.deviceID, request: request)
        let decided = try await run(request) {
            try await self.writer.decide(locking: RowLocks(deviceRemoval: removal.id)) { rows in
                WritePlan.cancelDeviceRemoval(rows, userID: userID, at: now, audit: audit)
            }
        }
        guard decided.verdict else { throw Self.ended }
        log(audit, request: request)
    }

    /// Revokes the devices whose removal is due (the sweep, once a minute): how many.
    func executeDue() async throws -> Int {
        let now = clock.now()
        var revoked = 0
        for removal in try await store.dueDeviceRemovals(now: now, limit: 100) {
            let device = try await store.device(id: removal.deviceID)
            let active = device.map { $0.userID == removal.userID && !$0.isRevoked } ?? false
            let audit = AuditEvent(
                at: now, kind: .deviceRevoked, userID: removal.userID, deviceID: removal.deviceID,
                reason: .securityDelay)
            let decided = try await writer.decide(locking: RowLocks(deviceRemoval: removal.id)) { rows in
                WritePlan.executeDeviceRemoval(rows, deviceActive: active, at: now, audit: audit)
            }
            if decided.verdict && decided.outcome.wasApplied {
                revoked += 1
                log(audit)
            }
        }
        return revoked
    }

    /// The user's removal `id`, 404 for anyone else's or an unknown one.
    private func own(_ id: DeviceRemovalID, of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> DeviceRemovalRecord
    {
        let id = try Validate.serverAssigned(id, field: "id")
        let userID = session.userID
        guard let removal = try await run(request, { try await self.store.deviceRemovals(userID: userID) }).first(where: { $0.id == id })
        else {
            throw ServerError(.notFound, field: "id")
        }
        return removal
    }

    private static let ended = ServerError(.gone, detail: "this device removal has ended")
}
