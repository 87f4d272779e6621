import ArgumentParser
import BioAuthServer
import Foundation
import Logging

/// `bioauth-server api-key create|list|revoke`: the keys the app's backend calls the backend API
/// with. Works on the database directly (the server may be running); every change is audited.
struct ApiKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-key", abstract: "Create, list and revoke the backend API's keys.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a key. Prints its id, then the key itself on the last line: it is shown once and stored only as a hash.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "What the key is for, as it will be listed (e.g. the backend's name).") var name: String
        @Option(help: "A scope: \(ApiKeyScope.all.map(\.description).joined(separator: ", ")). Repeatable; at least one.")
        var scope: [String] = []

        func validate() throws {
            guard !scope.isEmpty else {
                throw ValidationError("give at least one --scope (\(ApiKeyScope.all.map(\.description).joined(separator: ", ")))")
            }
            for name in scope where ApiKeyScope(name: name) == nil { throw ValidationError("--scope: unknown scope \(name)") }
        }

        func run() async throws {
            let created = try await withOperatorService(database) { service in
                try await service.createApiKey(name: name, scopes: Set(scope.compactMap(ApiKeyScope.init(name:))), request: operatorRequest)
            }
            print(
                "created \(created.record.id) (\(created.record.name); scopes: \(created.record.scopes.sorted().map(\.description).joined(separator: ", ")))"
            )
            print(created.secret.value)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every key: id, name, scopes, created, and whether it is revoked. Never the key.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let keys = try await withOperatorService(database) { service in try await service.apiKeys(request: operatorRequest) }
            if keys.isEmpty { print("no API keys") }
            for key in keys {
                let state = key.revokedAt.map { "revoked \($0.formatted(.iso8601))" } ?? "active"
                print(
                    "\(key.id)\t\(key.name)\t\(key.scopes.sorted().map(\.description).joined(separator: ","))\tcreated \(key.createdAt.formatted(.iso8601))\t\(state)"
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key: every instance refuses it from its next request.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The key's id (key_…), as `list` shows it.") var id: String

        func run() async throws {
            do {
                try await withOperatorService(database) { service in
                    try await service.revokeApiKey(id: ApiKeyID(id), request: operatorRequest)
                }
            } catch let error as ServerError where error.code == .notFound {
                throw ValidationError("no active API key \(id)")
            }
            print("revoked \(id)")
        }
    }
}

/// What the audit log records as the client of an operator's command.
private let operatorRequest = RequestInfo(clientAddress: "bioauth-server api-key")
