import BioAuth
import BioAuthCore
import BioAuthEmulator
import Foundation

/// What an app on an (emulated) phone does against `bioauth-server`: primary login, enrolment,
/// biometric login, step-up. Shared by `bioauth demo` and `bioauth device`.
public struct DeviceAgent: Sendable {
    public let device: EmulatedDevice
    public let server: ServerClient
    public static let keyTag = "bioauth.login-key"

    public init(device: EmulatedDevice, server: ServerClient) {
        self.device = device
        self.server = server
    }

    public var signer: BiometricSigner { BiometricSigner(platform: device.platform, tag: Self.keyTag) }

    /// Creates the user if needed; returns a primary session token.
    public func primaryLogin(user: String, password: String, createIfMissing: Bool = true) async throws -> String {
        if createIfMissing {
            let created = try await server.post("/v1/users", ["username": user, "password": password])
            guard created.isSuccess || created.status == 409 else { throw failure("sign-up", created) }
        }
        let login = try await server.post("/v1/login/password", ["username": user, "password": password])
        guard login.status == 200 else { throw failure("password login", login) }
        return login["token"]
    }

    /// Creates a new enclave key and enrols it (proof of possession: one prompt). Returns the device id.
    public func enrol(primaryToken: String, name: String, replacing deviceID: String? = nil) async throws -> String {
        let key: DevicePublicKey
        do { key = try signer.createKey() } catch { throw CLIError("could not create the enclave key: \(error.code)", hint: hint(for: error)) }
        var body = ["name": name, "publicKey": Base64URL.encode(key.spkiRepresentation)]
        if let deviceID { body["replacesDeviceId"] = deviceID }
        let challenge = try await server.post("/v1/devices/registration/challenge", body, token: primaryToken)
        guard challenge.status == 200 else { throw failure("registration challenge", challenge) }
        let signature = try await sign(challenge, reason: "Enrol this iPhone for sign-in")
        let finish = try await server.post("/v1/devices/registration/finish", ["challengeId": challenge["challengeId"], "signature": Base64URL.encode(signature)], token: primaryToken)
        guard finish.status == 201 else { throw failure("registration", finish) }
        return finish["id"]
    }

    /// A login challenge for this device.
    public func loginChallenge(user: String, deviceID: String) async throws -> ServerClient.Reply {
        let challenge = try await server.post("/v1/login/challenge", ["userId": user, "deviceId": deviceID])
        guard challenge.status == 200 else { throw failure("login challenge", challenge) }
        return challenge
    }

    /// Signs a server challenge with the enclave key: one biometric prompt.
    public func sign(_ challenge: ServerClient.Reply, reason: String) async throws -> Data {
        let envelope = try JSONDecoder().decode(ChallengeEnvelope.self, from: Data(challenge.text.utf8))
        do { return try await signer.sign(envelope, prompt: Prompt(reason: reason)) } catch {
            throw CLIError("the device did not sign: \(error.code)", hint: hint(for: error))
        }
    }

    /// Sends a signature for a challenge to a finish endpoint.
    public func finish(_ path: String, challenge: ServerClient.Reply, signature: Data, token: String? = nil) async throws -> ServerClient.Reply {
        try await server.post(path, ["challengeId": challenge["challengeId"], "signature": Base64URL.encode(signature)], token: token)
    }

    /// Challenge, prompt, signature, session: a biometric login. Returns the session token.
    public func login(user: String, deviceID: String) async throws -> String {
        let challenge = try await loginChallenge(user: user, deviceID: deviceID)
        let signature = try await sign(challenge, reason: "Sign in to BioAuth")
        let session = try await finish("/v1/login/finish", challenge: challenge, signature: signature)
        guard session.status == 200 else { throw failure("login", session) }
        return session["token"]
    }

    /// Approves one operation with the enclave key; returns the one-time approval.
    public func stepUp(session: String, deviceID: String, operation: String) async throws -> String {
        let challenge = try await server.post(
            "/v1/step-up/challenge", ["deviceId": deviceID, "operation": Base64URL.encode(Data(operation.utf8))], token: session)
        guard challenge.status == 200 else { throw failure("step-up challenge", challenge) }
        let signature = try await sign(challenge, reason: "Approve: \(operation)")
        let approval = try await finish("/v1/step-up/finish", challenge: challenge, signature: signature, token: session)
        guard approval.status == 200 else { throw failure("step-up", approval) }
        return approval["approval"]
    }

    /// Redeems an approval for an operation (what the app's backend does before acting).
    public func redeem(approval: String, operation: String) async throws -> ServerClient.Reply {
        try await server.post("/v1/approvals/redeem", ["approval": approval, "operation": Base64URL.encode(Data(operation.utf8))])
    }

    func failure(_ what: String, _ reply: ServerClient.Reply) -> CLIError {
        switch reply.status {
        case 401: CLIError("\(what) refused by the server (authentication failed)", hint: "the server's audit log has the reason")
        case 429: CLIError("\(what) rate limited", hint: "retry after \(reply.retryAfter ?? "?") seconds")
        case 400: CLIError("\(what) rejected: field \(reply["field"]) \(reply["reason"])")
        default: CLIError("\(what) failed with HTTP \(reply.status)")
        }
    }

    func hint(for error: BioAuthError) -> String? {
        switch error.code {
        case .keyUnavailable: "the key is gone (an enrollment change destroys .biometryCurrentSet keys): re-enrol with `bioauth device register --reenrol`"
        case .passcodeNotSet: "set a device passcode first: `bioauth device set-passcode`"
        case .biometryLockedOut: "biometry is locked out: unlock the device with its passcode (`bioauth device unlock`)"
        case .authenticationFailed, .userCancelled: "the person at the prompt was not recognised or cancelled"
        default: nil
        }
    }
}
