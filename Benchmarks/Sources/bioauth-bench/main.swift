import BioAuthCore
import BioAuthPostgres
import BioAuthServer
import BioAuthSQLite
import Crypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO

// Numbers, not assertions: every figure is printed next to a baseline measured in the same run.

func measure(_ iterations: Int, _ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    for _ in 0..<iterations { try body() }
    let elapsed = clock.now - start
    return Double(iterations) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

func seconds(_ duration: Duration) -> Double { Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18 }

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func line(_ text: String) {
    print(text)
    fflush(nil)
}

// MARK: 1. Verification: BioAuth's strict path against raw swift-crypto

let signer = P256.Signing.PrivateKey()
let spki = signer.publicKey.derRepresentation
let messages = (0..<256).map { Data("message \($0)".utf8) }
let signatures = try messages.map { try signer.signature(for: $0).derRepresentation }
var index = 0
let iterations = 20_000

let raw = try measure(iterations) {
    let key = try P256.Signing.PublicKey(derRepresentation: spki)
    let signature = try P256.Signing.ECDSASignature(derRepresentation: signatures[index & 255])
    precondition(key.isValidSignature(signature, for: messages[index & 255]))
    index += 1
}
let ours = try measure(iterations) {
    let key = try DevicePublicKey(spki: spki)
    precondition(key.isValidSignature(der: signatures[index & 255], for: messages[index & 255]))
    index += 1
}
line("verify (SPKI parse + DER parse + ECDSA verify), \(iterations) iterations, 1 thread")
line(String(format: "  swift-crypto directly:         %8.0f /s", raw))
line(String(format: "  BioAuthCore strict path:       %8.0f /s   (%.2f× swift-crypto)", ours, ours / raw))

// MARK: 2. Enrolment through the service, without and with App Attest

try await enrolmentFigures(rawVerifiesPerSecond: raw)

// MARK: 3. Login verification through the service (no HTTP), by store and registry size

/// Seeds devices through the store's own enrolment transaction: a challenge stored, then taken
/// with the device's insert (the mutations an enrolment's plan holds, from the public `WritePlan`).
func seedThroughStore(_ store: any BioAuthStore, devices: Int, spki: Data) async throws -> [(user: UserID, device: DeviceID)] {
    var ids: [(user: UserID, device: DeviceID)] = []
    let now = Date()
    let lockout = LockoutQuery(windowStart: now, client: "seed", clientLimit: .max)
    for n in 0..<devices {
        let (user, id) = (UserID("user\(n)"), DeviceID.random())
        let challenge = ChallengeRecord(
            id: try ChallengeID(Base64URL.encode(SecretBytes.random(count: 16).data)),
            binding: .registration(publicKey: spki, deviceName: "d", replacing: false),
            relyingPartyID: "bench",
            userID: user, deviceID: id, nonce: Data(count: 32), createdAt: now, expiresAt: now.addingTimeInterval(60))
        var issue = WritePlan()
        issue.add(.insertChallenge(challenge))
        _ = try await store.apply(issue)
        var enrolment = WritePlan()
        enrolment.add(.insertDevice(DeviceRecord(id: id, userID: user, name: "d", publicKey: spki, createdAt: now)))
        enrolment.audit(AuditEvent(at: now, kind: .deviceEnrolled))
        _ = try await store.consumeChallenge(id: challenge.id, lockout: lockout) { [enrolment] _ in ((), enrolment) }
        if ids.count < 1_000 { ids.append((user, id)) }
    }
    return ids
}

/// Seeds devices straight into a SQLite file in one transaction, as an import would.
func seedSQLite(path: String, devices: Int, spki: Data) async throws -> [(user: UserID, device: DeviceID)] {
    let pool = NIOThreadPool(numberOfThreads: 1)
    pool.start()
    let connection = try await SQLiteConnection.open(
        storage: .file(path: path), threadPool: pool, logger: Logger(label: "seed"), on: MultiThreadedEventLoopGroup.singleton.any())
    var ids: [(user: UserID, device: DeviceID)] = []
    _ = try await connection.query("BEGIN")
    for n in 0..<devices {
        let (user, id) = (UserID("user\(n)"), DeviceID.random())
        _ = try await connection.query(
            "INSERT INTO devices (id, user_id, name, public_key, created_at) VALUES (?, ?, 'd', ?, ?)",
            [.text(id.rawValue), .text(user.rawValue), .blob(ByteBuffer(bytes: spki)), .float(Date().timeIntervalSince1970)])
        if ids.count < 1_000 { ids.append((user, id)) }
    }
    _ = try await connection.query("COMMIT")
    try await connection.close()
    try await pool.shutdownGracefully()
    return ids
}

/// `logins` logins through the service API by `clients` concurrent clients; with `dpop`, each
/// login finish carries a DPoP proof by a second key (made and verified per login, binding the session).
func serviceLogins(
    store: any BioAuthStore, ids: [(user: UserID, device: DeviceID)], key: P256.Signing.PrivateKey, logins: Int, clients: Int = 1,
    dpop: Bool = false
) async throws -> (perSecond: Double, p50: Double, p99: Double) {
    let proofKey = P256.Signing.PrivateKey()
    let url = "https://bench.example/v1/login/finish"
    var configuration = ServerConfiguration(relyingPartyID: "bench")
    configuration.rateLimits.requestsPerClient = .max
    configuration.rateLimits.failuresPerClient = .max
    let service = BioAuthService(
        store: store, configuration: configuration, logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
    let clock = ContinuousClock()
    let start = clock.now
    var latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
        for client in 0..<clients {
            group.addTask {
                var mine: [Double] = []
                for n in stride(from: client, to: logins, by: clients) {
                    let (user, id) = ids[n % ids.count]
                    let begin = clock.now
                    let envelope = try await service.beginLogin(userID: user, deviceID: id, request: RequestInfo(clientAddress: "bench"))
                    let message = try envelope.message()
                    let signature = Base64URL.encode(try key.signature(for: message.encoded).derRepresentation)
                    var request = RequestInfo(clientAddress: "bench")
                    if dpop {
                        let proof = try DPoPProof.make(key: DevicePublicKey(proofKey.publicKey), method: "POST", url: url, at: Date()) {
                            try proofKey.signature(for: $0).rawRepresentation
                        }
                        request.dpop = DPoPPresentation(proof: proof, method: "POST", url: url)
                    }
                    _ = try await service.finishLogin(
                        challengeID: try ChallengeID(envelope.challengeId), signature: signature, request: request)
                    mine.append(seconds(clock.now - begin) * 1000)
                }
                return mine
            }
        }
        return try await group.reduce(into: [Double]()) { $0 += $1 }
    }
    let total = seconds(clock.now - start)
    latencies.sort()
    return (Double(logins) / total, percentile(latencies, 0.5), percentile(latencies, 0.99))
}

line("\nlogin (challenge + device signature + verify + session), service API, 1 client, includes the device's signing")
let deviceKey = P256.Signing.PrivateKey()
let memoryStore = try SQLiteStore.inMemory()
let memoryIDs = try await seedThroughStore(memoryStore, devices: 1_000, spki: deviceKey.publicKey.derRepresentation)
let memory = try await serviceLogins(store: memoryStore, ids: memoryIDs, key: deviceKey, logins: 2_000)
line(
    String(format: "  SQLite :memory:, 1k devices:   %8.0f logins/s   p50 %.2f ms   p99 %.2f ms", memory.perSecond, memory.p50, memory.p99))
// The same store and devices again, each login with a DPoP proof (the client's proof signing included).
let memoryDPoP = try await serviceLogins(store: memoryStore, ids: memoryIDs, key: deviceKey, logins: 2_000, dpop: true)
line(
    String(
        format: "  SQLite :memory:, 1k devices, DPoP: %8.0f logins/s   p50 %.2f ms   p99 %.2f ms   (%.2f× the bearer logins above)",
        memoryDPoP.perSecond, memoryDPoP.p50, memoryDPoP.p99, memoryDPoP.perSecond / memory.perSecond))
for devices in [1_000, 100_000, 1_000_000] {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString).sqlite").path
    try await SQLiteStore.open(path: path).close()  // creates the schema
    let seedStart = ContinuousClock.now
    let ids = try await seedSQLite(path: path, devices: devices, spki: deviceKey.publicKey.derRepresentation)
    let seed = seconds(ContinuousClock.now - seedStart)
    let store = try await SQLiteStore.open(path: path)
    let result = try await serviceLogins(store: store, ids: ids, key: deviceKey, logins: 2_000)
    line(
        String(
            format: "  SQLite store, %7d devices, 1 client:   %8.0f logins/s   p50 %.2f ms   p99 %.2f ms   (seeded in %.1f s)", devices,
            result.perSecond, result.p50, result.p99, seed))
    let before = store.statistics
    let grouped = try await serviceLogins(store: store, ids: ids, key: deviceKey, logins: 10_000, clients: 64)
    let after = store.statistics
    line(
        String(
            format: "  SQLite store, %7d devices, 64 clients: %8.0f logins/s   p50 %.2f ms   p99 %.2f ms   (%.1f transactions per fsync)",
            devices, grouped.perSecond, grouped.p50, grouped.p99,
            Double(after.transactions - before.transactions) / Double(max(1, after.commits - before.commits))))
    try await store.close()
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

if let url = ProcessInfo.processInfo.environment["BIOAUTH_BENCH_POSTGRES_URL"]
    ?? ProcessInfo.processInfo.environment["BIOAUTH_TEST_POSTGRES_URL"],
    let location = PostgresStore.Location(url: url)
{
    let store = try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 16))
    let ids = try await seedThroughStore(store, devices: 1_000, spki: deviceKey.publicKey.derRepresentation)
    let single = try await serviceLogins(store: store, ids: ids, key: deviceKey, logins: 2_000)
    line(
        String(
            format: "  PostgreSQL store, 1k devices, 1 client:   %8.0f logins/s   p50 %.2f ms   p99 %.2f ms", single.perSecond, single.p50,
            single.p99))
    let many = try await serviceLogins(store: store, ids: ids, key: deviceKey, logins: 10_000, clients: 64)
    line(
        String(
            format: "  PostgreSQL store, 1k devices, 64 clients: %8.0f logins/s   p50 %.2f ms   p99 %.2f ms", many.perSecond, many.p50,
            many.p99))
    try await store.close()
} else {
    line("  (PostgreSQL: set BIOAUTH_BENCH_POSTGRES_URL)")
}

// Logins over HTTP are measured by `bioauth-load`, a separate process driving bioauth-server
// processes (Benchmarks/run runs both).
