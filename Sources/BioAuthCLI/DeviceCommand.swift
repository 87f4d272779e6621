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
