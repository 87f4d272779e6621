import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthSQLite
import BioAuthTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import NIOCore
import Prometheus
import Testing

/// A server wired for tests: a manual clock that never gives two events one instant (as a real
/// one does not: the younger device is younger), captured logs, fast password hashing, client
/// addresses taken from `X-Forwarded-For` so tests can play several clients.
struct ServerHarness: Sendable {
    let clock = ManualClock(tick: ManualClock.microsecond)
    let logs: InMemoryLogHandler
    let service: BioAuthService
    let routes: BioAuthRoutes
    /// The service's logger, and the application's: a request's lines reach ``logs`` through it.
    let logger: Logger
    static let relyingParty = "bioauth.test"

    init(
        store: (any BioAuthStore)? = nil, recoveryChannel: (any RecoveryChannel)? = nil, passwordHashes: PasswordHashPool? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) {
        var configuration = ServerConfiguration(relyingPartyID: Self.relyingParty, passwordRounds: 1_000)
        configure(&configuration)
        var handler = InMemoryLogHandler()
        handler.logLevel = .trace
        logs = handler
        let logger = Logger(label: "test") { _ in handler }
        self.logger = logger
        let registry = PrometheusCollectorRegistry()
        // Fails loudly: a test without its store cannot run.
        let store = store ?? (try! SQLiteStore.inMemory())
        service = BioAuthService(
            store: store, configuration: configuration, clock: clock, logger: logger,
            metricsFactory: DescribedMetricsFactory(registry: registry),
            recoveryChannel: recoveryChannel, passwordHashes: passwordHashes ?? PasswordHashPool(policy: configuration.passwordHashing))
        routes = BioAuthRoutes(
            service: service, registry: registry, options: HTTPOptions(trustedProxies: HTTPOptions.loopbackProxies, allowSignUp: true),
            logger: logger)
    }

    func test(_ body: @escaping @Sendable (API) async throws -> Void) async throws {
        let app = Application(router: routes.makeRouter(), logger: logger)
        do {
            let backend = try await service.createApiKey(
                name: "test backend", scopes: Set(ApiKeyScope.all), request: RequestInfo(clientAddress: "test"))
            try await app.test(.router) { client in try await body(API(client: client, apiKey: backend.secret.value)) }
        } catch {
            try? await service.store.close()
            throw error
        }
        try await service.store.close()
    }
}

/// A response, parsed.
struct Reply: Sendable {
    let status: Int
    let text: String
    let headers: HTTPFields
    /// The body as a JSON object; a body that is not one fails the test (and reads as empty).
    var json: [String: any Sendable] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: any Sendable] else {
            Issue.record("the body is not a JSON object (status \(status))")
            return [:]
        }
        return object
    }
    /// The body as a JSON array of objects; any other body fails the test (and reads as empty).
    var objects: [[String: any Sendable]] {
        guard let array = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [[String: any Sendable]] else {
            Issue.record("the body is not a JSON array of objects (status \(status))")
            return []
        }
        return array
    }
    /// A string member of the body; a missing or non-string member fails the test (and reads as "").
    subscript(_ key: String) -> String {
        guard let value = json[key] as? String else {
            Issue.record("the body has no string \"\(key)\" (status \(status))")
            return ""
        }
        return value
    }
    /// What an approving phone signs for an enrolment request's reply: its text with the binding
    /// code the new phone shows, as the user would type it there.
    var signedApprovalText: String { EnrolmentApprovalText.signed(self["approvalText"], bindingCode: self["bindingCode"]) }
    /// The one body every verification failure answers with.
    var isUniformFailure: Bool { status == 401 && text == #"{"error":"authentication_failed"}"# }
}

/// A device key in software, for mutating signatures at will.
struct SoftwareDevice: Sendable {
    let key = P256.Signing.PrivateKey()
    var spki: String { Base64URL.encode(key.publicKey.derRepresentation) }

