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

/// The phone and a server: registration, login and step-up.
extension DeviceCommand {
    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Sign in with a password (stdin or --password-file), or take the backend's enrolment grant (--grant), and enrol this device's key."
        )
        @OptionGroup var options: StateOptions
        @Option(help: "The server's base URL.") var server: String = "http://127.0.0.1:8080"
        @Option(help: "The server's relying-party id (its --relying-party).") var relyingParty: String = "localhost"
        @Option(help: "The user name.") var user: String
        @Option(help: "Read the password (or with --grant, the grant token) from this file instead of stdin.") var passwordFile: String?
        @Flag(
            help:
                "Standard input (or --password-file) carries an enrolment grant token from the app's backend (POST /v1/backend/enrolment-grants) instead of a password: enrol --user with it, as an app whose backend owns the login does."
        )
        var grant = false
        @Option(help: "The device's name on the server.") var name: String = "Emulated iPhone"
        @Flag(help: "Replace the key of the device registered before (after an enrollment change).") var reenrol = false
        @Flag(help: "Create the user first (demo sign-up).") var signUp = false
        @Option(
            help:
                "When the server asks for an approval: read the recovery code from this directory (the demo server's --recovery-code-directory), as a user reads their e-mail."
        )
        var recoveryInbox: String?

        func validate() throws {
            if grant && signUp {
                throw ValidationError("--grant and --sign-up exclude each other: the backend's user needs no password account")
            }
        }

        func run() async throws {
            let secret = try readSecret(grant ? "enrolment grant" : "password", file: passwordFile)
            try await withDevice(options) { device, client in
                if !reenrol { client = .init(server: server, relyingParty: relyingParty) }
                let app = try client.client(for: device)
                let registration = try await advised { () async throws(ClientError) in
                    if signUp {
                        do throws(ClientError) { try await app.signUp(username: user, password: secret) } catch
                            where error.code == .conflict
                        {}
                    }
                    // A grant is used where a primary session is; the server knows its expiry.
                    let primary =
                        grant
                        ? PrimarySession(userID: user, token: BearerToken(secret), expiresAt: .distantFuture)
                        : try await app.signIn(username: user, password: secret)
                    do throws(ClientError) {
                        return reenrol ? try await app.reenrol(primary, deviceName: name) : try await app.enrol(primary, deviceName: name)
                    } catch  where error.code == .approvalRequired {
                        guard let recoveryInbox else { throw error }
                        // The password is not enough: a recovery code from the user's "e-mail".
                        let request = try await app.requestEnrolment(primary, deviceName: name)
                        Console.line("the server needs an approval for \"\(request.approvalText)\"; asking for a recovery code")
                        try await app.sendRecoveryCode(for: request, primary)
                        guard
                            let code = DirectoryRecoveryChannel.readCode(
                                for: EnrolmentRequestID(request.id), in: URL(fileURLWithPath: recoveryInbox))
                        else {
                            throw ClientError(.notFound, field: "recoveryInbox")
                        }
                        try await app.recover(request, code: code, primary)
                        return try await app.completeEnrolment(request, primary)
                    }
                }
                Console.line(
                    "\(reenrol ? "re-enrolled" : "enrolled") device \(registration.deviceID) for \(user) at \(client.server ?? server) (key \(try app.signer.publicKey().fingerprint))"
                )
            }
        }
    }

    struct PromptOptions: ParsableArguments {
        @Option(help: "Who is at the prompt: owner, stranger or cancel.") var person: PersonOption = .owner
        @Flag(help: "Hook evaluatePolicy to report success, like a jailbreak tweak.") var jailbreakHook = false

        func apply(_ device: EmulatedDevice) {
            device.unscriptedAction = person.action
            device.jailbreakHookEnabled = jailbreakHook
        }
    }

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Biometric login: challenge, one prompt, signature, session.")
        @OptionGroup var options: StateOptions
        @OptionGroup var prompt: PromptOptions
        @Flag(help: "Print the session token.") var printToken = false
        @Flag(help: "Print the access token (a JWT for your other services; verify it with /.well-known/jwks.json).") var printAccessToken =
            false

        func run() async throws {
            try await withDevice(options) { device, client in
                let app = try client.client(for: device)
                prompt.apply(device)
                let session = try await advised { () async throws(ClientError) in try await app.logIn() }
                Console.line("signed in as \(session.userID) with device \(session.deviceID) (\(device.promptCount) prompt)")
                if printToken { Console.line(session.token.value) }
                if printAccessToken {
                    Console.line(try await advised { () async throws(ClientError) in try await app.accessToken() }.token.value)
                }
            }
        }
    }

    struct StepUp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "step-up", abstract: "Approve one operation with a signature (uses the session from `login`).")
        @OptionGroup var options: StateOptions
        @OptionGroup var prompt: PromptOptions
        @Option(help: "The operation to approve, as shown to the user.") var operation: String
        @Option(
            name: .customLong("api-key"),
            help: "Also play the app's backend: redeem the approval with this backend API key (env BIOAUTH_API_KEY).")
        var apiKeyOption: String?
        var apiKey: String? { apiKeyOption ?? ProcessInfo.processInfo.environment["BIOAUTH_API_KEY"] }
        @Flag(
            help:
                "Print the one-time approval for your backend to redeem (POST /v1/backend/approvals/redeem with the operation's UTF-8 as base64url and the user id)."
        )
        var printApproval = false

        func run() async throws {
            try await withDevice(options) { device, client in
                let app = try client.client(for: device)
                prompt.apply(device)
                let approval = try await advised { () async throws(ClientError) in try await app.approve(operation: operation) }
                if printApproval {
                    Console.line("approved \"\(operation)\"; the approval (redeem it once, within 300 s):")
                    Console.line(approval.token.value)
                    return
                }
                guard let apiKey else {
                    Console.line("approved \"\(operation)\"; pass --api-key to redeem it as the app's backend would")
                    return
                }
                // What the app's backend does before acting on it: its own session names the user.
                let userID = try await advised { () async throws(ClientError) in try await app.registration()?.userID } ?? ""
                let backend = BackendAPI(transport: try client.transport(), apiKey: apiKey)
                let redeemed = try await advised { () async throws(ClientError) in
                    try await backend.redeem(approval.redemption(userID: userID))
                }
                Console.line("approved \"\(operation)\"; the app's backend redeemed the one-time approval for device \(redeemed.deviceId)")
            }
        }
    }
}
