import BioAuthCore
import BioAuthServer
import Foundation
import Hummingbird

extension BioAuthRoutes {
    /// Passkeys (`docs/Protocol.md`, WebAuthn Level 3 JSON): registration needs the user's session
    /// and, after the first device, an approval; login is anonymous.
    func addPasskeyRoutes<Context: BioAuthRequestContext>(v1: RouterGroup<Context>, authenticated: RouterGroup<Context>) {
        authenticated.post("passkeys/registration/challenge") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.PasskeyRegistrationChallengeRequest.self, request)
            return try json(try await service.beginPasskeyRegistration(session: session, name: body.name, request: info))
        }
        authenticated.post("passkeys/registration/finish") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            // An attestation statement's certificates make this body larger than the others.
            let body = try await decode(Wire.PasskeyRegistrationFinish.self, request, maxBodySize: PresentedAttestation.maximumBodySize)
            switch try await service.finishPasskeyRegistration(
                session: session, challengeID: try ChallengeID(body.challengeId), credential: body.credential, request: info)
            {
            case .enrolled(let device): return try json(Wire.Device(device), status: .created)
            case .awaitingApproval(let new):
                var reply = Wire.EnrolmentRequest(new.record)
                reply.bindingCode = new.bindingCode.text
                return try json(reply, status: .accepted)
            }
        }
        authenticated.post("passkeys/registration/complete") { request, context in
            let (session, info) = try context.authenticated(info(request, context))
            let body = try await decode(Wire.PasskeyRegistrationCompletion.self, request)
            let device = try await service.completePasskeyRegistration(
                session: session, enrolmentRequestID: EnrolmentRequestID(body.enrolmentRequestId), request: info)
            return try json(Wire.Device(device), status: .created)
        }
        v1.post("passkeys/login/challenge") { request, context in
            let body = try await decode(Wire.PasskeyLoginChallengeRequest.self, request)
            return try json(try await service.beginPasskeyLogin(username: body.username, request: info(request, context)))
        }
        v1.post("passkeys/login/finish") { request, context in
            let body = try await decode(Wire.PasskeyLoginFinish.self, request)
            return try json(
                Wire.Session(
                    try await service.finishPasskeyLogin(
                        challengeID: try ChallengeID(body.challengeId), credential: body.credential, request: info(request, context))))
        }
    }
}
