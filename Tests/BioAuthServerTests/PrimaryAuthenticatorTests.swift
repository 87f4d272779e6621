import BioAuthCore
import BioAuthServer
import Foundation
import Synchronization
import Testing
import BioAuthServerTesting

/// A team's own login in front of BioAuth: codes its identity provider issued, each proving a user.
final class ShopLogin: PrimaryAuthenticator {
    struct Down: Error {}
    let codes: [String: String]
    let calls = Mutex(0)
    init(codes: [String: String]) { self.codes = codes }

    func authenticate(_ credential: String, request: RequestInfo) async throws -> String? {
        calls.withLock { $0 += 1 }
        if credential == "provider-down" { throw Down() }
        return codes[credential]
    }
}

struct PrimaryAuthenticatorTests {
    @Test func yourOwnLoginOpensAPrimarySessionThatEnrolsTheFirstDevice() async throws {
        let harness = ServerHarness()
        let login = ShopLogin(codes: ["code-1": "u-1842", "code-bad-id": "not a user id"])
        let request = RequestInfo(clientAddress: "198.51.100.7")
        let grant = try await harness.service.primaryLogin("code-1", with: login, request: request)
        #expect(grant.session.userID == "u-1842" && grant.session.kind == .primary && grant.session.deviceID == nil && grant.tokens == nil)
        try await harness.test { api in
            let phone = SoftwareDevice()
            _ = try await api.enrol(phone, token: grant.token)
            let second = try await api.post(
                "/v1/devices/registration/challenge", ["name": "Pad", "publicKey": SoftwareDevice().spki], token: grant.token)
            #expect(second.status == 403 && second["error"] == "approval_required")
            // Inside the harness: it closes its store when the body returns.
            await #expect(throws: ServerError(.unavailable, retryAfter: 5)) {
                try await harness.service.primaryLogin("provider-down", with: login, request: request)
            }
            await #expect(throws: ServerError.self) { try await harness.service.primaryLogin("code-bad-id", with: login, request: request) }
        }
    }

    /// A credential that proves nobody counts against the address; at the limit the address is
    /// refused before the team's login is even asked.
    @Test func wrongCredentialsLockTheAddressOut() async throws {
        let harness = ServerHarness()
        let login = ShopLogin(codes: ["code-1": "u-1842"])
        let request = RequestInfo(clientAddress: "198.51.100.9")
        for _ in 0..<30 {
            await #expect(throws: ServerError.authenticationFailed(.primaryLoginRejected)) {
                try await harness.service.primaryLogin("guess", with: login, request: request)
            }
        }
        let before = login.calls.withLock { $0 }
        do {
            _ = try await harness.service.primaryLogin("code-1", with: login, request: request)
            Issue.record("a locked-out address logged in")
        } catch { #expect(error.code == .rateLimited) }
        #expect(login.calls.withLock { $0 } == before, "not asked while locked out")
        #expect(
            try await harness.service.primaryLogin("code-1", with: login, request: RequestInfo(clientAddress: "198.51.100.10")).session
                .userID == "u-1842")
        let audit = try await harness.service.store.auditEvents(userID: nil, limit: 100)
        #expect(audit.contains { $0.kind == AuditKind.primaryLoginFailed && $0.count == 30 })
        #expect(audit.contains { $0.kind == AuditKind.primaryLoginSucceeded && $0.userID == "u-1842" })
        try await harness.service.store.close()
    }
}
