import BioAuthCore
import BioAuthPostgres
import BioAuthSQLite
import Crypto
import Foundation
import Histogram
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import PostgresNIO
import SQLiteNIO
import Synchronization

// bioauth-load: drives release `bioauth-server` processes over loopback with full logins
// (challenge → the device signs the server's message → finish), from this separate process.
//
//   bioauth-load [--server PATH] [--database sqlite|postgres://…] [--devices N] [--instances N]
//                [--connections N] [--seconds N] [--rates 0.5,0.8] [--password-flood N]
//                [--owner-password N]
//
// It seeds the devices straight into the database, starts the instances, runs a closed loop
// (maximum logins/s), then open loops at the given fractions of that maximum (wrk2-style: each
// login is timed from when it was due, so a stalled server cannot hide its queue), and prints one
// Markdown row per run. Any failed login is reported by status and makes the exit status 1.
// With --password-flood N it then runs the first rate's open loop three times alone and three times
// while N connections send password guesses for unknown users (PBKDF2 at 600 000 rounds each),
// each from a new address, alternated, and prints the ratio of the median device-login p99s.
// With --owner-password N it signs an owner up, signs them in once from their address, then times
// the owner's right-password logins from that address (four a second) three times alone and three
// times while N connections send guesses — half for the owner's username, half for unknown ones —
// each from a /48 of its own, and prints the owner's success rate and p99 both ways.
// After each closed loop it prints who used the machine's cores: itself, the servers, the rest
// (the database) and idle. BIOAUTH_LOAD_POOL_SIZE sets the servers' PostgreSQL pool (16).
// With --server …/bioauth-floor it measures the floor: the same logins on a server that does only
// what any server must (HTTP, JSON, the signature's verification, the access token's signature).

struct Options {
    var server = "../.build/release/bioauth-server"
    var database = "sqlite"
    var devices = 1_000
    var instances = 1
    var connections = 64
    var seconds = 10.0
    var rates: [Double] = [0.5, 0.8]
    /// Connections sending password guesses while a second open loop runs at the first rate; 0: none.
    var passwordFlood = 0
    /// Connections sending guesses from many /48s while the owner signs in with the password; 0: none.
    var ownerPasswordFlood = 0

    init(_ arguments: [String]) throws {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            guard let value = iterator.next() else { throw LoadError("\(flag) needs a value") }
            switch flag {
            case "--server": server = value
            case "--database": database = value
            case "--devices": devices = try Self.number(value, flag)
            case "--instances": instances = try Self.number(value, flag)
            case "--connections": connections = try Self.number(value, flag)
            case "--seconds": seconds = Double(try Self.number(value, flag))
            case "--rates": rates = value.split(separator: ",").compactMap { Double($0) }
            case "--password-flood": passwordFlood = try Self.number(value, flag)
            case "--owner-password": ownerPasswordFlood = try Self.number(value, flag)
            default: throw LoadError("unknown flag \(flag)")
            }
        }
    }

    static func number(_ text: String, _ flag: String) throws -> Int {
        guard let value = Int(text.replacingOccurrences(of: "_", with: "")), value > 0 else {
            throw LoadError("\(flag): expected a positive number")
        }
        return value
    }
}

struct LoadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Device `n`'s id: a lower-case UUID both databases can generate in SQL.
func deviceID(_ n: Int) -> String {
    String(format: "%08x-0000-4000-8000-%012x", n, n)
}

// MARK: Seeding

