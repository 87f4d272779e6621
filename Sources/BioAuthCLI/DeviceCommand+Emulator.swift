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

/// The phone itself: its biometry, passcode and lockouts, changed as a person would.
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
}
