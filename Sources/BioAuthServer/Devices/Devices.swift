import BioAuthCore
import Foundation
import Logging

/// A user's enrolled devices: listed, renamed, revoked (with every session each opened).
struct Devices: Flow {
    let context: FlowContext

    func list(of session: SessionRecord, request: RequestInfo) async throws(ServerError) -> [DeviceRecord] {
        try requireAccountSession(session)
        return try await run(request) { try await self.store.devices(userID: session.userID) }
    }

    func rename(id: DeviceID, name: String, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try requireAccountSession(session)
        let id = try Validate.deviceID(id)
        let name = try Validate.deviceName(name)
        let audit = event(.deviceRenamed, user: session.userID, device: id, request: request)
        let plan = WritePlan.renameDevice(id: id, userID: session.userID, name: name, audit: audit)
        guard try await run(request, { try await self.store.apply(plan) }).wasApplied else {
            throw ServerError(.notFound, field: "deviceId")
        }
        log(audit)
    }

    func revoke(id: DeviceID, by session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try requireAccountSession(session)
        let id = try Validate.deviceID(id)
        let audit = event(.deviceRevoked, user: session.userID, device: id, request: request)
        let plan = WritePlan.revokeDevice(id: id, userID: session.userID, at: clock.now(), audit: audit)
        guard try await run(request, { try await self.store.apply(plan) }).wasApplied else {
            throw ServerError(.notFound, field: "deviceId")
        }
        log(audit)
    }
}
