import ArgumentParser
import BioAuthCore
import BioAuthServer
import Foundation
import Logging

/// Where the key-encryption key that seals the access-token signing keys comes from, for every
/// subcommand that reads or writes them.
struct SigningKeyOptions: ParsableArguments {
    @Option(
        name: .customLong("signing-key-kek-file"),
        help:
            "A file holding the key-encryption key (32 bytes, base64; `bioauth-server keys generate-kek`) that seals the access-token signing keys in the database (env BIOAUTH_SIGNING_KEY_KEK_FILE, or the key itself in BIOAUTH_SIGNING_KEY_KEK). Default: for a SQLite file, one created 0600 outside the database's directory, in $XDG_STATE_HOME/bioauth-server (else ~/.local/state/bioauth-server); PostgreSQL needs one."
    )
    var kekFileOption: String?
    var kekFile: String? { kekFileOption ?? env("BIOAUTH_SIGNING_KEY_KEK_FILE") }
    @Flag(
        name: .customLong("insecure-plaintext-signing-keys"),
        help: "Store the signing keys unsealed: a copy of the database (a backup) then mints access tokens every service accepts.")
    var plaintext = false

    func validate() throws {
        if plaintext && (kekFile != nil || env("BIOAUTH_SIGNING_KEY_KEK") != nil) {
            throw ValidationError("--insecure-plaintext-signing-keys excludes a key-encryption key")
        }
    }

    /// Where `database`'s key-encryption key comes from, in the order the settings are read:
    /// decided once, for the protection and for the operator's words about it.
    enum KEKSource {
        case plaintext
        /// `BIOAUTH_SIGNING_KEY_KEK`: the key itself, base64.
        case environment(String)
        /// `--signing-key-kek-file` or `BIOAUTH_SIGNING_KEY_KEK_FILE`.
        case named(file: String)
        /// A random key of this process, for an in-memory database.
        case processRandom
        /// PostgreSQL with no key named: refused.
        case unnamedForPostgres
        /// The file an older version made beside a SQLite database.
        case besideDatabase(file: String)
        /// The SQLite database's own file outside its directory, made on first start.
        case databaseOwn(file: String)
        /// A SQLite database with neither XDG_STATE_HOME nor HOME to keep its file under: refused.
        case nowhere
    }

    func kekSource(for database: DatabaseOptions) -> KEKSource {
        if plaintext { return .plaintext }
        if let text = env("BIOAUTH_SIGNING_KEY_KEK") { return .environment(text) }
        if let kekFile { return .named(file: kekFile) }
        if database.database == ":memory:" { return .processRandom }
        if database.postgres != nil { return .unnamedForPostgres }
        if let legacy = kekBesideDatabase(database) { return .besideDatabase(file: legacy) }
        guard let file = DefaultKEKLocation.file(forSQLiteDatabase: database.database, environment: ProcessInfo.processInfo.environment)
        else { return .nowhere }
        return .databaseOwn(file: file)
    }

    /// The protection for `database`: the configured KEK, the SQLite file's own, a process-local
    /// one for `:memory:`, or plaintext when asked for by name.
    func protection(for database: DatabaseOptions) throws -> SigningKeyProtection {
        switch kekSource(for: database) {
        case .plaintext: return .plaintextInDatabase
        case .environment(let text):
            guard let key = KeyEncryptionKey(base64: text) else {
                throw ValidationError("BIOAUTH_SIGNING_KEY_KEK must be 32 bytes, base64")
            }
            return .keyEncryptionKey(key)
        case .named(let file), .besideDatabase(let file): return .keyEncryptionKey(try Self.read(file))
        case .processRandom: return .keyEncryptionKey(.random())
        case .unnamedForPostgres:
            throw ValidationError(
                "PostgreSQL needs a key-encryption key for the signing keys: --signing-key-kek-file or BIOAUTH_SIGNING_KEY_KEK (every instance the same; `bioauth-server keys generate-kek` makes one), or --insecure-plaintext-signing-keys"
            )
        case .nowhere:
            throw ValidationError(
                "no place for the key-encryption key outside the database's directory (neither XDG_STATE_HOME nor HOME is set): name one with --signing-key-kek-file"
            )
        case .databaseOwn(let file):
            if !FileManager.default.fileExists(atPath: file) {
                try PrivateFile.makeDirectory(URL(fileURLWithPath: file).deletingLastPathComponent())
                try PrivateFile.write(Data((KeyEncryptionKey.random().base64 + "\n").utf8), to: file)
            }
            return .keyEncryptionKey(try Self.read(file))
        }
    }

