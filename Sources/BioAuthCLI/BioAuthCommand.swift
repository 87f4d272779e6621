import ArgumentParser
import BioAuthCore
import Foundation

/// `bioauth`: the demo, an emulated device that talks to a real server, and key utilities.
public struct BioAuthCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "bioauth",
        abstract: "Secure Face ID / Touch ID sign-in: demo, emulated device, key and attestation tools.",
        version: BioAuthVersion.current,
        subcommands: [DemoCommand.self, DeviceCommand.self, KeyCommand.self, AttestationCommand.self])

    public init() {}
}

/// `bioauth demo`
public struct DemoCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "The whole story in one command: enrolment, login, step-up, and the attacks, failing.",
        discussion:
            "Starts bioauth-server in-process on a free loopback port with a temporary SQLite database and drives an emulated iPhone with Face ID against it. Exits 0 only if every step behaved as expected."
    )

    @Flag(help: "Print one JSON record per step.")
    var json = false

    public init() {}

    public func run() async throws {
        let passed = try await Demo(json: json).run()
        if !passed { throw ExitCode.failure }
    }
}

/// Runs a command line in-process with captured output: for tests and embedding.
public enum CommandRunner {
    public struct Result: Sendable {
        public let exitCode: Int32
        public let output: String
    }

    public static func run(_ arguments: [String], input: [String] = []) async -> Result {
        let captured = CapturedOutput()
        let code: Int32 = await Console.$output.withValue(captured) {
            await Console.$input.withValue(ScriptedInput(input)) {
                do {
                    var command = try BioAuthCommand.parseAsRoot(arguments)
                    if var asyncCommand = command as? any AsyncParsableCommand {
                        try await asyncCommand.run()
                    } else {
                        try command.run()
                    }
                    return 0
                } catch let error as CLIError {
                    Console.line("error: \(error)")
                    return 1
                } catch {
                    let code = BioAuthCommand.exitCode(for: error).rawValue
                    let message = BioAuthCommand.fullMessage(for: error)
                    if !message.isEmpty { Console.line(message) }
                    return code
                }
            }
        }
        return Result(exitCode: code, output: captured.text)
    }
}
