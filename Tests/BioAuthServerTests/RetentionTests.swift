import BioAuthCore
import BioAuthServer
import BioAuthSQLite
import Foundation
import Logging
import Testing

/// A flood of bad requests cannot grow the database without bound: repeated failures are merged,
/// counters and old audit rows are swept. `BIOAUTH_FLOOD=100000 swift test --filter RetentionTests`
/// measures the figure `docs/Performance.md` states.
struct RetentionTests {
    @Test(.timeLimit(.minutes(10)))
    func aFloodOfBadRequestsLeavesTheDatabaseSmall() async throws {
        let requests = Int(ProcessInfo.processInfo.environment["BIOAUTH_FLOOD"] ?? "") ?? 4_000
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-flood-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try await SQLiteStore.open(path: path)
        let clock = ManualClock()
        var configuration = ServerConfiguration(passwordRounds: 1_000)
        configuration.rateLimits.requestsPerClient = .max  // every request reaches the store
        var quiet = Logger(label: "flood")
        quiet.logLevel = .critical  // thousands of "verification failed" lines otherwise
        let service = BioAuthService(store: store, configuration: configuration, clock: clock, logger: quiet)
        let forged = Base64URL.encode(Data([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]))
        var sent = 0
        while sent < requests {
            let batch = min(256, requests - sent)
            await withTaskGroup(of: Void.self) { group in
                for n in sent..<(sent + batch) {
                    group.addTask {
                        // Finishing a challenge that was never issued, from one of eight addresses.
                        _ = try? await service.finishLogin(
                            challengeID: ChallengeID(bytes: SecretBytes.random(count: 16).data), signature: forged,
                            request: RequestInfo(clientAddress: "198.51.100.\(n % 8)"))
                    }
                }
            }
            sent += batch
            clock.advance(by: 0.5)  // the flood lasts requests / 512 seconds
        }
        let rows = try await store.auditEvents(userID: nil, limit: 1_000_000)
        let represented = rows.map(\.count).reduce(0, +)
        #expect(represented >= requests, "every bad request is accounted for: \(represented) of \(requests)")
        // Per address and minute: the failures, merged (forgeries lock out nobody, issue 43).
        let minutes = Int((Double(requests) / 512 / 60).rounded(.up)) + 1
        #expect(rows.count <= 8 * 3 * (minutes + 1), "\(rows.count) audit rows for \(requests) requests")

        func bytes(_ suffix: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path + suffix)[.size] as? Int) ?? 0 }
        let during = (database: bytes(""), wal: bytes("-wal"))
        #expect(during.database < 1_000_000, "\(during.database) bytes of database after the flood")
        // The WAL is checkpointed every 1 000 pages (SQLite's default) and then reused: ≤ ~4.2 MB whatever the load.
        #expect(during.wal < 4_400_000, "\(during.wal) bytes of WAL")

        clock.advance(by: 90 * 86_400 + 600)
        let swept = try await service.sweep()
        // The eight addresses' request windows, one row each; forgeries are counted against nobody.
        #expect(swept.auditRows == rows.count && swept.counters <= 8, "forgeries are counted against nobody: \(swept)")
        try await store.close()
        print(
            "flood: \(requests) bad requests → \(rows.count) audit rows; database \(during.database) bytes, WAL \(during.wal) bytes; \(bytes("")) bytes after the sweep and close"
        )
        #expect(bytes("") < 1_000_000)
    }
}
