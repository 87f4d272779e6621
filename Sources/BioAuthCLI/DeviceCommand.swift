import ArgumentParser
import BioAuth
import BioAuthCore
import BioAuthEmulator
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
            LockOut.self, Unlock.self, Register.self, Login.self, StepUp.self,
        ])
    public init() {}
}

struct StateOptions: ParsableArguments {
    @Option(help: "The device's state file.")
    var state: String = "bioauth-device.json"
}

/// What the state file holds: the emulated device and the app's registration with a server.
struct DeviceFile: Codable {
    struct Client: Codable {
        var server: String?
        var user: String?
        var deviceID: String?
        var sessionToken: String?
    }
    var device: EmulatedDevice.Snapshot
    var client: Client

    static func load(_ path: String) throws -> (EmulatedDevice, Client) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("no device state at \(path)", hint: "create one with `bioauth device create --state \(path)`")
        }
        guard let file = try? JSONDecoder().decode(DeviceFile.self, from: data) else { throw CLIError("\(path) is not a device state file") }
        return (try EmulatedDevice(snapshot: file.device), file.client)
    }

    static func save(_ device: EmulatedDevice, _ client: Client, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(DeviceFile(device: device.snapshot(), client: client))
        try writePrivately(data, to: path)
    }
}

/// Writes `data` to `path` atomically, readable by the owner only from the first byte: a temporary
/// file created with mode 0600 (`O_CREAT | O_EXCL`), written, synced and renamed over `path`. The
/// state holds the emulated enclave's private keys: it must never exist world-readable, not even
/// between a write and a chmod.
func writePrivately(_ data: Data, to path: String) throws {
    let temporary = path + ".tmp-\(UUID().uuidString)"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw CLIError("cannot write \(path)") }
    var written = 0
    let ok = data.withUnsafeBytes { bytes -> Bool in
        while written < bytes.count {
            let result = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if result <= 0 { return false }
            written += result
        }
        return fsync(descriptor) == 0
    }
    close(descriptor)
    guard ok, rename(temporary, path) == 0 else {
        unlink(temporary)
        throw CLIError("cannot write \(path)")
    }
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
        throw CLIError("expected the \(what) on standard input", hint: "e.g. `printf '%s\\n' \"$SECRET\" | bioauth device …`, or use a --…-file option")
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
        static let configuration = CommandConfiguration(abstract: "Create an emulated phone with one enrolled face or finger; reads its passcode from stdin.")
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
            Console.line("created an emulated iPhone with \(biometry.kind) (\(passcode == nil ? "no passcode" : "passcode set"), one \(biometry.kind == .touchID ? "finger" : "face") enrolled) in \(options.state)")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show biometry, passcode, key and registration.")
        @OptionGroup var options: StateOptions

        func run() async throws {
            try await withDevice(options) { device, client in
                let signer = BiometricSigner(platform: device.platform, tag: DeviceAgent.keyTag)
                Console.line("biometry:   \(BiometricStatus(contexts: device.platform.contexts))")
                Console.line("enrolled:   \(device.enrolledIdentities.count)")
                Console.line("passcode:   \(device.hasPasscode ? "set" : "not set")")
                Console.line("device key: \(signer.hasKey ? "present (\((try? signer.publicKey().fingerprint) ?? "?"))" : "none")")
                if let user = client.user, let id = client.deviceID {
                    Console.line("registered: \(user) / device \(id) at \(client.server ?? "?")")
                } else {
                    Console.line("registered: no (run `bioauth device register`)")
                }
            }
        }
    }

    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enrol another face or finger (what someone who knows the passcode can do).")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.enrollBiometry()
                Console.line("enrolled another \(device.configuration.biometry == .touchID ? "finger" : "face"); keys and items bound to .biometryCurrentSet are now invalid")
            }
        }
    }

    struct Unenroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an enrolled finger or face (the most recent one).")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.removeBiometry(device.enrolledIdentities.last)
                Console.line("removed one enrollment; \(device.enrolledIdentities.count) left; .biometryCurrentSet keys and items are now invalid")
            }
        }
    }

    struct ResetBiometry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "reset-biometry", abstract: "Reset Face ID: remove every enrollment, then enrol one new face.")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.resetBiometry()
                device.enrollBiometry()
                Console.line("reset \(device.configuration.biometry) and enrolled a new one; .biometryCurrentSet keys and items are now invalid")
            }
        }
    }

    struct SetPasscode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set-passcode", abstract: "Set or change the device passcode (read from stdin).")
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
        static let configuration = CommandConfiguration(commandName: "remove-passcode", abstract: "Turn the passcode off: the system deletes every passcode-class item and key.")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.removePasscode()
                Console.line("device passcode removed; WhenPasscodeSetThisDeviceOnly items and keys were deleted by the system")
            }
        }
    }

    struct LockOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "lock-out", abstract: "Lock biometry out, as after five failed matches.")
        @OptionGroup var options: StateOptions
        func run() async throws {
            try await withDevice(options) { device, _ in
                device.lockOutBiometry()
                Console.line("\(device.configuration.biometry) is locked out until the device passcode is entered (`bioauth device unlock`)")
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
        static let configuration = CommandConfiguration(abstract: "Sign in with a password (stdin or --password-file) and enrol this device's key.")
        @OptionGroup var options: StateOptions
        @Option(help: "The server's base URL.") var server: String = "http://127.0.0.1:8080"
        @Option(help: "The user name.") var user: String
        @Option(help: "Read the password from this file instead of stdin.") var passwordFile: String?
        @Option(help: "The device's name on the server.") var name: String = "Emulated iPhone"
        @Flag(help: "Replace the key of the device registered before (after an enrollment change).") var reenrol = false
        @Flag(help: "Create the user first (demo sign-up).") var signUp = false

        func run() async throws {
            let password = try readSecret("password", file: passwordFile)
            try await withDevice(options) { device, client in
                let agent = DeviceAgent(device: device, server: ServerClient(baseURL: server))
                if reenrol && client.deviceID == nil { throw CLIError("nothing to re-enrol", hint: "register first without --reenrol") }
                let token = try await agent.primaryLogin(user: user, password: password, createIfMissing: signUp)
                let id = try await agent.enrol(primaryToken: token, name: name, replacing: reenrol ? client.deviceID : nil)
                client = .init(server: server, user: user, deviceID: id)
                Console.line("\(reenrol ? "re-enrolled" : "enrolled") device \(id) for \(user) at \(server) (key \(try agent.signer.publicKey().fingerprint))")
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

        func run() async throws {
            try await withDevice(options) { device, client in
                guard let server = client.server, let user = client.user, let id = client.deviceID else {
                    throw CLIError("this device is not registered", hint: "run `bioauth device register --user NAME`")
                }
                prompt.apply(device)
                let token = try await DeviceAgent(device: device, server: ServerClient(baseURL: server)).login(user: user, deviceID: id)
                client.sessionToken = token
                Console.line("signed in as \(user) with device \(id) (\(device.promptCount) prompt)")
                if printToken { Console.line(token) }
            }
        }
    }

    struct StepUp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "step-up", abstract: "Approve one operation with a signature (uses the session from `login`).")
        @OptionGroup var options: StateOptions
        @OptionGroup var prompt: PromptOptions
        @Option(help: "The operation to approve, as shown to the user.") var operation: String

        func run() async throws {
            try await withDevice(options) { device, client in
                guard let server = client.server, let id = client.deviceID, let session = client.sessionToken else {
                    throw CLIError("no session", hint: "run `bioauth device login` first")
                }
                prompt.apply(device)
                let agent = DeviceAgent(device: device, server: ServerClient(baseURL: server))
                let approval = try await agent.stepUp(session: session, deviceID: id, operation: operation)
                let redeemed = try await agent.redeem(approval: approval, operation: operation)
                Console.line("approved \"\(operation)\"; the one-time approval was redeemed (HTTP \(redeemed.status))")
            }
        }
    }
}