/// Creates the schema through the store, then inserts `count` devices (all with `spki`) in one
/// statement. Returns the `--database` value the servers get.
func seed(_ options: Options, spki: Data) async throws -> (database: String, cleanup: @Sendable () async -> Void) {
    if options.database == "sqlite" {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-load-\(UUID().uuidString).sqlite").path
        try await SQLiteStore.open(path: path).close()
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let connection = try await SQLiteConnection.open(
            storage: .file(path: path), threadPool: pool, logger: Logger(label: "seed"), on: MultiThreadedEventLoopGroup.singleton.any())
        _ = try await connection.query(
            """
            WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n + 1 < ?)
            INSERT INTO devices (id, user_id, name, public_key, created_at) SELECT printf('%08x-0000-4000-8000-%012x', n, n), 'user' || n, 'd', ?, ? FROM g
            """, [.integer(options.devices), .blob(ByteBuffer(bytes: spki)), .float(Date().timeIntervalSince1970)])
        try await connection.close()
        try await pool.shutdownGracefully()
        return (path, { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } })
    }
    guard let admin = PostgresStore.Location(url: options.database) else { throw LoadError("--database: sqlite or a postgres:// URL") }
    let name = "bioauth_load_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    let logger = Logger(label: "seed")
    @Sendable func run(_ sql: String, database: String?) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                host: admin.host, port: admin.port, username: admin.username, password: admin.password, database: database, tls: .disable),
            id: 1, logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }
    try await run("CREATE DATABASE \(name)", database: admin.database)
    var location = admin
    location.database = name
    let url = "postgres://\(admin.username)\(admin.password.map { ":" + $0 } ?? "")@\(admin.host):\(admin.port)/\(name)?sslmode=disable"
    try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 1)).close()
    try await run(
        """
        INSERT INTO devices (id, user_id, name, public_key, created_at)
        SELECT lpad(to_hex(n), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(n), 12, '0'), 'user' || n, 'd', '\\x\(spki.map { String(format: "%02x", $0) }.joined())', now()
        FROM generate_series(0, \(options.devices - 1)) AS n
        """, database: name)
    try await run("ANALYZE", database: name)
    return (url, { try? await run("DROP DATABASE \(name) WITH (FORCE)", database: admin.database) })
}

// MARK: Servers

final class Server {
    let process = Process()
    let port: Int
    /// One key-encryption key for every instance of the run: they share the sealed signing keys.
    static let signingKeyEncryption = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

