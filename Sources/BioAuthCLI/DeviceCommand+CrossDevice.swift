import ArgumentParser
import BioAuth
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the phone does for other screens and other languages: approving a browser's sign-in,
/// and proving its DPoP-bound token to a resource server.
extension DeviceCommand {
    struct SignIns: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-ins",
            abstract: "List the sign-ins other screens started for this user (\"approve on my phone\"; uses the session from `login`).")
        @OptionGroup var options: StateOptions

        func run() async throws {
            try await withDevice(options) { device, client in
                let app = try client.client(for: device)
                let waiting = try await advised { () async throws(ClientError) in try await app.signInRequests() }
                if waiting.isEmpty { Console.line("no sign-in waits for this phone") }
                for request in waiting { Console.line("\(request.id)\t\(request.text)") }
            }
        }
    }

    struct ApproveSignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "approve-sign-in",
            abstract: "Let another screen in with the number it shows: one prompt over the request's text and the number.")
        @OptionGroup var options: StateOptions
        @OptionGroup var prompt: PromptOptions
        @Option(help: "The request's id, as `sign-ins` lists it.") var id: String
        @Option(help: "The number the other screen shows.") var number: String

        func run() async throws {
            try await withDevice(options) { device, client in
                let app = try client.client(for: device)
                prompt.apply(device)
                let waiting = try await advised { () async throws(ClientError) in try await app.signInRequests() }
                guard let request = waiting.first(where: { $0.id == id }) else {
                    throw ValidationError("no sign-in \(id) waits for this phone (`sign-ins` lists them)")
                }
                try await advised { () async throws(ClientError) in try await app.approveSignIn(request, number: number) }
                Console.line("approved: the other screen's next poll collects its session")
            }
        }
    }

    struct DenySignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "deny-sign-in", abstract: "Refuse a sign-in this user did not start; no prompt.")
        @OptionGroup var options: StateOptions
        @Option(help: "The request's id, as `sign-ins` lists it.") var id: String

        func run() async throws {
            try await withDevice(options) { device, client in
                let app = try client.client(for: device)
                let waiting = try await advised { () async throws(ClientError) in try await app.signInRequests() }
                guard let request = waiting.first(where: { $0.id == id }) else {
                    throw ValidationError("no sign-in \(id) waits for this phone (`sign-ins` lists them)")
                }
                try await advised { () async throws(ClientError) in try await app.denySignIn(request) }
                Console.line("denied: the other screen's next poll finds it ended")
            }
        }
    }

    struct DPoPProof: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dpop-proof",
            abstract:
                "Print a DPoP proof (RFC 9449) by this phone's proof key for a request to your own API, with the access token (as `login --print-access-token`) whose hash it carries as ath; no prompt."
        )
        @OptionGroup var options: StateOptions
        @Option(help: "The request's method.") var method: String = "GET"
        @Option(help: "The request's URL (its query and fragment are not part of htu).") var url: String
        @Flag(help: "Print the access token on the line before the proof (send both: Authorization: DPoP <token>, DPoP: <proof>).")
        var printAccessToken = false

        func run() async throws {
            try await withDevice(options) { device, client in
                let app = try client.client(for: device)
                let token = try await advised { () async throws(ClientError) in try await app.accessToken() }
                let proof = try await advised { () async throws(ClientError) in
                    try await app.dpopProof(method: method, url: url, accessToken: token)
                }
                if printAccessToken { Console.line(token.token.value) }
                Console.line(proof)
            }
        }
    }
}
