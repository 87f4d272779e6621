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

/// `bioauth device …`: an emulated phone whose state lives in a file.
public struct DeviceCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "An emulated iPhone (state in a file) that talks to a running bioauth-server.",
        discussion: "Secrets (passcodes, passwords) are read from standard input or a file, never from the command line.",
        subcommands: [
            Create.self, Status.self, Enroll.self, Unenroll.self, ResetBiometry.self, SetPasscode.self, RemovePasscode.self,
            LockOut.self, Unlock.self, Register.self, Login.self, StepUp.self, SignIns.self, ApproveSignIn.self, DenySignIn.self,
            DPoPProof.self,
        ])
    public init() {}
}

struct StateOptions: ParsableArguments {
    @Option(help: "The device's state file.")
    var state: String = "bioauth-device.json"
}

/// What the state file holds: the emulated device (whose keychain holds the app's registration
/// and session, as on a phone) and the server the app talks to.
struct DeviceFile: Codable {
    struct Client: Codable {
        var server: String?
        var relyingParty: String?
    }
    var device: EmulatedDevice.Snapshot
    var client: Client

    static func load(_ path: String) throws -> (EmulatedDevice, Client) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("no device state at \(path)", hint: "create one with `bioauth device create --state \(path)`")
        }
        guard let file = try? JSONDecoder().decode(DeviceFile.self, from: data) else {
            throw CLIError("\(path) is not a device state file")
        }
        return (try EmulatedDevice(snapshot: file.device), file.client)
    }

    static func save(_ device: EmulatedDevice, _ client: Client, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(DeviceFile(device: device.snapshot(), client: client))
        try writePrivately(data, to: path)
    }
}

/// Writes the state file, readable by the owner only from the first byte: it holds the emulated
/// enclave's private keys.
func writePrivately(_ data: Data, to path: String) throws {
    do { try PrivateFile.write(data, to: path) } catch { throw CLIError(error.description) }
}

extension DeviceFile.Client {
    /// The app's client for this device, or an error when no server was registered yet.
    func client(for device: EmulatedDevice) throws -> BioAuthClient {
        BioAuthClient(
            configuration: .init(relyingPartyID: relyingParty ?? "localhost"), platform: device.platform, transport: try transport())
    }

    /// A transport to the registered server.
    func transport() throws -> URLSessionTransport {
        guard let server, let url = URL(string: server) else {
            throw CLIError("this device is not registered", hint: "run `bioauth device register --user NAME`")
        }
        return URLSessionTransport(baseURL: url)
    }
}

/// What to tell the user about a failed client call.
func explain(_ error: ClientError) -> CLIError {
    let hint: String? =
        switch error.code {
        case .reenrolmentRequired:
            "the key is gone (an enrollment change destroys .biometryCurrentSet keys): re-enrol with `bioauth device register --reenrol`"
        case .passcodeRequired:
            error.device?.code == .passcodeNotSet
                ? "set a device passcode first: `bioauth device set-passcode`"
                : "biometry is locked out: unlock the device with its passcode (`bioauth device unlock`)"
        case .notRecognised, .cancelled: "the person at the prompt was not recognised or cancelled"
        case .authenticationFailed: "the server's audit log has the reason"
        case .rateLimited: "retry after \(Int(error.retryAfter ?? 0)) seconds"
        case .serverUnreachable: "start it with `swift run bioauth-server` (or pass --server URL)"
        case .sessionExpired: "run `bioauth device login` first"
        case .notEnrolled: "run `bioauth device register --user NAME`"
        case .approvalRequired:
            "the user has a device already: approve from it, or pass --recovery-inbox DIR (the server's --recovery-code-directory)"
        default: nil
        }
    return CLIError("\(error)", hint: hint)
}

/// Runs a client call, turning its error into advice.
func advised<T>(_ body: () async throws(ClientError) -> T) async throws -> T {
    do { return try await body() } catch { throw explain(error) }
}

/// Loads the device, runs `body`, saves the device.
func withDevice(_ options: StateOptions, _ body: (EmulatedDevice, inout DeviceFile.Client) async throws -> Void) async throws {
    let (device, loaded) = try DeviceFile.load(options.state)
    var client = loaded
    try await body(device, &client)
    try DeviceFile.save(device, client, to: options.state)
}

/// Reads one secret line from standard input (or a file).
func readSecret(_ what: String, file: String?) throws -> String {
    if let file {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw CLIError("cannot read \(what) from \(file)") }
        return text.trimmingCharacters(in: .newlines)
    }
    guard let line = Console.input.readLine(), !line.isEmpty else {
        throw CLIError(
            "expected the \(what) on standard input", hint: "e.g. `printf '%s\\n' \"$SECRET\" | bioauth device …`, or use a --…-file option"
        )
    }
    return line
}

