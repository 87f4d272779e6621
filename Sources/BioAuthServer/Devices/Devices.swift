import BioAuthCore
import Foundation
import Logging

/// A user's enrolled devices: listed by any account session; renamed and revoked (with every
/// session each opened) only from an enrolled device (``Authority``).
struct Devices: Flow {
    let context: FlowContext

    func list(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRecord] {
        try authorizeUnread(.listDevices, session)
        return try await run(request) { try await self.store.devices(userID: session.userID) }
    }

    func rename(id: DeviceID, name: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        let caller = try await authorize(.renameDevice, session, request: request)
        let id = try Validate.deviceID(id)
        let name = try Validate.deviceName(name)
        try await requireMayManage(id, by: caller, request: request)
        let audit = event(.deviceRenamed, user: session.userID, device: id, request: request)
        let plan = WritePlan.renameDevice(id: id, userID: session.userID, name: name, audit: audit)
        guard try await run(request, { try await self.writer.apply(plan) }).wasApplied else {
            throw ServerError(.notFound, field: "deviceId")
        }
        log(audit, request: request)
    }

    func revoke(id: DeviceID, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        let caller = try await authorize(.revokeDevice, session, request: request)
        let id = try Validate.deviceID(id)
        try await requireMayManage(id, by: caller, request: request)
        let audit = event(.deviceRevoked, user: session.userID, device: id, request: request)
        let plan = WritePlan.revokeDevice(id: id, userID: session.userID, at: clock.now(), audit: audit)
        guard try await run(request, { try await self.writer.apply(plan) }).wasApplied else {
            throw ServerError(.notFound, field: "deviceId")
        }
        log(audit, request: request)
    }

    /// A device session of a device in its cool-down may touch only itself and newer devices
    /// (``EnrolmentPolicy/mayManage(_:from:)``): 403 for an older one.
    private func requireMayManage(_ id: DeviceID, by caller: Caller, request: RequestInfo) async throws(ServerError) {
        guard caller.credential == .coolingDevice, let actor = caller.device else { return }
        // 404 below
        guard let target = try await run(request, { try await self.store.device(id: id) }), target.userID == actor.userID else { return }
        if !configuration.enrolment.mayManage(target, from: actor) { throw Self.coolingDown(field: "deviceId") }
    }
}
