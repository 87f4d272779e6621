import BioAuthCLI
import BioAuthCore
import BioAuthPostgres
import BioAuthSQL
import BioAuthServer
import BioAuthServerTesting
import BioAuthTesting
import Crypto
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

/// The PostgreSQL store, and several `bioauth-server` instances over one database. Serialised:
/// the last test stops and restarts the shared PostgreSQL server.
@Suite(.serialized, .enabled(if: PostgresTestServer.enabled, PostgresTestServer.skipReason))
struct PostgresTests {
    @Test(arguments: StoreConformance.Check.allCases)
    func postgresStoreConforms(_ check: StoreConformance.Check) async throws {
        try await StoreConformance { try await PostgresTestServer.freshStore() }.run(check)
    }

    /// The login statements run unnamed (`--no-database-prepared-statements`, for an old pooler)
    /// behave the same: every check, so that a field one path forgets fails on both.
    @Test(arguments: StoreConformance.Check.allCases)
    func postgresStoreConformsWithoutPreparedStatements(_ check: StoreConformance.Check) async throws {
        let options = PostgresTestServer.testOptions(preparedStatements: false)
        try await StoreConformance { try await PostgresTestServer.freshStore(options: options) }.run(check)
    }

    /// A login whose signature verified while a revocation (another instance's transaction) held
    /// the device row: the revocation commits first, and the login is refused, writes nothing and
    /// is audited. Without the login's device-key guard it stored a live session the revocation's
    /// withdrawal had not seen.
    @Test(.timeLimit(.minutes(2)))
    func aLoginRacingARevocationGetsNoSession() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let location = try #require(PostgresStore.Location(url: url))
        // No login events queued, as a deployment without webhooks runs: the login's one-statement writes.
        let harness = ServerHarness(store: try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 4))) {
            $0.publishedEvents = []
        }
        try await harness.test { api in
            let device = SoftwareDevice()
            let id = try await api.enrol(device, token: try await api.primarySession())
            let challenge = try await api.loginChallenge("alice", id)
            let logger = Logger(label: "postgres-test")
            let revocation = try await PostgresConnection.connect(
                configuration: .init(
                    host: location.host, port: location.port, username: location.username, password: location.password,
                    database: location.database, tls: .disable),
                id: 3, logger: logger)
            let at = Date()
            try await revocation.query("BEGIN", logger: logger)
            try await revocation.query("UPDATE devices SET revoked_at = \(at) WHERE id = \(id)", logger: logger)
            try await revocation.query(
                "UPDATE sessions SET revoked_at = \(at) WHERE device_id = \(id) AND revoked_at IS NULL", logger: logger)
            async let finished = api.finish(challenge, signature: try device.sign(challenge))
            // The login has read the device (still active for it) and now waits for the row.
            var waiting = 0
            for _ in 0..<200 where waiting == 0 {
                try await Task.sleep(for: .milliseconds(20))
                waiting =
                    try await revocation.query(
                        "SELECT count(*)::int FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
                        logger: logger
                    ).collect().first?.decode(Int.self) ?? 0
            }
            try await revocation.query("COMMIT", logger: logger)
            let reply = try await finished
            try await revocation.close()
            #expect(waiting == 1, "the login never waited for the revocation's row lock")
            #expect(reply.isUniformFailure, "\(reply.status) \(reply.text)")
            let live = try await PostgresTestServer.execute(
                "SELECT count(*)::int FROM sessions WHERE device_id = '\(id)' AND revoked_at IS NULL", on: url)
            #expect(try live.first?.decode(Int.self) == 0)
            let last = try await harness.service.store.auditEvents(userID: "alice", limit: 1).first
            #expect(last?.kind == .loginFailed && last?.reason?.description == "revokedDevice")
        }
    }

    /// A device login is decided on the rows as read — or, finished on the instance that issued its
    /// challenge, as remembered when it was stored — then taken and written by one statement. Each
    /// way the rows can change in between is caught: nothing changed (decided once, applied); the
    /// challenge taken by another request, the address locked out or the device revoked since (the
    /// statement takes nothing; decided again inside a transaction, on the rows it read).
    @Test func aLoginDecidedBeforeItsStatementIsDecidedAgainWhenItsRowsChanged() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let location = try #require(PostgresStore.Location(url: url))
        let store = try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2))
        let otherInstance = try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2))
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        let lockout = LockoutQuery(windowStart: at, client: "203.0.113.9", clientLimit: 3)
        enum Change: Sendable { case none, challengeTaken, lockedOut, deviceRevoked }
        enum Seen: Sendable, Equatable { case challenge, noChallenge, lockedOut, revokedDevice }
        func login(_ change: Change, finishingOn finishing: PostgresStore) async throws -> (
            seen: [Seen], outcome: PlanOutcome, session: SessionRecord
        ) {
            let record = ChallengeRecord(
                id: ChallengeID(bytes: SecretBytes.random(count: 16).data), binding: .login, relyingPartyID: "rp", userID: "alice",
                deviceID: "d1",
                nonce: SecretBytes.random(count: 32).data, createdAt: at, expiresAt: at.addingTimeInterval(60))
            #expect(try await store.apply(.issueChallenge(record, lockout: lockout)).wasApplied)
            let session = SessionRecord(
                id: .random(), tokenHash: TokenHash(ofText: UUID().uuidString), userID: "alice", deviceID: "d1", kind: .device,
                createdAt: at,
                expiresAt: at.addingTimeInterval(600))
            let seen = Mutex<[Seen]>([])
            let (_, outcome) = try await finishing.consumeChallenge(id: record.id, lockout: lockout) { taken in
                let first = seen.withLock { seen in
                    seen.append(
                        taken == nil
                            ? .noChallenge : taken!.lockedOut ? .lockedOut : taken!.device?.revokedAt != nil ? .revokedDevice : .challenge)
                    return seen.count == 1
                }
                if first {
                    let sql =
                        switch change {
                        case .none: ""
                        case .challengeTaken:
                            "DELETE FROM challenges WHERE id = '\\x\(record.id.bytes.map { String(format: "%02x", $0) }.joined())'"
                        case .lockedOut:
                            "INSERT INTO counters (key, window_start, count) VALUES ('\(FailureSubject.client(lockout.client).storageKey)', '2026-01-01T00:00:00Z', 3)"
                        case .deviceRevoked: "UPDATE devices SET revoked_at = now() WHERE id = 'd1'"
                        }
                    if !sql.isEmpty { _ = try? PostgresTestServer.executeBlocking(sql, on: url) }
                }
                guard let taken, !taken.lockedOut else { return ((), .events([])) }
                var plan = WritePlan.login(
                    session, from: "203.0.113.9", audit: AuditEvent(at: at, kind: .loginSucceeded, userID: "alice", deviceID: "d1"))
                plan.require(.activeDeviceKey(id: "d1", userID: "alice", publicKey: taken.device?.publicKey ?? Data()))
                return ((), plan.publishing([]))
            }
            return (seen.withLock { $0 }, outcome, session)
        }
        for (finishing, instance) in [(store, "the issuing instance"), (otherInstance, "another instance")] {
            _ = try await PostgresTestServer.execute(
                "INSERT INTO devices (id, user_id, name, public_key, created_at) VALUES ('d1', 'alice', 'Phone', '\\x04', now()) ON CONFLICT (id) DO UPDATE SET revoked_at = NULL",
                on: url)
            let unchanged = try await login(.none, finishingOn: finishing)
            #expect(
                unchanged.seen == [.challenge] && unchanged.outcome.wasApplied, "\(instance): decided once, written by the one statement")
            #expect(try await store.session(tokenHash: unchanged.session.tokenHash) != nil)
            let taken = try await login(.challengeTaken, finishingOn: finishing)
            #expect(
                taken.seen == [.challenge, .noChallenge], "\(instance): the challenge gone: decided again on what the transaction took")
            #expect(try await store.session(tokenHash: taken.session.tokenHash) == nil)
            let locked = try await login(.lockedOut, finishingOn: finishing)
            #expect(locked.seen == [.challenge, .lockedOut], "\(instance): the address locked out since: decided again")
            #expect(try await store.session(tokenHash: locked.session.tokenHash) == nil)
            _ = try await PostgresTestServer.execute("DELETE FROM counters", on: url)
            let revoked = try await login(.deviceRevoked, finishingOn: finishing)
            #expect(revoked.seen == [.challenge, .revokedDevice], "\(instance): the device revoked since: decided again on its row")
            #expect(
                revoked.outcome.refusal == .activeDeviceKey(id: "d1", userID: "alice", publicKey: Data([4])),
                "this test's plan still asks for the old key")
            #expect(try await store.session(tokenHash: revoked.session.tokenHash) == nil)
            #expect(
                try await PostgresTestServer.execute("SELECT 1 FROM challenges", on: url).isEmpty, "\(instance): every challenge was spent")
        }
        // The issuing instance still remembers the four finished elsewhere, until they expire: an
        // out-of-date entry, which the statement would refuse.
        #expect(store.issued.count == 4 && otherInstance.issued.count == 0)
        // Which rows were decided on: a rename after the issue (which no statement checks) is seen
        // by another instance, which reads, and not by the issuing one, which remembers.
        for (finishing, expected) in [(store, "Phone"), (otherInstance, "Renamed")] {
            let record = ChallengeRecord(
                id: ChallengeID(bytes: SecretBytes.random(count: 16).data), binding: .login, relyingPartyID: "rp", userID: "alice",
                deviceID: "d1",
                nonce: SecretBytes.random(count: 32).data, createdAt: at, expiresAt: at.addingTimeInterval(60))
            _ = try await PostgresTestServer.execute("UPDATE devices SET name = 'Phone'", on: url)
            #expect(try await store.apply(.issueChallenge(record, lockout: lockout)).wasApplied)
            _ = try await PostgresTestServer.execute("UPDATE devices SET name = 'Renamed'", on: url)
            let names = Mutex<[String?]>([])
            _ = try await finishing.consumeChallenge(id: record.id, lockout: lockout) { taken in
                names.withLock { $0.append(taken?.device?.name) }
                return ((), .events([]))
            }
            #expect(names.withLock { $0.first } == expected)
        }
        try await store.close()
        try await otherInstance.close()
    }

    /// Four instances starting at once on an empty database: each waits for the advisory lock,
    /// every migration is applied exactly once, and reopening applies nothing.
    @Test func migrationsAreAppliedOnceWhenInstancesStartTogether() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let location = try #require(PostgresStore.Location(url: url))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2)).close() } }
            try await group.waitForAll()
        }
        try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2)).close()
        let versions = try await PostgresTestServer.execute("SELECT version FROM bioauth_migrations ORDER BY version", on: url).map {
            try $0.decode(Int.self)
        }
        #expect(versions == Array(1...Schema.migrations.count))
    }

    /// A server runs the store's pool in its own service group: the store connects to nothing
    /// until the group runs it, is ready after `prepare()` (migrated), and its pool ends with the
    /// group's graceful shutdown — no task of its own outlives the group.
    @Test func thePoolRunsAsAServiceInTheCallersGroup() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let store = PostgresStore(try #require(PostgresStore.Location(url: url)), options: .init(tls: .disable, poolSize: 2))
        let group = ServiceGroup(services: [store], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        try await store.prepare()
        let versions = try await PostgresTestServer.execute("SELECT count(*) FROM bioauth_migrations", on: url)
        #expect(try versions.first?.decode(Int.self) == Schema.migrations.count)
        let lockout = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "203.0.113.9", clientLimit: 3)
        #expect(try await store.passwordLoginState(username: "alice", lockout: lockout) == PasswordLoginState(user: nil, lockedOut: false))
        await group.triggerGracefulShutdown()
        try await running.value
        let afterShutdown = await #expect(throws: StoreError.self) {
            try await store.passwordLoginState(username: "alice", lockout: lockout)
        }
        #expect(afterShutdown?.code == .unavailable)
        try await store.close()
    }

    /// A migration written once (`SchemaChange`) is valid PostgreSQL and declares the described
    /// types (SQLite's side: `SchemaTests`).
    @Test func aSharedMigrationAddsTheDescribedColumnsToPostgreSQL() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let location = try #require(PostgresStore.Location(url: url))
        try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2)).close()
        for statement in SchemaMigration.sample.statements(in: .postgres) { _ = try await PostgresTestServer.execute(statement, on: url) }
        let store = try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2))
        let declared = try await store.declaredColumns().filter { $0.table == "devices" }
        #expect(Array(declared.suffix(SchemaMigration.sampleColumns.count)) == SchemaMigration.declared(typeName: PostgresStore.typeName))
        try await store.close()
        let index = try await PostgresTestServer.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'devices_sample'", on: url)
        #expect(try index.first?.decode(String.self).hasSuffix("(sample_text, sample_date) WHERE (sample_integer > 0)") == true)
    }

    /// The migrations are the shared list, they build the described schema, and a database a newer
    /// BioAuth migrated is refused before anything is read or written.
    @Test func theSchemaIsTheSharedDescriptionAndANewerDatabaseIsRefused() async throws {
        #expect(PostgresStore.migrations.map(\.name) == Schema.migrations)
        #expect(PostgresStore.migrations.map(\.version) == Array(1...Schema.migrations.count))
        let url = try await PostgresTestServer.freshDatabaseURL()
        let location = try #require(PostgresStore.Location(url: url))
        let store = try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2))
        #expect(try await store.declaredColumns() == Schema.declared(typeName: PostgresStore.typeName))
        try await store.close()
        // Challenges, and only they, skip the write-ahead log: a crash may lose them, nothing else.
        let unlogged = try await PostgresTestServer.execute(
            "SELECT relname FROM pg_class WHERE relpersistence = 'u' AND relkind = 'r' AND relnamespace = 'public'::regnamespace", on: url)
        #expect(try unlogged.map { try $0.decode(String.self) } == ["challenges"])
        _ = try await PostgresTestServer.execute(
            "INSERT INTO bioauth_migrations (version, name, applied_at) VALUES (99, 'Sessions carry a device attestation', now())", on: url)
        let error = await #expect(throws: StoreError.self) {
            try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2))
        }
        #expect(error?.code == .schemaTooNew)
    }

    /// Issue 43: a decision that waits past `lock_timeout` for a row another transaction holds is
    /// `unavailable` (503 with Retry-After, safe to retry), not a 500.
    @Test func aLockTimeoutIsUnavailable() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let location = try #require(PostgresStore.Location(url: url))
        let holder = try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2))
        let waiter = try await PostgresStore.open(location, options: .init(tls: .disable, poolSize: 2, lockTimeout: .milliseconds(100)))
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let request = EnrolmentRequestRecord(
            id: "r1", userID: "alice", deviceID: "d1", name: "Pad", publicKey: Data(repeating: 1, count: 91), replacing: false,
            sessionID: "s",
            createdAt: t0, expiresAt: t0.addingTimeInterval(900))
        #expect(
            try await holder.run(RequestEnrolment(request, maxPending: 5, now: t0, audit: AuditEvent(at: t0, kind: .enrolmentRequested)))
                == nil)
        let locked = Task {
            // Holds the request's row for a second inside its transaction.
            try await holder.decide(locking: RowLocks(enrolmentRequest: "r1")) { _ in
                Thread.sleep(forTimeInterval: 1)
                return ((), WritePlan())
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        await #expect(throws: StoreError(.unavailable, detail: "postgres 55P03")) {
            try await waiter.run(
                OwnedRequestDecision.cancel(id: "r1", userID: "alice", now: t0, audit: AuditEvent(at: t0, kind: .enrolmentRequestEnded)))
        }
        _ = try await locked.value
        try await holder.close()
        try await waiter.close()
    }

    /// A NULL where the schema forbids one is an error, never a default.
    @Test func corruptRowsAreErrorsNotDefaults() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let store = try await PostgresStore.open(try #require(PostgresStore.Location(url: url)), options: .init(tls: .disable, poolSize: 2))
        _ = try await PostgresTestServer.execute(
            "INSERT INTO challenges (id, purpose, rp_id, user_id, device_id, nonce, created_at, expires_at) VALUES ('\\x01', 3, 'rp', 'u', 'd', '\\x02', now(), now())",
            on: url)
        _ = try await PostgresTestServer.execute(
            "INSERT INTO sessions (token_hash, id, user_id, kind, created_at, expires_at) VALUES ('\\x03', 's', 'u', 'admin', now(), now())",
            on: url)
        let lockout = LockoutQuery(windowStart: Date(timeIntervalSince1970: 0), client: "c", clientLimit: 1)
        await #expect(throws: StoreError(.corruptRow, detail: "challenges.operation_hash")) {
            try await store.consumeChallenge(id: ChallengeID(bytes: Data([1])), lockout: lockout) { _ in ((), WritePlan()) }
        }
        await #expect(throws: StoreError(.corruptRow, detail: "sessions.kind")) {
            try await store.session(tokenHash: TokenHash(digest: Data([3])))
        }
        try await store.close()
    }

    @Test func databaseURLsAreParsedStrictlyAndPrintWithoutThePassword() throws {
        let location = try #require(PostgresStore.Location(url: "postgres://app:s%40cret@db.internal:6543/bioauth?sslmode=require"))
        #expect(location.host == "db.internal" && location.port == 6543 && location.username == "app" && location.password == "s@cret")
        #expect(location.database == "bioauth" && location.sslMode == .require)
        #expect(!"\(location)".contains("cret"))
        for bad in ["postgres://db.internal/bioauth", "mysql://u@h/d", "postgres://u@h/d?sslmode=sometimes", "not a url"] {
            #expect(PostgresStore.Location(url: bad) == nil, "\(bad)")
        }
    }

    // MARK: Three instances over one database

    @Test(.timeLimit(.minutes(2)))
    func aChallengeIssuedByOneInstanceIsFinishedOnAnother() async throws {
        try await Cluster.with { cluster in
            let device = try await cluster.enrol(user: "alice", on: 0)
            let challenge = try await cluster.client(0).post("/v1/login/challenge", ["userId": "alice", "deviceId": device.id])
            #expect(challenge.status == 200)
            let finish = try await cluster.client(1).post("/v1/login/finish", try device.answer(challenge))
            #expect(finish.status == 200)
            let devices = try await cluster.client(2).get("/v1/devices", token: finish["token"])
            #expect(devices.status == 200 && devices.text.contains(device.id))
        }
    }

    /// 300 concurrent finishes of one challenge, spread over three instances: one success.
    @Test(.timeLimit(.minutes(2)))
    func oneChallengeRacedOverThreeInstancesSucceedsExactlyOnce() async throws {
        try await Cluster.with { cluster in
            let device = try await cluster.enrol(user: "alice", on: 0)
            let challenge = try await cluster.client(0).post("/v1/login/challenge", ["userId": "alice", "deviceId": device.id])
            let answer = try device.answer(challenge)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<300 { group.addTask { try await cluster.client(index % 3).post("/v1/login/finish", answer).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 401 }.count == 299, "\(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count))")
        }
    }

    /// The sending address's failure limit (30 guesses per window) is reached by wrong passwords
    /// spread over the instances, and then every instance refuses that address's password login
    /// to users who never signed in from it — while alice, who did, and a device's valid signature
    /// from the same address still get through on each (issue 43).
    @Test(.timeLimit(.minutes(4)))
    func failureCountersAndLockoutsAreSharedByEveryInstance() async throws {
        try await Cluster.with { cluster in
            let device = try await cluster.enrol(user: "alice", on: 0)
            // The instances count in fixed five-minute windows of real time: all 30 guesses and the
            // checks must fall in one, however slow the machine.
            try await Cluster.waitForAWindowWithTimeLeft(.seconds(90))
            for attempt in 0..<30 {
                let guess = try await cluster.client(attempt % 3).post(
                    "/v1/login/password", ["username": "nobody\(attempt)", "password": "wrong password"])
                #expect(guess.status == 401, "attempt \(attempt)")
            }
            for index in 0..<3 {
                // A username never signed in from this address waits; alice, who did, still gets through.
                let refused = try await cluster.client(index).post(
                    "/v1/login/password", ["username": "mallory", "password": Cluster.password])
                #expect(refused.status == 429 && refused.retryAfter != nil, "instance \(index) answered \(refused.status)")
                let known = try await cluster.client(index).post(
                    "/v1/login/password", ["username": "alice", "password": Cluster.password])
                #expect(known.status == 200, "instance \(index) answered alice \(known.status)")
                _ = try await cluster.login(device, on: index)
            }
        }
    }

    /// Issue 43: the request window is the deployment's, not each process's. A client sending
    /// round-robin to three processes gets the limit plus the documented slack ((N − 1) × a
    /// twentieth), not three times the limit.
    @Test(.timeLimit(.minutes(2)))
    func threeProcessesShareOneRequestWindow() async throws {
        try await Cluster.with(requestsPerClient: 60) { cluster in
            var answered: [Int: Int] = [:]
            for n in 0..<180 {
                let reply = try await cluster.client(n % 3).get("/v1/devices", token: Base64URL.encode(Data(repeating: 7, count: 32)))
                answered[reply.status, default: 0] += 1
            }
            let admitted = answered[401] ?? 0
            #expect((60...66).contains(admitted) && admitted + (answered[429] ?? 0) == 180, "\(answered)")
        }
    }

    /// A session revoked, and a device revoked, through one instance are refused by the others
    /// on their next request.
    @Test(.timeLimit(.minutes(2)))
    func revocationThroughOneInstanceIsRefusedByTheOthers() async throws {
        try await Cluster.with { cluster in
            let device = try await cluster.enrol(user: "alice", on: 0)
            let first = try await cluster.login(device, on: 0)
            let second = try await cluster.login(device, on: 1)
            #expect(try await cluster.client(2).get("/v1/devices", token: first).status == 200)
            #expect(try await cluster.client(0).post("/v1/logout", [:], token: first).status == 204)
            for index in 1..<3 { #expect(try await cluster.client(index).get("/v1/devices", token: first).status == 401) }
            #expect(try await cluster.client(2).get("/v1/devices", token: second).status == 200)
            let primary = try await cluster.client(1).post("/v1/login/password", ["username": "alice", "password": Cluster.password])[
                "token"]
            #expect(
                try await cluster.client(1).delete("/v1/devices/\(device.id)", token: primary).status == 403,
                "a password never removes a device")
            let third = try await cluster.login(device, on: 1)
            #expect(try await cluster.client(1).delete("/v1/devices/\(device.id)", token: third).status == 204)
            for index in [0, 2] { #expect(try await cluster.client(index).get("/v1/devices", token: second).status == 401) }
        }
    }

    /// SIGKILL one instance while enrolments run on all three: every acknowledged enrolment is
    /// in the database, and the other two keep serving.
    @Test(.timeLimit(.minutes(3)))
    func killingOneInstanceUnderLoadLosesNothingAcknowledged() async throws {
        try await Cluster.with { cluster in
            let acknowledged = Acknowledged()
            let load = Task { await EnrolmentLoad.run(workers: (0..<6).map { cluster.client($0 % 3) }, into: acknowledged) }
            defer { load.cancel() }
            while acknowledged.count < 30 { try await Task.sleep(for: .milliseconds(20)) }
            cluster.kill(0)
            let killedAt = acknowledged.count
            while acknowledged.count < killedAt + 20 { try await Task.sleep(for: .milliseconds(20)) }  // the others keep serving
            load.cancel()
            await load.value
            try await EnrolmentLoad.expectAllStored(acknowledged, on: cluster.client(1))
        }
    }

    // MARK: The database goes away

    /// Runs last (the suite is serialised): stops PostgreSQL under light load, expects 503 with
    /// Retry-After (never 500, never a crash), starts it again and expects service to resume.
    @Test(.timeLimit(.minutes(3)))
    func aLostDatabaseAnswers503AndTheServerRecovers() async throws {
        // No test of another suite meets the server while it is down.
        try await PostgresTestServer.alone { try await loseTheDatabaseAndRecover() }
    }

    private func loseTheDatabaseAndRecover() async throws {
        try await Cluster.with(instances: 1) { cluster in
            let device = try await cluster.enrol(user: "alice", on: 0)
            let http = cluster.client(0)
            try PostgresTestServer.control("stop -m immediate -t 120")
            var statuses: [Int] = []
            var sawUnavailable = false
            let deadline = Date().addingTimeInterval(30)
            while !sawUnavailable, Date() < deadline {
                let reply = try await http.post("/v1/login/challenge", ["userId": "alice", "deviceId": device.id])
                statuses.append(reply.status)
                sawUnavailable = reply.status == 503 && reply.retryAfter != nil
            }
            // Once a probe has found the database unreachable, requests answer at once instead of
            // each waiting out the 5 s operation bound: ten of them take less than one bound.
            var unreachable = false
            let gate = Date().addingTimeInterval(10)
            while !unreachable, Date() < gate {
                let started = Date()
                let reply = try await http.post("/v1/login/challenge", ["userId": "alice", "deviceId": device.id])
                unreachable = reply.status == 503 && Date().timeIntervalSince(started) < 1
            }
            let started = Date()
            for _ in 0..<10 {
                #expect(try await http.post("/v1/login/challenge", ["userId": "alice", "deviceId": device.id]).status == 503)
            }
            #expect(Date().timeIntervalSince(started) < 5, "requests wait out the bound while the database is down")
            // The readiness probe says so at once, so a balancer takes the instance out; liveness does not.
            #expect(try await http.get("/health/ready").status == 503)
            #expect(try await http.get("/health/live").status == 200)
            try PostgresTestServer.control("start -t 120")
            #expect(sawUnavailable, "statuses while the database was down: \(statuses)")
            #expect(!statuses.contains { $0 == 500 }, "\(statuses)")
            var recovered = false
            let recovery = Date().addingTimeInterval(60)
            while !recovered, Date() < recovery {
                let reply = try await http.post("/v1/login/challenge", ["userId": "alice", "deviceId": device.id])
                recovered = reply.status == 200
                statuses.append(reply.status)
                if !recovered { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(recovered, "the server did not recover: \(statuses.suffix(5))")
            #expect(try await http.get("/health/ready").status == 200)
            #expect(!statuses.contains { $0 == 500 }, "\(statuses)")
            #expect(try await cluster.login(device, on: 0).count == 43)
        }
    }
}

/// `bioauth-server` processes on loopback over one fresh PostgreSQL database.
struct Cluster: Sendable {
    static let password = "correct horse battery"

    /// Sleeps into the next fixed window of the servers' limits (`RateLimitPolicy.window`, on
    /// their real clocks) unless the current one has `needed` left.
    static func waitForAWindowWithTimeLeft(_ needed: Duration, window: TimeInterval = RateLimitPolicy().window) async throws {
        let into = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: window)
        let left = window - into
        if left < Double(needed.components.seconds) { try await Task.sleep(for: .seconds(left + 1)) }
    }
    let ports: [Int]
    let processIDs: [Int32]

    /// Every request of these tests comes from 127.0.0.1, which the instances count together: a
    /// request limit far above what the tests send, unless a test sets its own.
    static func with(instances: Int = 3, requestsPerClient: Int = 1_000_000, _ body: (Cluster) async throws -> Void) async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        var servers: [ServerProcess] = []
        defer { for server in servers { server.stop() } }
        // Every instance seals and opens the signing keys with the same key-encryption key.
        let kek = ["BIOAUTH_SIGNING_KEY_KEK": KeyEncryptionKey.random().base64]
        let extra = ["--database-pool-size", "8", "--requests-per-client", "\(requestsPerClient)"]
        for _ in 0..<instances { servers.append(try ServerProcess(database: url, extra: extra, environment: kek)) }
        try await body(Cluster(ports: servers.map(\.port), processIDs: servers.map(\.processIdentifier)))
    }

    func client(_ index: Int) -> ServerClient { ServerClient(baseURL: "http://127.0.0.1:\(ports[index])") }

    /// SIGKILL: no chance to clean up.
    func kill(_ index: Int) { _ = Foundation.kill(processIDs[index], SIGKILL) }

    /// Signs up `user` and enrols a software key through instance `index`.
    func enrol(user: String, on index: Int) async throws -> ClusterDevice {
        let http = client(index)
        _ = try await http.post("/v1/users", ["username": user, "password": Self.password])
        let token = try await http.post("/v1/login/password", ["username": user, "password": Self.password])["token"]
        var device = ClusterDevice(id: "")
        let challenge = try await http.post(
            "/v1/devices/registration/challenge", ["name": "Phone", "publicKey": device.publicKey], token: token)
        let finish = try await http.post("/v1/devices/registration/finish", try device.answer(challenge), token: token)
        try #require(finish.status == 201)
        device.id = finish["id"]
        return device
    }

    /// A device login through instance `index`; returns the session token.
    func login(_ device: ClusterDevice, on index: Int) async throws -> String {
        let challenge = try await client(index).post("/v1/login/challenge", ["userId": "alice", "deviceId": device.id])
        let finish = try await client(index).post("/v1/login/finish", try device.answer(challenge))
        try #require(finish.status == 200)
        return finish["token"]
    }
}

/// A software key enrolled through a spawned server (the harness's ``SoftwareDevice`` plus its id).
struct ClusterDevice: Sendable {
    let software = SoftwareDevice()
    var id: String

    var publicKey: String { software.spki }

    /// The finish body for a challenge reply: its id and this key's signature over the message.
    func answer(_ challenge: ServerClient.Reply) throws -> [String: String] {
        let envelope = try JSONDecoder().decode(ChallengeEnvelope.self, from: Data(challenge.text.utf8))
        let signature = try software.key.signature(for: try envelope.message().encoded).derRepresentation
        return ["challengeId": envelope.challengeId, "signature": Base64URL.encode(signature)]
    }
}