    init(executable: String, database: String, deviceKey: Data) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        // The device key is for bioauth-floor, which has no database to read it from.
        let environment = [
            "BIOAUTH_SIGNING_KEY_KEK": Self.signingKeyEncryption, "BIOAUTH_LOAD_DEVICE_KEY": deviceKey.base64EncodedString(),
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.arguments = [
            "--port", "0", "--management-port", "0", "--database", database, "--relying-party", "load.test", "--requests-per-client",
            "1000000000", "--log-level", "error",
            "--database-tls", "disable", "--database-pool-size", ProcessInfo.processInfo.environment["BIOAUTH_LOAD_POOL_SIZE"] ?? "16",
            // The password flood comes from many addresses, as a botnet's would: no per-address limit stops it.
            "--trust-forwarded-for",
            // The owner-password row signs its owner up.
            "--allow-sign-up",
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let range = text.range(of: "http://127.0.0.1:"), let port = Int(text[range.upperBound...].prefix { $0.isNumber }) else {
            process.terminate()
            throw LoadError("bioauth-server did not start: \(text)")
        }
        self.port = port
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

// MARK: Logins

struct Outcome: Sendable {
    var latencyMicroseconds: UInt64
    var failure: String?
}

/// One keep-alive HTTP/1.1 connection on SwiftNIO, one request at a time. The load generator
/// shares the cores with the server it measures, so it stays lean: no connection-pool state
/// machine per request, only NIO's HTTP/1.1 codec.
final class HTTPConnection: Sendable {
    private let channel: any Channel
    private let collector: ResponseCollector

    private init(channel: any Channel, collector: ResponseCollector) {
        self.channel = channel
        self.collector = collector
    }

    static func connect(port: Int) async throws -> HTTPConnection {
        let collector = ResponseCollector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return HTTPConnection(channel: channel, collector: collector)
    }

    /// POSTs a JSON `body`, from `client` if given (`X-Forwarded-For`); the status and the whole response body.
    func post(_ path: String, _ body: String, client: String? = nil) async throws -> (Int, ByteBuffer) {
        let promise = channel.eventLoop.makePromise(of: (Int, ByteBuffer).self)
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
        head.headers = ["Host": "127.0.0.1", "Content-Type": "application/json", "Content-Length": "\(body.utf8.count)"]
        if let client { head.headers.add(name: "X-Forwarded-For", value: client) }
        let channel = channel, collector = collector
        channel.eventLoop.execute {
            collector.expect(promise)
            channel.write(NIOAny(HTTPClientRequestPart.head(head)), promise: nil)
            channel.write(NIOAny(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            channel.writeAndFlush(NIOAny(HTTPClientRequestPart.end(nil)), promise: nil)
        }
        return try await promise.futureResult.get()
    }

    func close() async { try? await channel.close() }
}

/// Gathers one response at a time for ``HTTPConnection``; only touched on its event loop.
final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private var promise: EventLoopPromise<(Int, ByteBuffer)>?
    private var status = 0
    private var body = ByteBuffer()

    func expect(_ promise: EventLoopPromise<(Int, ByteBuffer)>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            body.clear()
        case .body(var part): body.writeBuffer(&part)
        case .end:
            promise?.succeed((status, body))
            promise = nil
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise?.fail(error)
        promise = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise?.fail(ChannelError.ioOnClosedChannel)
        promise = nil
    }
}

/// Open connections to one server instance, lent one login at a time.
final class ConnectionPool: Sendable {
    private let state = Mutex<(idle: [HTTPConnection], waiters: [CheckedContinuation<HTTPConnection, Never>])>(([], []))
    private let all: [HTTPConnection]

    init(port: Int, connections: Int) async throws {
        var opened: [HTTPConnection] = []
        for _ in 0..<connections { opened.append(try await HTTPConnection.connect(port: port)) }
        all = opened
        state.withLock { $0.idle = opened }
    }

    func withConnection<T>(_ body: (HTTPConnection) async throws -> T) async rethrows -> T {
        let connection = await acquire()
        defer { release(connection) }
        return try await body(connection)
    }

    private func acquire() async -> HTTPConnection {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> HTTPConnection? in
                if let connection = state.idle.popLast() { return connection }
                state.waiters.append(continuation)
                return nil
            }
            if let idle { continuation.resume(returning: idle) }
        }
    }

    private func release(_ connection: HTTPConnection) {
        let waiter = state.withLock { state -> CheckedContinuation<HTTPConnection, Never>? in
            if state.waiters.isEmpty {
                state.idle.append(connection)
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.resume(returning: connection)
    }

    func close() async { for connection in all { await connection.close() } }
}

struct Client: Sendable {
    let pools: [ConnectionPool]
    let key: P256.Signing.PrivateKey
    let devices: Int

    /// One full login for device `n` through instance `n % instances`, on one connection; nil on
    /// success, else why.
    func login(_ n: Int) async -> String? {
        let device = n % devices
        return await pools[n % pools.count].withConnection { connection in
            do {
                let (status, body) = try await connection.post(
                    "/v1/login/challenge", #"{"userId":"user\#(device)","deviceId":"\#(deviceID(device))"}"#)
                guard status == 200 else { return "challenge \(status)" }
                let envelope = try JSONDecoder().decode(ChallengeEnvelope.self, from: Data(body.readableBytesView))
                let signature = Base64URL.encode(try key.signature(for: try envelope.message().encoded).derRepresentation)
                let (finish, _) = try await connection.post(
                    "/v1/login/finish", #"{"challengeId":"\#(envelope.challengeId)","signature":"\#(signature)"}"#)
                return finish == 200 ? nil : "finish \(finish)"
            } catch {
                return "transport \(type(of: error))"
            }
        }
    }
}

final class Tally: Sendable {
    private let state = Mutex<(histogram: Histogram<UInt64>, failures: [String: Int], count: Int)>(
        (Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three), [:], 0))

    func record(_ microseconds: UInt64, _ failure: String?) {
        state.withLock { state in
            state.histogram.record(min(microseconds, 60_000_000))
            state.count += 1
            if let failure { state.failures[failure, default: 0] += 1 }
        }
    }

    var snapshot: (histogram: Histogram<UInt64>, failures: [String: Int], count: Int) { state.withLock { $0 } }
}

/// CPU time so far, in seconds: of this process, of the server processes, and of the whole
/// machine (busy and total, all cores, from /proc/stat) — to say who used the cores in a run.
struct CPUSample {
    var loadGenerator: Double
    var servers: Double
    var machineBusy: Double
    var machineTotal: Double

    static let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func now(servers: [Server]) -> CPUSample {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let own = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        let serverTicks = servers.reduce(0.0) { sum, server in
            // /proc/PID/stat: utime and stime are fields 14 and 15, counted after the ")" that ends the name.
            guard let stat = try? String(contentsOfFile: "/proc/\(server.process.processIdentifier)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { return sum }
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return sum + (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        }
        let line = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8))?.split(separator: "\n").first ?? ""
        let times = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        let idle = times.count > 4 ? times[3] + times[4] : 0  // idle + iowait
        let total = times.prefix(8).reduce(0, +)
        return CPUSample(loadGenerator: own, servers: serverTicks / ticks, machineBusy: (total - idle) / ticks, machineTotal: total / ticks)
    }

    /// The shares of the machine (all cores = 100 %) from `start` to `self`.
    func shares(since start: CPUSample) -> String {
        let total = max(machineTotal - start.machineTotal, 1e-9)
        func percent(_ seconds: Double) -> String { "\(Int((seconds / total * 100).rounded())) %" }
        let load = loadGenerator - start.loadGenerator, server = servers - start.servers, busy = machineBusy - start.machineBusy
        return
            "CPU of the machine (\(ProcessInfo.processInfo.activeProcessorCount) cores = 100 %): load generator \(percent(load)), bioauth-server \(percent(server)), database and the rest \(percent(max(0, busy - load - server))), idle \(percent(max(0, total - busy)))"
    }
}

func microseconds(since start: ContinuousClock.Instant) -> UInt64 {
    let elapsed = ContinuousClock.now - start
    return UInt64(max(0, elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000))
}

/// `connections` workers, each logging in again as soon as its last login ends.
func closedLoop(_ client: Client, connections: Int, seconds: Double) async -> (rate: Double, tally: Tally) {
    let tally = Tally()
    let start = ContinuousClock.now
    let deadline = start + .milliseconds(Int(seconds * 1000))
    await withTaskGroup(of: Void.self) { group in
        for worker in 0..<connections {
            group.addTask {
                var n = worker
                while ContinuousClock.now < deadline {
                    let begin = ContinuousClock.now
                    let failure = await client.login(n)
                    tally.record(microseconds(since: begin), failure)
                    n += connections
                }
            }
        }
    }
    return (Double(tally.snapshot.count) / seconds, tally)
}

/// Logins due at a fixed rate, each timed from when it was due (no coordinated omission).
func openLoop(_ client: Client, rate: Double, seconds: Double) async -> Tally {
    let tally = Tally()
    let total = Int(rate * seconds)
    let start = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
        for n in 0..<total {
            let due = start + .nanoseconds(Int64(Double(n) / rate * 1e9))
            try? await Task.sleep(until: due, clock: .continuous)
            group.addTask {
                let failure = await client.login(n)
                tally.record(microseconds(since: due), failure)
            }
        }
    }
    return tally
}

/// Password guesses for unknown users from `connections` workers, each from a new address, until
/// `stop` is set; how many were answered with each status.
final class PasswordFlood: Sendable {
    private final class Shared: Sendable {
        let stopped = Atomic<Bool>(false)
        let statuses = Mutex<[Int: Int]>([:])
    }
    private let shared = Shared()
    private let task: Task<Void, Never>

    /// Guesses for unknown users from a new IPv4 address each; with `owner`, every other guess is
    /// for the owner's username, and each comes from an IPv6 /48 of its own.
    init(port: Int, connections: Int, owner: String? = nil) async throws {
        var opened: [HTTPConnection] = []
        for _ in 0..<connections { opened.append(try await HTTPConnection.connect(port: port)) }
        let shared = shared
        task = Task {
            await withTaskGroup(of: Void.self) { group in
                for (worker, connection) in opened.enumerated() {
                    group.addTask {
                        var n = 0
                        while !shared.stopped.load(ordering: .relaxed) {
                            n += 1
                            let client =
                                owner == nil
                                ? "10.\(worker % 256).\(n / 256 % 256).\(n % 256)"
                                : "2a0\(worker % 10):\(String(n / 65_536 % 65_536, radix: 16)):\(String(n % 65_536, radix: 16))::1"
                            let username = owner.flatMap { n % 2 == 0 ? $0 : nil } ?? "guess\(worker)x\(n)"
                            let body = #"{"username":"\#(username)","password":"guessed password \#(n)"}"#
                            let status = (try? await connection.post("/v1/login/password", body, client: client).0) ?? 0
                            shared.statuses.withLock { $0[status, default: 0] += 1 }
                        }
                        await connection.close()
                    }
                }
            }
        }
    }

    /// Stops the senders; the statuses they were answered with.
    func stop() async -> [Int: Int] {
        shared.stopped.store(true, ordering: .relaxed)
        await task.value
        return shared.statuses.withLock { $0 }
    }
}

func milliseconds(_ value: UInt64) -> String { String(format: "%.2f", Double(value) / 1000) }

/// A row's latency cells: p50, p99, p99.9 and max.
func latencies(_ h: Histogram<UInt64>) -> String {
    "p50 \(milliseconds(h.valueAtPercentile(50))) ms | p99 \(milliseconds(h.valueAtPercentile(99))) ms | p99.9 \(milliseconds(h.valueAtPercentile(99.9))) ms | max \(milliseconds(h.max)) ms"
}

/// How a flood was answered: `57 × 401, 19688 × 503`.
func answers(_ statuses: [Int: Int]) -> String {
    statuses.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
}

// MARK: Run

let options: Options
do { options = try Options(CommandLine.arguments) } catch {
    FileHandle.standardError.write(Data("bioauth-load: \(error)\n".utf8))
    exit(2)
}
let key = P256.Signing.PrivateKey()
// bioauth-floor (HTTP, JSON and the login's crypto, no database) gets a label of its own.
let floor = URL(fileURLWithPath: options.server).lastPathComponent == "bioauth-floor"
let kind = floor ? "Floor (bioauth-floor: HTTP, JSON, crypto; no database)" : options.database == "sqlite" ? "SQLite" : "PostgreSQL"
let seedStart = ContinuousClock.now
let (database, cleanup) = try await seed(options, spki: key.publicKey.derRepresentation)
let seedSeconds = Double(microseconds(since: seedStart)) / 1e6
var servers: [Server] = []
for _ in 0..<options.instances {
    servers.append(try Server(executable: options.server, database: database, deviceKey: key.publicKey.derRepresentation))
}
var pools: [ConnectionPool] = []
for server in servers { pools.append(try await ConnectionPool(port: server.port, connections: options.connections)) }
let client = Client(pools: pools, key: key, devices: options.devices)

let label = "\(kind), \(options.instances) instance\(options.instances == 1 ? "" : "s"), \(options.devices.formatted()) devices"
print(
    "seeded \(options.devices) devices in \(String(format: "%.1f", seedSeconds)) s; \(options.connections) connections, \(Int(options.seconds)) s per run"
)
_ = await closedLoop(client, connections: options.connections, seconds: min(2, options.seconds))  // warm-up
let cpuBefore = CPUSample.now(servers: servers)
let (maximum, closed) = await closedLoop(client, connections: options.connections, seconds: options.seconds)
let cpuShares = CPUSample.now(servers: servers).shares(since: cpuBefore)
var failures = closed.snapshot.failures
let histogram = closed.snapshot.histogram
print(
    "| \(label) | closed loop | \(Int(maximum)) logins/s | p50 \(milliseconds(histogram.valueAtPercentile(50))) ms | p99 \(milliseconds(histogram.valueAtPercentile(99))) ms | p99.9 \(milliseconds(histogram.valueAtPercentile(99.9))) ms | max \(milliseconds(histogram.max)) ms |"
)
print("cpu, \(label), closed loop: \(cpuShares)")
for fraction in options.rates {
    let rate = (maximum * fraction).rounded()
    let tally = await openLoop(client, rate: rate, seconds: options.seconds)
    let snapshot = tally.snapshot
    for (reason, count) in snapshot.failures { failures[reason, default: 0] += count }
    let h = snapshot.histogram
    print(
        "| \(label) | open loop at \(Int(fraction * 100)) % (\(Int(rate))/s) | \(snapshot.count) logins | p50 \(milliseconds(h.valueAtPercentile(50))) ms | p99 \(milliseconds(h.valueAtPercentile(99))) ms | p99.9 \(milliseconds(h.valueAtPercentile(99.9))) ms | max \(milliseconds(h.max)) ms |"
    )
}
if options.passwordFlood > 0, let fraction = options.rates.first {
    // The same open loop alone and beside a password flood, alternated three times: the machine's
    // noise moves a p99 by up to 2× from one run to the next, so the medians are compared.
    let rate = (maximum * fraction).rounded()
    var p99: [Bool: [Double]] = [:]
    for _ in 0..<3 {
        for flooded in [false, true] {
            let flood = flooded ? try await PasswordFlood(port: servers[0].port, connections: options.passwordFlood) : nil
            let tally = await openLoop(client, rate: rate, seconds: options.seconds)
            let statuses = await flood?.stop() ?? [:]
            let snapshot = tally.snapshot
            for (reason, count) in snapshot.failures { failures[reason, default: 0] += count }
            let h = snapshot.histogram
            p99[flooded, default: []].append(Double(h.valueAtPercentile(99)))
            let mode =
                flooded
                ? "open loop at \(Int(fraction * 100)) % (\(Int(rate))/s) + password flood (\(options.passwordFlood) connections; answered \(answers(statuses)))"
                : "open loop at \(Int(fraction * 100)) % (\(Int(rate))/s), no flood"
            print("| \(label) | \(mode) | \(snapshot.count) logins | \(latencies(h)) |")
        }
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let (alone, flooded) = (median(p99[false] ?? []), median(p99[true] ?? []))
    print(
        "device-login p99, median of 3: \(milliseconds(UInt64(flooded))) ms with the password flood / \(milliseconds(UInt64(alone))) ms without: \(String(format: "%.2f", flooded / max(alone, 1)))×"
    )
}
if options.ownerPasswordFlood > 0 {
    // The owner signs up and in from their address, which the server then knows.
    let ownerAddress = "2001:db8:beef::7"
    let owner = try await HTTPConnection.connect(port: servers[0].port)
    let credentials = #"{"username":"owner","password":"the owner's right password"}"#
    let (created, _) = try await owner.post("/v1/users", credentials, client: ownerAddress)
    let (first, _) = try await owner.post("/v1/login/password", credentials, client: ownerAddress)
    guard created == 201 || created == 200, first == 200 else {
        throw LoadError("the owner could not sign up (\(created)) or in (\(first))")
    }
    var rows: [Bool: [(success: Double, p99: Double)]] = [:]
    for _ in 0..<3 {
        for flooded in [false, true] {
            let flood =
                flooded ? try await PasswordFlood(port: servers[0].port, connections: options.ownerPasswordFlood, owner: "owner") : nil
            let tally = Tally()
            var admitted = 0
            let start = ContinuousClock.now
            var n = 0
            while ContinuousClock.now < start + .seconds(options.seconds) {
                let due = start + .milliseconds(250 * n)
                try? await Task.sleep(until: due, clock: .continuous)
                let (status, _) = try await owner.post("/v1/login/password", credentials, client: ownerAddress)
                if status == 200 { admitted += 1 }
                tally.record(microseconds(since: due), status == 200 ? nil : "\(status)")
                n += 1
            }
            let statuses = await flood?.stop() ?? [:]
            let success = Double(admitted) / Double(max(n, 1))
            let h = tally.snapshot.histogram
            rows[flooded, default: []].append((success, Double(h.valueAtPercentile(99))))
            let mode =
                flooded
                ? "owner's right password + guesses from many /48s (\(options.ownerPasswordFlood) connections; answered \(answers(statuses)))"
                : "owner's right password, no flood"
            print("| \(label) | \(mode) | \(n) logins, \(String(format: "%.0f", success * 100)) % admitted | \(latencies(h)) |")
        }
    }
    await owner.close()
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let alone = rows[false] ?? [], flooded = rows[true] ?? []
    let (aloneP99, floodedP99) = (median(alone.map(\.p99)), median(flooded.map(\.p99)))
    print(
        "owner password login, median of 3: \(String(format: "%.0f", median(flooded.map(\.success)) * 100)) % admitted with the flood / \(String(format: "%.0f", median(alone.map(\.success)) * 100)) % without; p99 \(milliseconds(UInt64(floodedP99))) ms / \(milliseconds(UInt64(aloneP99))) ms: \(String(format: "%.2f", floodedP99 / max(aloneP99, 1)))×"
    )
}
for pool in pools { await pool.close() }
for server in servers { server.stop() }
await cleanup()
if !failures.isEmpty {
    FileHandle.standardError.write(
        Data(
            "bioauth-load: FAILED logins: \(failures.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))\n"
                .utf8))
    exit(1)
}
