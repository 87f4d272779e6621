import BioAuthAttestation
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthServerTesting
import BioAuthTesting
import Foundation
import HTTPTypes
import Testing

/// Issue 42: one authority table. Every route of an account action, called with every kind of
/// credential, is refused by the table exactly where the table says so, and `docs/Protocol.md`
/// prints the table the code has.
@Suite
struct AuthorityTests {
    /// The sessions of one account (alice) and of a backend-vouched user (grant), made afresh for
    /// each call so that a destructive action never disturbs the next one.
    struct Account {
        let api: API
        let firstID: String, first: SoftwareDevice
        let coolingID: String
        let primary: String
        let sessions: [CallerCredential: String]
        /// A second session of each kind, for ending "another" session.
        let others: [CallerCredential: String]
        /// An enrolment request alice's password session made.
        let requestID: String
        /// A removal of the first device alice's password session asked for (the security delay).
        let removalID: String

        static func make(_ api: API, clock: ManualClock) async throws -> Account {
            let primary = try await api.primarySession("alice")
            let first = SoftwareDevice()
            let firstID = try await api.enrol(first, token: primary)
            clock.advance(by: 1)  // a tie in creation time would make neither device the first
            let cooling = SoftwareDevice()
            let coolingID = try await api.enrolApproved(cooling, token: primary, name: "Tablet", approverID: firstID, approver: first)
            func grant() async throws -> String {
                let reply = try await api.post("/v1/backend/enrolment-grants", ["userId": "shop-7"], token: api.apiKey)
                #expect(reply.status == 201, "\(reply.text)")
                return reply["token"]
            }
            // A synced passkey, approved by the first phone: whatever its cool-down, it ranks below a device.
            let synced = SoftwarePasskey(origin: PasskeyTests.origin)
            synced.synced = true
            let waiting = try await PasskeyTests.register(synced, api, token: primary, name: "Synced")
            #expect(waiting.status == 202, "\(waiting.text)")
            let (approval, approver) = try await api.stepUpApproval("alice", firstID, first, text: waiting.signedApprovalText)
            #expect(
                try await api.post("/v1/enrolment-requests/\(waiting["id"])/approve", ["approval": approval], token: approver).status == 204
            )
            let completed = try await api.post(
                "/v1/passkeys/registration/complete", ["enrolmentRequestId": waiting["id"]] as [String: any Sendable], token: primary)
            #expect(completed.status == 201, "\(completed.text)")
            func passkeySession() async throws -> String {
                let signedIn = try await PasskeyTests.signIn(synced, api)
                #expect(signedIn.status == 200, "\(signedIn.text)")
                return signedIn["token"]
            }
            // A screen the first phone let in.
            func approvedScreen() async throws -> String {
                let started = try await CrossDeviceTests.start(api)
                let approved = try await CrossDeviceTests.approve(
                    api, request: started["id"], number: started["number"], phoneID: firstID, phone: first)
                #expect(approved.status == 204, "\(approved.text)")
                let collected = try await CrossDeviceTests.poll(api, started)
                return try #require((collected.json["session"] as? [String: any Sendable])?["token"] as? String)
            }
            let sessions: [CallerCredential: String] = [
                .enrolmentGrant: try await grant(), .password: primary, .crossDevice: try await approvedScreen(),
                .syncedPasskey: try await passkeySession(),
                .coolingDevice: try await api.login("alice", coolingID, cooling)["token"],
                .device: try await api.login("alice", firstID, first)["token"],
            ]
            let others: [CallerCredential: String] = [
                .enrolmentGrant: try await grant(), .password: try await api.primarySession("alice"),
                .crossDevice: try await approvedScreen(), .syncedPasskey: try await passkeySession(),
                .coolingDevice: try await api.login("alice", coolingID, cooling)["token"],
                .device: try await api.login("alice", firstID, first)["token"],
            ]
            let request = try await api.requestEnrolment(SoftwareDevice(), token: primary, name: "Laptop")
            #expect(request.status == 201, "\(request.text)")
            let removal = try await api.post("/v1/device-removals", ["deviceId": firstID], token: primary)
            #expect(removal.status == 201, "\(removal.text)")
            return Account(
                api: api, firstID: firstID, first: first, coolingID: coolingID, primary: primary, sessions: sessions, others: others,
                requestID: request["id"],
                removalID: removal["id"])
        }

