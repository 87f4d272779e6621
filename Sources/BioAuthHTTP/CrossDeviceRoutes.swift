import BioAuthCore
import BioAuthServer
import Foundation
import Hummingbird

extension BioAuthRoutes {
    /// A sign-in started on another screen and approved on a phone (`docs/Protocol.md`, flow 8):
    /// the screen's two calls are anonymous, the phone's need its device session.
    func addCrossDeviceRoutes<Context: BioAuthRequestContext>(v1: RouterGroup<Context>, authenticated: RouterGroup<Context>) {
        v1.post("cross-device/requests") { request, context in
            let body = try await decode(Wire.CrossDeviceStart.self, request)
            let started = try await service.startCrossDeviceSignIn(
                username: body.username, userAgent: request.headers[.userAgent], screenToken: body.screenToken,
                request: info(request, context))
            let interval = service.configuration.crossDevice?.pollInterval ?? 3
            return try json(
                Wire.CrossDeviceStarted(
                    id: started.record.id.rawValue, number: started.number, pollToken: started.pollToken,
                    expiresAt: started.record.expiresAt.seconds, interval: interval), status: .created)
        }
        v1.post("cross-device/requests/:id/poll") { request, context in
            let body = try await decode(Wire.CrossDevicePoll.self, request)
            let found = try await service.collectCrossDeviceSignIn(
                id: pathID(context), pollToken: body.pollToken, request: info(request, context))
            return try json(Wire.CrossDevicePollResult(found))
        }
        authenticated.get("cross-device/requests") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            return try json(try await service.pendingCrossDeviceRequests(of: session, request: info).map(Wire.CrossDeviceRequest.init))
        }
        authenticated.post("cross-device/requests/:id/approve") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.EnrolmentApproval.self, request)
            try await service.approveCrossDeviceRequest(id: pathID(context), approval: body.approval, session: session, request: info)
            return Response(status: .noContent)
        }
        authenticated.delete("cross-device/requests/:id") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            try await service.denyCrossDeviceRequest(id: pathID(context), session: session, request: info)
            return Response(status: .noContent)
        }
    }
}

extension Wire.CrossDevicePollResult {
    init(_ collection: CrossDeviceCollection) {
        switch collection {
        case .pending: self.init(status: "pending")
        case .session(let grant, let screenToken): self.init(status: "approved", session: Wire.Session(grant), screenToken: screenToken)
        case .ended(let ending): self.init(status: "ended", endedBy: ending?.rawValue ?? "expired")
        }
    }
}

extension Wire.CrossDeviceRequest {
    init(_ record: CrossDeviceRequestRecord) {
        self.init(
            id: record.id.rawValue, text: record.text, requester: record.requester, userAgent: record.screen.description,
            createdAt: record.createdAt.seconds, expiresAt: record.expiresAt.seconds)
    }
}