    func message(_ challenge: Reply) throws -> SignedMessage { try message(challenge.text) }
    func message(_ challenge: String) throws -> SignedMessage {
        try JSONDecoder().decode(ChallengeEnvelope.self, from: Data(challenge.utf8)).message()
    }
    func signatureBytes(_ challenge: Reply) throws -> Data { try key.signature(for: message(challenge).encoded).derRepresentation }
    func sign(_ challenge: Reply) throws -> String { Base64URL.encode(try signatureBytes(challenge)) }
    /// Signs a challenge's JSON as the server sent it.
    func sign(_ challenge: String) throws -> String {
        Base64URL.encode(try key.signature(for: message(challenge).encoded).derRepresentation)
    }
}

struct API: Sendable {
    let client: any TestClientProtocol
    /// A backend API key with every scope.
    let apiKey: String
    static let password = "correct horse battery"

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, _ body: [String: any Sendable]? = nil, raw: String? = nil, token: String? = nil,
        client address: String = "203.0.113.1", headers extra: HTTPFields = [:]
    ) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json", HTTPField.Name("X-Forwarded-For")!: address]
        if let token { headers[.authorization] = "Bearer " + token }
        for field in extra { headers[field.name] = field.value }
        var buffer: ByteBuffer?
        if let raw {
            buffer = ByteBuffer(string: raw)
        } else if let body {
            buffer = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body))
        }
        let response = try await client.executeRequest(uri: path, method: method, headers: headers, body: buffer)
        return Reply(status: Int(response.status.code), text: String(buffer: response.body), headers: response.headers)
    }

    func post(
        _ path: String, _ body: [String: any Sendable]? = nil, raw: String? = nil, token: String? = nil, client: String = "203.0.113.1"
    ) async throws -> Reply {
        try await call(.post, path, body, raw: raw, token: token, client: client)
    }

    /// The app's backend redeems an approval of `user`'s for `operation` (base64url, as on the
    /// wire) with its API key.
    func redeem(_ approval: String, operation: String, user: String = "alice", apiKey: String? = nil, client: String = "203.0.113.1")
        async throws -> Reply
    {
        try await post(
            "/v1/backend/approvals/redeem", ["approval": approval, "operation": operation, "userId": user], token: apiKey ?? self.apiKey,
            client: client)
    }

    /// Signs up and logs in with the password: a primary session token.
    func primarySession(_ user: String = "alice") async throws -> String {
        let created = try await post("/v1/users", ["username": user, "password": Self.password])
        #expect(created.status == 201 || created.status == 409)
        let login = try await post("/v1/login/password", ["username": user, "password": Self.password])
        #expect(login.status == 200)
        return login["token"]
    }

    /// Enrols `device` for the session's user; returns the device id.
    func enrol(_ device: SoftwareDevice, token: String, name: String = "Phone", replaces: String? = nil, request: String? = nil)
        async throws -> String
    {
        var body: [String: any Sendable] = ["name": name, "publicKey": device.spki]
        if let replaces { body["replacesDeviceId"] = replaces }
        if let request { body["enrolmentRequestId"] = request }
        let challenge = try await post("/v1/devices/registration/challenge", body, token: token)
        #expect(challenge.status == 200, "\(challenge.text)")
        let finish = try await post(
            "/v1/devices/registration/finish", ["challengeId": challenge["challengeId"], "signature": try device.sign(challenge)],
            token: token)
        #expect(finish.status == 201, "\(finish.text)")
        return finish["id"]
    }

    /// Asks for an approval to enrol `device`: the request's reply (201 with `id`, `approvalText`).
    func requestEnrolment(_ device: SoftwareDevice, token: String, name: String = "Phone", replaces: String? = nil) async throws -> Reply {
        var body: [String: any Sendable] = ["name": name, "publicKey": device.spki]
        if let replaces { body["replacesDeviceId"] = replaces }
        return try await post("/v1/enrolment-requests", body, token: token)
    }

    /// What a phished password and a compromised mailbox get, all from `client`: a password
    /// session and a request to enrol `key`, approved with the recovery code `channel` captured.
    func requestApprovedByRecovery(_ key: SoftwareDevice, name: String = "Pad", channel: CapturingRecoveryChannel, client: String)
        async throws -> (
            session: String, request: Reply
        )
    {
        let phished = try await post("/v1/login/password", ["username": "alice", "password": Self.password], client: client)["token"]
        let request = try await post("/v1/enrolment-requests", ["name": name, "publicKey": key.spki], token: phished, client: client)
        #expect(try await post("/v1/enrolment-requests/\(request["id"])/recovery-code", token: phished, client: client).status == 204)
        let code = try #require(await channel.codes[request["id"]])
        #expect(
            try await post("/v1/enrolment-requests/\(request["id"])/recover", ["code": code.text], token: phished, client: client).status
                == 204)
        return (phished, request)
    }

    /// A device login of `approver`, then a step-up over `text`: the approval and the session it came from.
    func stepUpApproval(_ user: String, _ approverID: String, _ approver: SoftwareDevice, text: String) async throws -> (
        approval: String, session: String
    ) {
        let session = try await login(user, approverID, approver)["token"]
        let challenge = try await post(
            "/v1/step-up/challenge", ["deviceId": approverID, "operation": Base64URL.encode(Data(text.utf8))], token: session)
        #expect(challenge.status == 200, "\(challenge.text)")
        let approval = try await finish(challenge, signature: try approver.sign(challenge), path: "/v1/step-up/finish", token: session)
        #expect(approval.status == 200, "\(approval.text)")
        return (approval["approval"], session)
    }

    /// Enrols another device of `user` the secure way: a request, approved by `approver`'s step-up
    /// over the request's text, then the enrolment with it. Returns the device id.
    func enrolApproved(
        _ device: SoftwareDevice, token: String, user: String = "alice", name: String = "Phone", replaces: String? = nil,
        approverID: String,
        approver: SoftwareDevice
    ) async throws -> String {
        let request = try await requestEnrolment(device, token: token, name: name, replaces: replaces)
        #expect(request.status == 201, "\(request.text)")
        let (approval, session) = try await stepUpApproval(user, approverID, approver, text: request.signedApprovalText)
        let approved = try await post("/v1/enrolment-requests/\(request["id"])/approve", ["approval": approval], token: session)
        #expect(approved.status == 204, "\(approved.text)")
        return try await enrol(device, token: token, name: name, replaces: replaces, request: request["id"])
    }

    func loginChallenge(_ user: String, _ deviceID: String, client: String = "203.0.113.1") async throws -> Reply {
        try await post("/v1/login/challenge", ["userId": user, "deviceId": deviceID], client: client)
    }

    func finish(
        _ challenge: Reply, signature: String, path: String = "/v1/login/finish", token: String? = nil, client: String = "203.0.113.1"
    ) async throws -> Reply {
        try await post(path, ["challengeId": challenge["challengeId"], "signature": signature], token: token, client: client)
    }

    /// A full device login; returns the session token.
    func login(_ user: String, _ deviceID: String, _ device: SoftwareDevice, client: String = "203.0.113.1") async throws -> Reply {
        let challenge = try await loginChallenge(user, deviceID, client: client)
        return try await finish(challenge, signature: try device.sign(challenge), client: client)
    }
}

extension ServerHarness {
    /// Every audited reason, oldest first; a merged row (identical failures) counts as many times as it stands for.
    func auditedReasons() async throws -> [String] {
        try await service.store.auditEvents(userID: nil, limit: 10_000).reversed().flatMap { event in
            event.reason.map { Array(repeating: $0.description, count: event.count) } ?? []
        }
    }
}

/// A recovery channel that keeps each code, as the user's inbox would.
actor CapturingRecoveryChannel: RecoveryChannel {
    private(set) var codes: [String: RecoveryCode] = [:]
    private(set) var messages: [RecoveryMessage] = []
    func deliver(_ message: RecoveryMessage) {
        codes[message.requestID.rawValue] = message.code
        messages.append(message)
    }
}
