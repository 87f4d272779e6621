import BioAuthCore
import Foundation

/// What a passkey registration's finish answered: the passkey is a device now, or (the account
/// has a device already) it waits in an enrolment request that a device approves with
/// its `bindingCode` before ``ServerAPI/completePasskeyRegistration(_:token:)``.
public enum PasskeyRegistrationOutcome: Sendable, Hashable {
    case registered(Wire.Device)
    case awaitingApproval(Wire.EnrolmentRequest)
}

extension ServerAPI {
    // MARK: Passkeys (docs/Protocol.md, flow 7): what a browser's page sends

    /// `POST /v1/passkeys/registration/challenge`: the options for `navigator.credentials.create()`.
    public func passkeyRegistrationChallenge(_ body: Wire.PasskeyRegistrationChallengeRequest, token: BearerToken)
        async throws(ClientError) -> Wire.PasskeyCreationOptions
    {
        try await call(.post, "/v1/passkeys/registration/challenge", body, token: token)
    }

    /// `POST /v1/passkeys/registration/finish`: 201 with the device, or 202 with the enrolment
    /// request a device must approve first.
    public func finishPasskeyRegistration(_ body: Wire.PasskeyRegistrationFinish, token: BearerToken)
        async throws(ClientError) -> PasskeyRegistrationOutcome
    {
        let (status, answer): (Int, Data) = try await exchange(.post, "/v1/passkeys/registration/finish", body, token: token)
        let decoder = JSONDecoder()
        if status == 201, let device = try? decoder.decode(Wire.Device.self, from: answer) { return .registered(device) }
        if status == 202, let request = try? decoder.decode(Wire.EnrolmentRequest.self, from: answer) { return .awaitingApproval(request) }
        throw ClientError(.protocolViolation)
    }

    /// `POST /v1/passkeys/registration/complete`: the approved request's passkey becomes a device.
    public func completePasskeyRegistration(_ body: Wire.PasskeyRegistrationCompletion, token: BearerToken)
        async throws(ClientError) -> Wire.Device
    {
        try await call(.post, "/v1/passkeys/registration/complete", body, token: token)
    }

    /// `POST /v1/passkeys/login/challenge`: the options for `navigator.credentials.get()`.
    public func passkeyLoginChallenge(_ body: Wire.PasskeyLoginChallengeRequest) async throws(ClientError)
        -> Wire.PasskeyRequestOptions
    {
        try await call(.post, "/v1/passkeys/login/challenge", body)
    }

    /// `POST /v1/passkeys/login/finish`: the session a verified assertion opens (DPoP-bound when
    /// this API has a prover).
    public func finishPasskeyLogin(_ body: Wire.PasskeyLoginFinish) async throws(ClientError) -> Wire.Session {
        try await call(.post, "/v1/passkeys/login/finish", body, atTokenEndpoint: true)
    }
}