        func sessionID(of token: String) async throws -> String {
            let listed = try await api.call(.get, "/v1/sessions", token: token)
            return try #require(listed.objects.first { $0["current"] as? Bool == true }?["id"] as? String)
        }

        /// The route of `action`, called as `credential`.
        func call(_ action: AccountAction, as credential: CallerCredential) async throws -> Reply {
            let token = try #require(sessions[credential])
            let request = "/v1/enrolment-requests/\(requestID)"
            switch action {
            case .listDevices: return try await api.call(.get, "/v1/devices", token: token)
            // The cooling device is the newest: itself for the cooling device, newer for the first.
            case .renameDevice: return try await api.call(.patch, "/v1/devices/\(coolingID)", ["name": "Renamed"], token: token)
            case .revokeDevice: return try await api.call(.delete, "/v1/devices/\(coolingID)", token: token)
            case .listSessions: return try await api.call(.get, "/v1/sessions", token: token)
            case .endOwnSession: return try await api.post("/v1/logout", token: token)
            case .endOtherSession:
                // Another session opened the same way, so a cooling device ends one it opened itself;
                // a grant cannot list sessions, so its other session is named by a made-up id.
                let other = try #require(others[credential])
                let id = credential == .enrolmentGrant ? UUID().uuidString.lowercased() : try await sessionID(of: other)
                return try await api.call(.delete, "/v1/sessions/\(id)", token: token)
            case .endAllSessions: return try await api.call(.delete, "/v1/sessions", token: token)
            case .readAuditLog: return try await api.call(.get, "/v1/audit", token: token)
            case .readSecurityEvents: return try await api.call(.get, "/v1/security-events", token: token)
            case .enrolDevice:
                return try await api.post(
                    "/v1/devices/registration/challenge", ["name": "New", "publicKey": SoftwareDevice().spki], token: token)
            case .requestEnrolment: return try await api.requestEnrolment(SoftwareDevice(), token: token, name: "Other")
            case .readEnrolmentRequest: return try await api.call(.get, request, token: token)
            case .listEnrolmentRequests: return try await api.call(.get, "/v1/enrolment-requests", token: token)
            case .sendRecoveryCode: return try await api.post(request + "/recovery-code", token: token)
            case .recoverEnrolment: return try await api.post(request + "/recover", ["code": "0000-0000-0000"], token: token)
            case .approveEnrolmentRequest:
                return try await api.post(request + "/approve", ["approval": Base64URL.encode(Data(count: 32))], token: token)
            case .cancelEnrolmentRequest: return try await api.call(.delete, request, token: token)
            case .stepUp:
                return try await api.post(
                    "/v1/step-up/challenge", ["deviceId": firstID, "operation": Base64URL.encode(Data("Pay 5 EUR".utf8))], token: token)
            case .changePassword:
                return try await api.post(
                    "/v1/password", ["password": "a new passphrase", "approval": Base64URL.encode(Data(count: 32))], token: token)
            case .requestDeviceRemoval: return try await api.post("/v1/device-removals", ["deviceId": coolingID], token: token)
            case .confirmDeviceRemoval:
                return try await api.post("/v1/device-removals/\(removalID)/confirm", ["code": "0000-0000-0000"], token: token)
            case .listDeviceRemovals: return try await api.call(.get, "/v1/device-removals", token: token)
            case .cancelDeviceRemoval: return try await api.call(.delete, "/v1/device-removals/\(removalID)", token: token)
            // No request is needed to tell a refusal from a permission: an unknown one is a 404.
            case .listCrossDeviceRequests: return try await api.call(.get, "/v1/cross-device/requests", token: token)
            case .approveCrossDeviceRequest:
                return try await api.post(
                    "/v1/cross-device/requests/\(UUID().uuidString.lowercased())/approve", ["approval": Base64URL.encode(Data(count: 32))],
                    token: token)
            case .denyCrossDeviceRequest:
                return try await api.call(.delete, "/v1/cross-device/requests/\(UUID().uuidString.lowercased())", token: token)
            }
        }
    }

    @Test(arguments: AccountAction.allCases)
    func everyRouteRefusesExactlyTheCredentialsTheTableRefuses(_ action: AccountAction) async throws {
        for credential in CallerCredential.allCases {
            let harness = ServerHarness(recoveryChannel: CapturingRecoveryChannel()) { configuration in
                configuration.crossDevice = CrossDevicePolicy()
                configuration.passkeys = PasskeyPolicy(
                    relyingParty: WebAuthnRelyingParty(id: "localhost", origins: [PasskeyTests.origin]), relyingPartyName: "BioAuth tests")
            }
            try await harness.test { api in
                let account = try await Account.make(api, clock: harness.clock)
                let reply = try await account.call(action, as: credential)
                let refusedByTable = reply.status == 403 && reply.json["reason"] as? String == Authority.refusal(action)
                #expect(
                    refusedByTable == !Authority.permits(action, credential),
                    "\(action) as \(credential): \(reply.status) \(reply.text); the table says \(Authority.permits(action, credential) ? "permitted" : "refused")"
                )
                // A wrong recovery code or approval is the uniform 401 once the caller may try one.
                let provesASecret = [.recoverEnrolment, .approveEnrolmentRequest, .changePassword, .confirmDeviceRemoval].contains(action)
                #expect(
                    (provesASecret || reply.status != 401) && reply.status < 500,
                    "\(action) as \(credential): \(reply.status) \(reply.text)")
            }
        }
    }

    /// A synced passkey and a screen a phone let in rank no higher than a password: nothing a
    /// password may not do, and never anything that needs a device.
    @Test func aSyncedPasskeyOrAnApprovedScreenNeverOutranksAPassword() {
        for action in AccountAction.allCases {
            for weaker in [CallerCredential.syncedPasskey, .crossDevice] where Authority.permits(action, weaker) {
                #expect(Authority.permits(action, .password), "\(action) as \(weaker)")
            }
            if !Authority.permits(action, .password) {
                #expect(!Authority.permits(action, .syncedPasskey) && !Authority.permits(action, .crossDevice), "\(action)")
            }
        }
        for action in [AccountAction.revokeDevice, .renameDevice, .endOtherSession, .endAllSessions, .approveEnrolmentRequest] {
            #expect(!Authority.permits(action, .syncedPasskey) && !Authority.permits(action, .crossDevice), "\(action)")
        }
    }

    /// The rank in words: a password looks, enrols and leaves; removing or silencing a device
    /// needs a device.
    @Test func aPasswordNeverRemovesRenamesOrSilencesADevice() {
        for action in [
            AccountAction.renameDevice, .revokeDevice, .endOtherSession, .endAllSessions, .approveEnrolmentRequest, .cancelEnrolmentRequest,
            .listCrossDeviceRequests, .approveCrossDeviceRequest, .denyCrossDeviceRequest,
        ] {
            #expect(!Authority.permits(action, .password), "\(action)")
        }
        for action in [AccountAction.listDevices, .listSessions, .endOwnSession, .readAuditLog, .enrolDevice, .requestEnrolment, .stepUp] {
            #expect(Authority.permits(action, .password), "\(action)")
        }
        #expect(AccountAction.allCases.allSatisfy { Authority.table[$0] != nil }, "every action has a row")
    }

    @Test func theProtocolDocumentPrintsTheTable() throws {
        let document = try PackagePaths.text("docs/Protocol.md")
        #expect(
            document.contains(Authority.markdownTable), "docs/Protocol.md must print Authority.markdownTable:\n\(Authority.markdownTable)")
    }
}
