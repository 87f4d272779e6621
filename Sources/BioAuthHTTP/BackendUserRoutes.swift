import BioAuthCore
import BioAuthServer
import Foundation
import Hummingbird

extension BioAuthRoutes {
    /// The backend API for one user (`/v1/backend/users/{userId}/…`): `users` for the scope
    /// `users`, `recovery` for the scope `recovery`.
    func addUserAdministration<Context: BioAuthRequestContext>(_ users: RouterGroup<Context>, recovery: RouterGroup<Context>) {
        users.get("devices") { request, context in
            try json(try await service.users.devices(of: pathID(context, "userId"), request: info(request, context)).map(Wire.Device.init))
        }
        users.delete("devices") { request, context in
            let revoked = try await service.users.revokeAllDevices(of: pathID(context, "userId"), request: info(request, context))
            return try json(Wire.RevokedDevices(devices: revoked.devices, sessions: revoked.sessions))
        }
        users.delete("devices/:id") { request, context in
            try await service.users.revokeDevice(id: pathID(context), of: pathID(context, "userId"), request: info(request, context))
            return Response(status: .noContent)
        }
        users.get("sessions") { request, context in
            try json(
                try await service.users.sessions(of: pathID(context, "userId"), request: info(request, context)).map {
                    Wire.SessionInfo($0, current: false)
                })
        }
        users.delete("sessions") { request, context in
            try json(
                Wire.RevokedSessions(
                    revoked: try await service.users.revokeAllSessions(of: pathID(context, "userId"), request: info(request, context))))
        }
        users.delete("sessions/:id") { request, context in
            try await service.users.revokeSession(id: pathID(context), of: pathID(context, "userId"), request: info(request, context))
            return Response(status: .noContent)
        }
        users.get("enrolment-requests") { request, context in
            try json(
                try await service.users.pendingEnrolmentRequests(of: pathID(context, "userId"), request: info(request, context)).map(
                    Wire.EnrolmentRequest.init))
        }
        users.delete("enrolment-requests/:id") { request, context in
            try await service.users.cancelEnrolmentRequest(
                id: pathID(context), of: pathID(context, "userId"), request: info(request, context))
            return Response(status: .noContent)
        }
        recovery.post("enrolment-requests/:id/approve") { request, context in
            try await service.users.approveEnrolmentRequest(
                id: pathID(context), of: pathID(context, "userId"), request: info(request, context))
            return Response(status: .noContent)
        }
    }
}