    /// The key-encryption key file an older version made beside `database`, when it is the one in
    /// use (no key named): a copy of that directory holds both the sealed keys and their key.
    func kekBesideDatabase(_ database: DatabaseOptions) -> String? {
        guard !plaintext, kekFile == nil, env("BIOAUTH_SIGNING_KEY_KEK") == nil, database.postgres == nil, database.database != ":memory:"
        else { return nil }
        let beside = DefaultKEKLocation.besideDatabase(database.database)
        return FileManager.default.fileExists(atPath: beside) ? beside : nil
    }

    /// Where `database`'s key-encryption key comes from, in words an operator acts on: the file
    /// (made on first start for a SQLite file), the environment, or none. Never the key.
    func source(for database: DatabaseOptions) -> String {
        switch kekSource(for: database) {
        case .plaintext: "none: the signing keys are stored unsealed (--insecure-plaintext-signing-keys)"
        case .environment: "the environment (BIOAUTH_SIGNING_KEY_KEK)"
        case .named(let file): "the file \(file) (--signing-key-kek-file)"
        case .processRandom: "a random key of this process (an in-memory database)"
        case .unnamedForPostgres: "none named: PostgreSQL needs --signing-key-kek-file or BIOAUTH_SIGNING_KEY_KEK"
        case .besideDatabase(let file): "the file \(file) (beside the database, as earlier versions kept it)"
        case .databaseOwn(let file): "the file \(file) (this database's own, outside its directory)"
        case .nowhere: "none: neither XDG_STATE_HOME nor HOME is set"
        }
    }

    static func read(_ path: String) throws -> KeyEncryptionKey {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("cannot read the key-encryption key file \(path)")
        }
        guard let key = KeyEncryptionKey(base64: text) else { throw ValidationError("\(path) must hold 32 bytes, base64") }
        return key
    }
}

/// `bioauth-server keys list|rotate|retire|generate-kek`: the keys that sign access tokens. Works
/// on the database directly (the server may be running: each instance sees a change within a
/// minute); every change is audited.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "List, rotate and retire the access tokens' signing keys; make a key-encryption key.",
        subcommands: [List.self, Where.self, Rotate.self, Retire.self, GenerateKEK.self])

    struct Where: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Which key-encryption key this database's signing keys need and where this server would read it: the file to back up beside the database (never in the same place), by fingerprint. Never a key."
        )
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var signing: SigningKeyOptions

        func run() async throws {
            print("key-encryption key: \(signing.source(for: database))")
            let protection = try signing.protection(for: database)
            print("its fingerprint: \(protection)")
            let keys = try await withOperatorService(database, signing) { service in try await service.signingKeys(request: keysRequest) }
            let sealers = Set(keys.map { describe($0.form) })
            print("the signing keys: " + (keys.isEmpty ? "none yet" : sealers.sorted().joined(separator: ", ")))
            if !keys.isEmpty, keys.allSatisfy({ $0.state == .unusable }) {
                print("none opens with this key: name the key that sealed them with --signing-key-kek-file")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every signing key: id, created, state (signing, published, expired, unusable), how it is stored. Never a key.")
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var signing: SigningKeyOptions

        func run() async throws {
            let keys = try await withOperatorService(database, signing) { service in try await service.signingKeys(request: keysRequest) }
            if keys.isEmpty { print("no signing keys (the first token creates one)") }
            for key in keys {
                print("\(key.id)\tcreated \(key.createdAt.formatted(.iso8601))\t\(key.state.rawValue)\t\(describe(key.form))")
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new signing key now: published at once, signing once it is two minutes old.")
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var signing: SigningKeyOptions

        func run() async throws {
            let key = try await withOperatorService(database, signing) { service in try await service.rotateSigningKey(request: keysRequest)
            }
            print("added \(key.id) (\(describe(key.form))); it signs from \(key.createdAt.addingTimeInterval(120).formatted(.iso8601))")
        }
    }

    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Delete a signing key (a leaked one): no instance signs with or publishes it after its next reload, and its tokens stop verifying."
        )
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var signing: SigningKeyOptions
        @Argument(help: "The key's id (its kid), as `list` shows it.") var id: String

        func run() async throws {
            do {
                try await withOperatorService(database, signing) { service in
                    try await service.retireSigningKey(id: id, request: keysRequest)
                }
            } catch let error as ServerError where error.code == .notFound {
                throw ValidationError("no signing key \(id)")
            }
            print("retired \(id)")
        }
    }

    struct GenerateKEK: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate-kek",
            abstract: "Print a new key-encryption key (32 random bytes, base64) for your secret store. Printed once, stored nowhere.")

        func run() async throws { print(KeyEncryptionKey.random().base64) }
    }
}

private func describe(_ form: StoredSigningKey.Form) -> String {
    switch form {
    case .plaintext: "plaintext"
    case .sealed(let fingerprint): "sealed by kek:\(fingerprint)"
    case .other: "another format"
    }
}

private let keysRequest = RequestInfo(clientAddress: "bioauth-server keys")
