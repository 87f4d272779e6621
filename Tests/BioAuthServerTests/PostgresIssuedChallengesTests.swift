import BioAuthCore
import BioAuthPostgres
import BioAuthServer
import Foundation
import Testing
import BioAuthServerTesting

/// What a PostgreSQL instance remembers of the login challenges it issued (no database needed):
/// login challenges only, each given once, forgotten in order as they expire, and never more than
/// its capacity.
struct PostgresIssuedChallengesTests {
    let t0 = Date(timeIntervalSince1970: 1_767_225_600)

    func challenge(_ binding: ChallengeRecord.Binding = .login, at created: Date) -> ChallengeRecord {
        ChallengeRecord(
            id: ChallengeID(bytes: SecretBytes.random(count: 16).data), binding: binding, relyingPartyID: "rp", userID: "alice",
            deviceID: "d1",
            nonce: SecretBytes.random(count: 32).data, createdAt: created, expiresAt: created.addingTimeInterval(60))
    }

    @Test func aLoginChallengeIsGivenOnceWithItsDeviceAndNothingElseIsKept() {
        let issued = PostgresIssuedChallenges()
        let device = DeviceRecord(id: "d1", userID: "alice", name: "Phone", publicKey: Data([4]), createdAt: t0)
        let login = challenge(at: t0)
        issued.remember(login, device: device)
        issued.remember(challenge(.stepUp(operationHash: Data(count: 32), deviceKey: nil), at: t0), device: device)
        issued.remember(challenge(.registration(publicKey: Data([4]), deviceName: "Phone", replacing: false), at: t0), device: nil)
        #expect(issued.count == 1, "login challenges only")
        #expect(issued.take(login.id) == TakenChallenge(challenge: login, device: device, lockedOut: false))
        #expect(issued.take(login.id) == nil, "given once")
    }

    @Test func expiredChallengesAreForgottenOnTheServicesClock() {
        let issued = PostgresIssuedChallenges()
        let old = challenge(at: t0), recent = challenge(at: t0.addingTimeInterval(30))
        issued.remember(old, device: nil)
        issued.remember(recent, device: nil)
        #expect(issued.count == 2)
        issued.remember(challenge(at: t0.addingTimeInterval(61)), device: nil)
        #expect(
            issued.count == 2 && issued.take(old.id) == nil && issued.take(recent.id) != nil, "only what expired before the newest is gone")
    }

    @Test func pastItsCapacityNothingMoreIsRememberedUntilSomeExpire() {
        let issued = PostgresIssuedChallenges()
        for _ in 0..<PostgresIssuedChallenges.capacity { issued.remember(challenge(at: t0), device: nil) }
        let extra = challenge(at: t0.addingTimeInterval(1))
        issued.remember(extra, device: nil)
        #expect(issued.count == PostgresIssuedChallenges.capacity && issued.take(extra.id) == nil)
        issued.remember(challenge(at: t0.addingTimeInterval(61)), device: nil)
        #expect(issued.count == 1, "the expired ones made room")
    }
}
