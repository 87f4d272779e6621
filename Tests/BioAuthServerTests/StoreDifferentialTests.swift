import BioAuthCore
import BioAuthPostgres
import BioAuthServer
import BioAuthServerTesting
import BioAuthSQLite
import Crypto
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// The same seeded random sequence of flows — sign-ups, password and device logins, enrolments,
/// step-ups and redemptions, revocations, logouts, time passing — run over HTTP on SQLite and on
/// PostgreSQL (prepared statements and not), answering alike step by step: every status, and
/// what each list shows. A field or rule one store's path forgets shows as a difference here
/// even where no conformance check names it.
@Suite(.sharesPostgresServer)
struct StoreDifferentialTests {
    /// What one user has made so far, on one store.
    struct Account {
        var primary: String?
        var phones: [(id: String, key: SoftwareDevice)] = []
        var deviceSessions: [String] = []
    }

    /// Runs `steps` steps from `seed` on `store` and returns what each answered.
    /// `published`: the deployment delivers events (a webhook), so logins queue one; without, a
    /// PostgreSQL device login is its one fused statement.
    static func observe(seed: UInt64, steps: Int, published: Bool, store: any BioAuthStore) async throws -> [String] {
        let harness = ServerHarness(store: store) { configuration in
            configuration.dpop.publicOrigin = DPoPBindingTests.origin
            if !published { configuration.publishedEvents = [] }
        }
        let seen = Mutex<[String]>([])
        try await harness.test { api in
            var random = SplitMix64(state: seed)  // the same sequence from the same seed everywhere
            var accounts: [String: Account] = ["alice": Account(), "bob": Account()]
            func note(_ line: String) { seen.withLock { $0.append(line) } }
            for step in 0..<steps {
                let user = Bool.random(using: &random) ? "alice" : "bob"
                var account = accounts[user]!
                switch Int.random(in: 0..<10, using: &random) {
                case 0:
                    note("\(step) sign-up \(user): \(try await api.post("/v1/users", ["username": user, "password": API.password]).status)")
                case 1:
                    let right = Int.random(in: 0..<4, using: &random) != 0
                    let reply = try await api.post(
                        "/v1/login/password", ["username": user, "password": right ? API.password : "a wrong password"])
                    if reply.status == 200 { account.primary = reply["token"] }
                    note("\(step) password \(user) \(right): \(reply.status)")
                case 2:
                    guard let primary = account.primary else { continue }
                    let phone = SoftwareDevice()
                    /// The registration challenge for `body` and its finish, noted as `label`.
                    func register(_ phone: SoftwareDevice, _ body: [String: any Sendable], _ label: String) async throws {
                        let challenge = try await api.post("/v1/devices/registration/challenge", body, token: primary)
                        guard challenge.status == 200 else { return note("\(step) \(label) \(user): \(challenge.status)") }
                        let finish = try await api.post(
                            "/v1/devices/registration/finish",
                            ["challengeId": challenge["challengeId"], "signature": try phone.sign(challenge)], token: primary)
                        note("\(step) \(label) \(user): \(finish.status)")
                        if finish.status == 201 { account.phones.append((finish["id"], phone)) }
                    }
                    if let approver = account.phones.first {
                        let request = try await api.requestEnrolment(phone, token: primary)
                        note("\(step) request \(user): \(request.status)")
                        guard request.status == 201 else { continue }
                        let approverLogin = try await api.login(user, approver.id, approver.key)
                        guard approverLogin.status == 200 else {
                            note("\(step) approver \(user): \(approverLogin.status)")
                            continue
                        }
                        let (approval, session) = try await api.stepUpApproval(
                            user, approver.id, approver.key, text: request.signedApprovalText)
                        let approved = try await api.post(
                            "/v1/enrolment-requests/\(request["id"])/approve", ["approval": approval], token: session)
                        note("\(step) approve \(user): \(approved.status)")
                        guard approved.status == 204 else { continue }
                        try await register(
                            phone, ["name": "Phone", "publicKey": phone.spki, "enrolmentRequestId": request["id"]], "enrol")
                    } else {
                        try await register(phone, ["name": "Phone", "publicKey": phone.spki], "first")
                    }
                case 3, 4:
                    guard !account.phones.isEmpty else { continue }
                    let phone = account.phones[Int.random(in: 0..<account.phones.count, using: &random)]
                    // Half the logins carry a DPoP proof: their sessions are bound, and a bearer use fails.
                    let bound = Bool.random(using: &random)
                    let reply = try await DPoPBindingTests.login(
                        api, harness, phoneID: phone.id, phone: phone.key, dpopKey: bound ? P256.Signing.PrivateKey() : nil)
                    if reply.status == 200, !bound { account.deviceSessions.append(reply["token"]) }
                    let asBearer = reply.status == 200 ? try await api.call(.get, "/v1/devices", token: reply["token"]).status : 0
                    note(
                        "\(step) login \(user) bound \(bound): \(reply.status) \(reply.status == 200 ? reply["tokenType"] : "-") \(asBearer)"
                    )
                case 5:
                    guard let session = account.deviceSessions.last, let phone = account.phones.first else { continue }
                    let operation = "Pay \(step) EUR"
                    let challenge = try await api.post(
                        "/v1/step-up/challenge", ["deviceId": phone.id, "operation": Base64URL.encode(Data(operation.utf8))], token: session
                    )
                    guard challenge.status == 200 else {
                        note("\(step) step-up \(user): \(challenge.status)")
                        continue
                    }
                    let approval = try await api.finish(
                        challenge, signature: try phone.key.sign(challenge), path: "/v1/step-up/finish", token: session)
                    let redeemed =
                        approval.status == 200
                        ? try await api.redeem(approval["approval"], operation: Base64URL.encode(Data(operation.utf8)), user: user).status
                        : 0
                    note("\(step) step-up \(user): \(approval.status) \(redeemed)")
                case 6:
                    guard let session = account.deviceSessions.last, account.phones.count > 1 else { continue }
                    let target = account.phones.removeLast()
                    note("\(step) revoke \(user): \(try await api.call(.delete, "/v1/devices/\(target.id)", token: session).status)")
                case 7:
                    guard let token = account.deviceSessions.last ?? account.primary else { continue }
                    let devices = try await api.call(.get, "/v1/devices", token: token)
                    let sessions = try await api.call(.get, "/v1/sessions", token: token)
                    let active = devices.status == 200 ? devices.objects.filter { $0["revokedAt"] == nil }.count : -1
                    note(
                        "\(step) lists \(user): \(devices.status) \(active) \(sessions.status) \(sessions.status == 200 ? sessions.objects.count : -1)"
                    )
                case 8:
                    guard let session = account.deviceSessions.popLast() else { continue }
                    note("\(step) logout \(user): \(try await api.post("/v1/logout", token: session).status)")
                default:
                    let seconds = Double(Int.random(in: 0...240, using: &random))
                    harness.clock.advance(by: seconds)
                    note("\(step) wait \(seconds)")
                }
                accounts[user] = account
            }
        }
        return seen.withLock { $0 }
    }

