import BioAuthCore
import BioAuthPostgres
import BioAuthSQLite
import Foundation
import Testing

@testable import BioAuthServer
import BioAuthServerTesting

/// Issue 43 item 5: limits hold across instances. Three services on one database stand for three
/// instances behind a round-robin balancer: the request window allows the limit plus the
/// documented slack ((N − 1) × a twentieth of the limit), a client that reaches another instance
/// does not start afresh, and the password failure budgets are the same as with one instance.
@Suite(.sharesPostgresServer)
struct SharedLimitsTests {
    static let limit = 60
    /// What ``RequestLimiter`` documents: (N − 1) batches of a twentieth of the limit.
    static let slack = 2 * (limit / 20)

    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }

        func open() async throws -> (any BioAuthStore)? {
            switch self {
            case .sqlite: return try SQLiteStore.inMemory()
            case .postgres:
                guard PostgresTestServer.enabled else {
                    print("SharedLimitsTests: \(PostgresTestServer.skipReason)")
                    return nil
                }
                return try await PostgresTestServer.freshStore()
            }
        }
    }

    /// Three instances of one deployment on `store`, on one clock.
    static func instances(_ store: any BioAuthStore, clock: ManualClock) -> [BioAuthService] {
        var configuration = ServerConfiguration(relyingPartyID: "bioauth.test", passwordRounds: 1_000)
        configuration.rateLimits.requestsPerClient = limit
        return (0..<3).map { _ in BioAuthService(store: store, configuration: configuration, clock: clock) }
    }

    static func isRateLimited(_ body: () async throws -> Void) async -> Bool {
        do { try await body() } catch { return (error as? ServerError)?.code == .rateLimited }
        return false
    }

    @Test(arguments: Store.allCases)
    func threeInstancesAllowTheLimitPlusTheDocumentedSlack(_ kind: Store) async throws {
        guard let store = try await kind.open() else { return }
        let clock = ManualClock()
        let services = Self.instances(store, clock: clock)
        var admitted = 0
        for n in 0..<(3 * Self.limit) {
            let request = RequestInfo(clientAddress: "198.51.100.7")
            let refused = await Self.isRateLimited {
                _ = try await services[n % 3].beginLogin(
                    userID: "alice", deviceID: DeviceID(UUID().uuidString.lowercased()), request: request)
            }
            if !refused { admitted += 1 }
        }
        #expect(
            (Self.limit...(Self.limit + Self.slack)).contains(admitted), "three instances admitted \(admitted) of a limit of \(Self.limit)")
        // Another client keeps its own budget on every instance.
        for service in services {
            #expect(
                !(await Self.isRateLimited {
                    _ = try await service.beginLogin(
                        userID: "bob", deviceID: DeviceID(UUID().uuidString.lowercased()),
                        request: RequestInfo(clientAddress: "203.0.113.5"))
                }))
        }
        // The next window starts afresh everywhere.
        clock.advance(by: 300)
        #expect(
            !(await Self.isRateLimited {
                _ = try await services[1].beginLogin(
                    userID: "alice", deviceID: DeviceID(UUID().uuidString.lowercased()), request: RequestInfo(clientAddress: "198.51.100.7")
                )
            }))
        try await store.close()
    }

    @Test(arguments: Store.allCases)
    func aClientThatReachesAnotherInstanceDoesNotStartAfresh(_ kind: Store) async throws {
        guard let store = try await kind.open() else { return }
        let clock = ManualClock()
        let services = Self.instances(store, clock: clock)
        let request = RequestInfo(clientAddress: "2001:db8:5:1::7", requestSubject: "2001:db8:5:1::/64")
        func begin(_ service: BioAuthService) async -> Bool {
            await Self.isRateLimited {
                _ = try await service.beginLogin(userID: "alice", deviceID: DeviceID(UUID().uuidString.lowercased()), request: request)
            }
        }
        for _ in 0..<Self.limit { #expect(!(await begin(services[0]))) }
        #expect(await begin(services[0]), "the first instance refuses past the limit")
        // The second instance admits at most one batch before it learns the total.
        var admittedElsewhere = 0
        for _ in 0..<Self.limit where !(await begin(services[1])) { admittedElsewhere += 1 }
        #expect(admittedElsewhere <= Self.limit / 20, "another instance admitted \(admittedElsewhere) more")
        try await store.close()
    }

    /// The password budget of a (user, address) is the database's: ten wrong passwords spread over
    /// three instances refuse the eleventh on any of them.
    @Test(arguments: Store.allCases)
    func passwordBudgetsAreTheSameOnEveryInstance(_ kind: Store) async throws {
        guard let store = try await kind.open() else { return }
        let services = Self.instances(store, clock: ManualClock())
        try await services[0].createUser(
            username: "alice", password: "correct horse battery", request: RequestInfo(clientAddress: "203.0.113.1"))
        let stranger = RequestInfo(clientAddress: "192.0.2.44")
        for n in 0..<10 {
            do {
                _ = try await services[n % 3].passwordLogin(username: "alice", password: "wrong password \(n)", request: stranger)
                Issue.record("a wrong password was accepted")
            } catch { #expect(error.code == .authenticationFailed) }
        }
        for service in services {
            #expect(
                await Self.isRateLimited {
                    _ = try await service.passwordLogin(username: "alice", password: "correct horse battery", request: stranger)
                })
        }
        try await store.close()
    }
}