enum BiometryOption: String, ExpressibleByArgument, CaseIterable {
    case faceID = "face-id", touchID = "touch-id", opticID = "optic-id"
    var kind: BiometryKind {
        switch self {
        case .faceID: .faceID
        case .touchID: .touchID
        case .opticID: .opticID
        }
    }
}

enum PersonOption: String, ExpressibleByArgument, CaseIterable {
    case owner, stranger, cancel
    var action: EmulatedDevice.PromptAction {
        switch self {
        case .owner: .match
        case .stranger: .noMatch
        case .cancel: .cancel
        }
    }
}

extension DeviceCommand {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an emulated phone with one enrolled face or finger; reads its passcode from stdin.")
        @OptionGroup var options: StateOptions
        @Option(help: "face-id, touch-id or optic-id.") var biometry: BiometryOption = .faceID
        @Flag(help: "Create it without a device passcode (biometry then cannot be used).") var noPasscode = false
        @Flag(help: "Replace an existing state file.") var force = false

        func run() async throws {
            if FileManager.default.fileExists(atPath: options.state) && !force {
                throw CLIError("\(options.state) exists", hint: "pass --force to replace it, or --state to choose another file")
            }
            let passcode = noPasscode ? nil : try readSecret("device passcode", file: nil)
            let device = EmulatedDevice(configuration: .init(biometry: biometry.kind), passcode: passcode)
            try DeviceFile.save(device, .init(), to: options.state)
            Console.line(
                "created an emulated iPhone with \(biometry.kind) (\(passcode == nil ? "no passcode" : "passcode set"), one \(biometry.kind == .touchID ? "finger" : "face") enrolled) in \(options.state)"
            )
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show biometry, passcode, key and registration.")
        @OptionGroup var options: StateOptions

        func run() async throws {
            try await withDevice(options) { device, client in
                let app = BioAuthClient(
                    configuration: .init(relyingPartyID: client.relyingParty ?? "localhost"), platform: device.platform,
                    transport: ClosureTransport { _ in throw URLError(.notConnectedToInternet) })
                let signer = app.signer
                Console.line("biometry:   \(BiometricStatus(platform: device.platform))")
                Console.line("enrolled:   \(device.enrolledIdentities.count)")
                Console.line("passcode:   \(device.hasPasscode ? "set" : "not set")")
                let key = try? signer.publicKey()
                let dead = await app.credentialState() == .reenrolmentRequired
                Console.line(
                    "device key: \(key.map { dead ? "invalidated (\($0.fingerprint)): re-enrol" : "present (\($0.fingerprint))" } ?? "none")"
                )
                if let registration = try await advised({ () async throws(ClientError) in try await app.registration() }) {
                    Console.line("registered: \(registration.userID) / device \(registration.deviceID) at \(client.server ?? "?")")
                } else {
                    Console.line("registered: no (run `bioauth device register`)")
                }
            }
        }
    }

    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enrol another face or finger (what someone who knows the passcode can do).")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.enrollBiometry()
                Console.line(
                    "enrolled another \(device.configuration.biometry == .touchID ? "finger" : "face"); keys and items bound to .biometryCurrentSet are now invalid"
                )
            }
        }
    }

    struct Unenroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an enrolled finger or face (the most recent one).")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.removeBiometry(device.enrolledIdentities.last)
                Console.line(
                    "removed one enrollment; \(device.enrolledIdentities.count) left; .biometryCurrentSet keys and items are now invalid")
            }
        }
    }

    struct ResetBiometry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-biometry", abstract: "Reset Face ID: remove every enrollment, then enrol one new face.")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.resetBiometry()
                device.enrollBiometry()
                Console.line(
                    "reset \(device.configuration.biometry) and enrolled a new one; .biometryCurrentSet keys and items are now invalid")
            }
        }
    }

    struct SetPasscode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-passcode", abstract: "Set or change the device passcode (read from stdin).")
        @OptionGroup var options: StateOptions
        func run() async throws {
            let passcode = try readSecret("device passcode", file: nil)
            try await withDevice(options) { device, _ in
                device.setPasscode(passcode)
                Console.line("device passcode set")
            }
        }
    }

    struct RemovePasscode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-passcode", abstract: "Turn the passcode off: the system deletes every passcode-class item and key.")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.removePasscode()
                Console.line("device passcode removed; WhenPasscodeSetThisDeviceOnly items and keys were deleted by the system")
            }
        }
    }

    struct LockOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock-out", abstract: "Lock biometry out, as after five failed matches.")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.lockOutBiometry()
                Console.line(
                    "\(device.configuration.biometry) is locked out until the device passcode is entered (`bioauth device unlock`)")
            }
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Unlock the device with its passcode (stdin); clears a biometry lockout.")
        @OptionGroup var options: StateOptions
        func run() async throws {
            let passcode = try readSecret("device passcode", file: nil)
            try await withDevice(options) { device, _ in
                guard device.unlockDeviceWithPasscode(passcode) else { throw CLIError("wrong device passcode") }
                Console.line("device unlocked; biometry lockout cleared")
            }
        }
    }

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