    @Test(.timeLimit(.minutes(5)), arguments: [(1 as UInt64, true), (2, false), (3, false)])
    func sqliteAndPostgreSQLAnswerTheSameSequenceAlike(seed: UInt64, published: Bool) async throws {
        let sqlite = try await Self.observe(seed: seed, steps: 150, published: published, store: try SQLiteStore.inMemory())
        #expect(sqlite.contains { $0.contains("bound true: 200 DPoP 401") }, "the sequence reaches bound logins: \(sqlite)")
        guard PostgresTestServer.enabled else {
            print("StoreDifferentialTests: \(PostgresTestServer.skipReason)")
            return
        }
        let postgres = try await Self.observe(
            seed: seed, steps: 150, published: published, store: try await PostgresTestServer.freshStore())
        let unprepared = try await Self.observe(
            seed: seed, steps: 150, published: published,
            store: try await PostgresTestServer.freshStore(
                options: PostgresTestServer.testOptions(preparedStatements: false)))
        for (name, other) in [("PostgreSQL", postgres), ("PostgreSQL without prepared statements", unprepared)] {
            let first = zip(sqlite, other).first { $0 != $1 }
            #expect(first == nil && sqlite.count == other.count, "\(name) differs from SQLite first at \(String(describing: first))")
        }
    }
}
