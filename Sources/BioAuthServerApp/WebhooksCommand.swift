import ArgumentParser
import BioAuthServer
import Foundation

/// `bioauth-server webhooks dead-letters|replay`: the events the receiver refused until they were
/// set aside (`DeliveryPolicy.maxAttempts`), and putting them back once the receiver is fixed.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "List the webhook events set aside as dead letters, and replay them.",
        subcommands: [DeadLetters.self, Replay.self])

    struct DeadLetters: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dead-letters", abstract: "Every dead letter: id, type, when it happened, attempts, user.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let events = try await withOperatorService(database) { service in try await service.deadLetters() }
            if events.isEmpty { print("no dead letters") }
            for event in events {
                print(
                    "\(event.id)\t\(event.event.kind)\t\(event.event.at.formatted(.iso8601))\t\(event.attempts) attempts\t\(event.event.userID?.rawValue ?? "-")"
                )
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead letters back in the outbox, due now (the running servers deliver them).")
        @OptionGroup var database: DatabaseOptions
        @Flag(help: "Every dead letter.") var all = false
        @Argument(help: "Event ids, as `dead-letters` lists them.") var ids: [Int64] = []

        func validate() throws {
            guard all != !ids.isEmpty else { throw ValidationError("name event ids, or --all") }
        }

        func run() async throws {
            let replayed = try await withOperatorService(database) { service in
                let ids = all ? try await service.deadLetters().map(\.id) : self.ids
                return try await service.replayDeadLetters(ids: ids)
            }
            print("replayed \(replayed) event\(replayed == 1 ? "" : "s")")
        }
    }
}
