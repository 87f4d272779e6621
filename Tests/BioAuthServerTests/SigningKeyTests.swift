import BioAuthCore
import BioAuthServer
import BioAuthServerTesting
import Crypto
import BioAuthSQLite
import Foundation
import HTTPTypes
import Synchronization
import InMemoryLogging
import Testing

/// The private keys that sign access tokens are sealed with a key-encryption key before they
/// reach the database: a copy of the database alone (a backup, a dump) mints nothing.
struct SigningKeyTests {
    /// Sealing binds the key id and the key-encryption key: another id, another KEK, a plaintext
    /// key under a KEK, or a sealed key without one are refused, each with its reason; neither
    /// a KEK's description nor its dump shows the key.
    @Test func aSealedKeyOpensOnlyWithItsKeyEncryptionKeyAndItsID() async throws {
        let kek = KeyEncryptionKey.random(), other = KeyEncryptionKey.random()
        let scalar = SecretBytes(P256.Signing.PrivateKey().rawRepresentation)
        let sealed = try await kek.seal(scalar, keyID: "k1")
        #expect(sealed.count == 72 && StoredSigningKey(sealed).form == .sealed(keyEncryptionKey: kek.fingerprint))
        #expect(sealed.range(of: scalar.data) == nil, "the scalar is not in the stored form")
        #expect(try await kek.open(sealed, keyID: "k1") == scalar)
        func reason(_ body: () async throws -> SecretBytes) async -> SigningKeyUnavailable.Reason? {
            do { _ = try await body() } catch let error as SigningKeyUnavailable { return error.reason } catch { return nil }
            return nil
        }
        #expect(await reason { try await kek.open(sealed, keyID: "k2") } == .notSealedByThisKey, "moved to another id")
        #expect(await reason { try await other.open(sealed, keyID: "k1") } == .anotherKeyEncryptionKey(kek.fingerprint))
        #expect(await reason { try await kek.open(scalar.data, keyID: "k1") } == .plaintext, "a key written in the clear is never used")
        #expect(await reason { try await PlaintextSigningKeys().open(sealed, keyID: "k1") } == .sealedButNoKeyEncryptionKey)
        var tampered = sealed
        tampered[40] ^= 1
        #expect(await reason { try await kek.open(tampered, keyID: "k1") } == .notSealedByThisKey)

        #expect(KeyEncryptionKey(base64: kek.base64)?.fingerprint == kek.fingerprint)
        #expect(KeyEncryptionKey(base64: "c2hvcnQ=") == nil && KeyEncryptionKey(base64: "not base64!") == nil)
        var dumped = ""
        dump(kek, to: &dumped)
        for text in ["\(kek)", String(reflecting: kek), dumped] { #expect(!text.contains(kek.base64), "\(text)") }
    }

    /// A server with a KEK stores only sealed keys, signs and verifies with them; the rows alone
    /// sign nothing the JWKS publishes. A server over the same rows with another KEK (or none)
    /// neither uses nor publishes them, and makes its own key.
    /// A key's id is what an operator types after `keys retire`: never one a command line reads as
    /// an option. (Of 1,000 base64url ids, about 16 would begin with `-`.)
    @Test func signingKeyIDsNeverBeginWithADash() async throws {
        var ids: Set<String> = []
        for _ in 0..<1_000 {
            let id = try await SigningKeyRecord.generate(at: Date(), protection: .plaintextInDatabase).id
            #expect(id.count == 22 && Base64URL.decode(id)?.count == 16 && !id.hasPrefix("-"), "\(id)")
            ids.insert(id)
        }
        #expect(ids.count == 1_000)
    }

    /// Issue 44: while the database cannot be read, the JWKS is served from the keys in memory —
    /// past the minute after which they would be reloaded — so a resource server that starts
    /// during an outage still verifies tokens. The stores answer again after it.
    @Test func theJWKSIsServedFromMemoryWhileTheDatabaseCannotBeRead() async throws {
        let harness = ServerHarness()
        try await harness.test { api in
            let before = try await api.call(.get, "/.well-known/jwks.json")
            #expect(before.status == 200 && before.text.contains("\"kid\""))
            harness.clock.advance(by: 61)  // past the reload
            try await harness.service.store.close()  // the database is gone
            let during = try await api.call(.get, "/.well-known/jwks.json")
            #expect(during.status == 200 && during.text == before.text, "\(during.status) \(during.text)")
            #expect(harness.logs.entries.contains { "\($0)".contains("publishing the keys in memory") })
        }
    }

    @Test func theDatabaseHoldsOnlySealedKeysAndAnotherKEKCannotUseThem() async throws {
        let path = temporaryDatabasePath()
        let kek = KeyEncryptionKey.random()
        let owner = ServerHarness(store: try await SQLiteStore.open(path: path)) { $0.tokens.signingKeys = .keyEncryptionKey(kek) }
        let sealedKID = Mutex("")
        try await owner.test { api in
            let (login, _, _) = try await AccessTokenTests.login(api)
            sealedKID.withLock { $0 = (CompactJWS(login["accessToken"])?.header["kid"] as? String) ?? "" }
            #expect(try await AccessTokenTests().introspect(api, login["accessToken"])["active"] as? Bool == true)
            let published = try await api.call(.get, "/.well-known/jwks.json").text
            for record in try await owner.service.store.signingKeys() {
                #expect(StoredSigningKey(record.storedKey).form == .sealed(keyEncryptionKey: kek.fingerprint))
                // What a thief of the rows could try: the stored bytes as a private key.
                if let guessed = try? P256.Signing.PrivateKey(rawRepresentation: record.storedKey.prefix(32)) {
                    #expect(!published.contains(Base64URL.encode(guessed.publicKey.x963Representation.dropFirst().prefix(32))))
                }
            }
        }
        let sealed = sealedKID.withLock { $0 }
        #expect(!sealed.isEmpty)
        let stranger = ServerHarness(store: try await SQLiteStore.open(path: path)) { $0.tokens.signingKeys = .keyEncryptionKey(.random()) }
        try await stranger.test { api in
            let jwks = try await api.call(.get, "/.well-known/jwks.json").text
            #expect(!jwks.contains(sealed), "a key sealed under another KEK is not published")
            let phone = SoftwareDevice()
            let login = try await api.login("bob", try await api.enrol(phone, token: try await api.primarySession("bob")), phone)
            #expect(try #require(CompactJWS(login["accessToken"])?.header["kid"] as? String) != sealed)
        }
    }

    /// An operator rotates and retires keys: a retired key's tokens stop being active and it is
    /// no longer published; the sweep deletes keys past their publication window and never the
    /// signing key; each change is audited with the key id only.
    @Test func operatorsRotateAndRetireKeysAndTheSweepDeletesExpiredOnes() async throws {
        let harness = ServerHarness { $0.tokens.signingKeys = .keyEncryptionKey(.random()) }
        try await harness.test { api in
            let (login, _, _) = try await AccessTokenTests.login(api)
            let first = try #require(CompactJWS(login["accessToken"])?.header["kid"] as? String)
            let request = RequestInfo(clientAddress: "operator")
            harness.clock.advance(by: 1)  // keys of one instant are listed in id order
            let rotated = try await harness.service.rotateSigningKey(request: request)
            var listed = try await harness.service.signingKeys(request: request)
            #expect(listed.map(\.id) == [first, rotated.id] && listed.map(\.state) == [.signing, .published], "\(listed) \(first)")
            harness.clock.advance(by: 121)
            listed = try await harness.service.signingKeys(request: request)
            #expect(listed.map(\.state) == [.published, .signing], "the new key signs after its pre-publication")

            try await harness.service.retireSigningKey(id: first, request: request)
            harness.clock.advance(by: 61)  // every instance reloads within a minute
            #expect(
                try await AccessTokenTests().introspect(api, login["accessToken"])["active"] as? Bool == false,
                "a retired key's tokens stop verifying")
            #expect(!(try await api.call(.get, "/.well-known/jwks.json").text.contains(first)))
            await #expect(throws: ServerError.self) { try await harness.service.retireSigningKey(id: first, request: request) }

            harness.clock.advance(by: 31 * 86_400)  // past the rotation: a new key, the old one expires
            _ = try await api.login(
                "alice", try #require(CompactJWS(login["accessToken"])?.claims["device_id"] as? String), SoftwareDevice())
            _ = try await harness.service.publishedKeys(request: request)
            harness.clock.advance(by: 31 * 86_400)
            _ = try await harness.service.publishedKeys(request: request)
            let before = try await harness.service.signingKeys(request: request)
            let swept = try await harness.service.sweep()
            let after = try await harness.service.signingKeys(request: request)
            #expect(swept.signingKeys == before.filter { $0.state == .expired }.count && swept.signingKeys > 0, "\(before)")
            #expect(after.allSatisfy { $0.state != .expired } && after.contains { $0.state == .signing })
            let audit = try await harness.service.store.auditEvents(userID: nil, limit: 500)
            #expect(audit.contains { $0.kind == .signingKeyRetired && $0.reason?.description == first })
            #expect(audit.contains { $0.kind == .signingKeyAdded && $0.reason?.description == rotated.id })
        }
    }

    /// `bioauth-server keys …` on the real executable: a SQLite file gets its KEK (0600) outside
    /// the database's directory and the rows are sealed by it; a KEK an older version left beside
    /// the database is still used; list, rotate, retire and generate-kek work; PostgreSQL
    /// without a KEK is refused before anything is written.
    @Test(.timeLimit(.minutes(2)))
    func theKeysCommandManagesSealedKeys() async throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-keys-\(UUID().uuidString).sqlite").path
        let kekFile = ServerProcess.kekFile(forDatabase: database)
        defer { try? FileManager.default.removeItem(atPath: kekFile) }
        let rotated = try ServerProcess.command(["keys", "rotate", "--database", database])
        #expect(rotated.status == 0 && rotated.output.hasPrefix("added "), "\(rotated.output)")
        #expect(try FileManager.default.attributesOfItem(atPath: kekFile)[.posixPermissions] as? Int == 0o600)
        #expect(!FileManager.default.fileExists(atPath: database + ".signing-kek"), "nothing beside the database")
        #expect(
            URL(fileURLWithPath: kekFile).deletingLastPathComponent().path
                != URL(fileURLWithPath: database).deletingLastPathComponent().path)
        let kek = try #require(KeyEncryptionKey(base64: try String(contentsOfFile: kekFile, encoding: .utf8)))
        let list = try ServerProcess.command(["keys", "list", "--database", database])
        #expect(
            list.status == 0 && list.output.contains("sealed by kek:\(kek.fingerprint)") && !list.output.contains(kek.base64),
            "\(list.output)")
        let id = try #require(list.output.split(separator: "\t").first.map(String.init))
        #expect(try ServerProcess.command(["keys", "retire", id, "--database", database]).status == 0)
        #expect(try ServerProcess.command(["keys", "retire", id, "--database", database]).status != 0, "retired once")
        #expect(try ServerProcess.command(["keys", "list", "--database", database]).output.contains("no signing keys"))
        let generated = try ServerProcess.command(["keys", "generate-kek"])
        #expect(generated.status == 0 && KeyEncryptionKey(base64: generated.output) != nil)
        let postgres = try ServerProcess.command(["keys", "list", "--database", "postgres://bioauth@127.0.0.1:1/none"])
        #expect(postgres.status != 0, "PostgreSQL needs a key-encryption key")

        // A database whose KEK an older version made beside it keeps using that one.
        let older = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-keys-\(UUID().uuidString).sqlite").path
        let beside = older + ".signing-kek"
        try Data((KeyEncryptionKey.random().base64 + "\n").utf8).write(to: URL(fileURLWithPath: beside))
        defer { try? FileManager.default.removeItem(atPath: beside) }
        #expect(try ServerProcess.command(["keys", "rotate", "--database", older]).status == 0)
        let besideKEK = try #require(KeyEncryptionKey(base64: try String(contentsOfFile: beside, encoding: .utf8)))
        #expect(try ServerProcess.command(["keys", "list", "--database", older]).output.contains("sealed by kek:\(besideKEK.fingerprint)"))
        #expect(!FileManager.default.fileExists(atPath: ServerProcess.kekFile(forDatabase: older)), "no second key made")
        // Without HOME or XDG_STATE_HOME there is no place outside: the start is refused, naming the flag.
        let nowhere = try ServerProcess.command(
            ["keys", "list", "--database", database + "-2"], environment: ["HOME": "", "XDG_STATE_HOME": ""])
        #expect(nowhere.status != 0)
    }

    /// A restored copy of a SQLite database in another directory has another default key file:
    /// the server refuses to start rather than mint a key that would stop every issued token from
    /// verifying, names the flag that fixes it, and `keys where` names the original's file.
    @Test(.timeLimit(.minutes(2)))
    func aRestoredCopyWithoutItsKeyRefusesToStartAndSaysWhy() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bioauth-restore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let original = folder.appendingPathComponent("bioauth.sqlite").path
        let copy = folder.appendingPathComponent("restored/bioauth.sqlite").path
        defer {
            for database in [original, copy] { try? FileManager.default.removeItem(atPath: ServerProcess.kekFile(forDatabase: database)) }
        }
        #expect(try ServerProcess.command(["keys", "rotate", "--database", original]).status == 0)
        let located = try ServerProcess.command(["keys", "where", "--database", original])
        #expect(located.status == 0 && located.output.contains(ServerProcess.kekFile(forDatabase: original)), "\(located.output)")

        let restored = folder.appendingPathComponent("restored").path
        try FileManager.default.createDirectory(atPath: restored, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: original, toPath: copy)
        let refused = try ServerProcess.command(["--database", copy, "--port", "0", "--management-port", "0"], includingErrors: true)
        #expect(refused.status != 0)
        #expect(refused.output.contains("--signing-key-kek-file") && refused.output.contains("--new-signing-key"), "\(refused.output)")
        #expect(try ServerProcess.command(["keys", "where", "--database", copy]).output.contains("none opens with this key"))

        let named = try ServerProcess(database: copy, extra: ["--signing-key-kek-file", ServerProcess.kekFile(forDatabase: original)])
        #expect(named.stop() == 0, "with the original's key file it starts")
        let anyway = try ServerProcess(database: copy, extra: ["--new-signing-key"])
        #expect(anyway.stop() == 0, "and --new-signing-key starts it with a new key")
    }
}
