import ArgumentParser
import BioAuthAttestation
import BioAuthCore
import Crypto
import Foundation

/// `bioauth attestation …`: App Attest and Android Key Attestation, checked as the server checks them.
public struct AttestationCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "attestation", abstract: "Check App Attest and Android Key Attestation evidence as bioauth-server does.",
        subcommands: [Check.self, Verify.self, Status.self])
    public init() {}
}

/// Parses an ISO 8601 time given on the command line.
func parseInstant(_ text: String) throws -> Date {
    guard let date = AttestationFiles.parseTime(text) else {
        throw CLIError("not an ISO 8601 time: \(text)", hint: "for example 2026-11-25T12:00:00Z")
    }
    return date
}

func printVerdict(_ name: String, _ verdict: AttestationVerdict, expected: Bool?) {
    let outcome = verdict.passed ? "verified" : "refused (\(verdict.error?.check.description ?? "?")): \(verdict.error?.reason ?? "")"
    let marker = expected.map { $0 == verdict.passed ? "ok  " : "FAIL" } ?? (verdict.passed ? "ok  " : "FAIL")
    Console.line("\(marker) \(name): \(outcome)")
    for (label, value) in verdict.facts { Console.line("       \(label): \(value)") }
}

extension AttestationCommand {
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check vector files or folders and print each case's verdict with what it proves.",
            discussion: """
                Reads App Attest YAML (veehaitch/devicecheck-appattest) and JSON (uebelack/node-app-attest) files, and Android \
                Key Attestation chains as PEM with android/keyattestation's JSON expectation beside them. A case is expected to \
                verify unless it is in an `invalid` folder, software-attested, an ML-DSA key (BioAuth enrols P-256 keys) or under \
                a root of its own. Each case is checked at the time its file gives (or when its chain was issued) unless --at \
                says otherwise. Exits 1 if any expected verdict is not met.
                """)

        @Argument(help: "Files or folders.") var paths: [String]
        @Option(help: "Check every case at this ISO 8601 time instead of its own.") var at: String?
        @Option(name: .customLong("app-id"), help: "An App Attest app id (TEAMID.bundle) to accept besides those the files name.")
        var appIDs: [String] = []

        func run() async throws {
            let time = try at.map(parseInstant)
            var cases: [AttestationCase] = []
            for path in paths {
                do { cases += try AttestationFiles.cases(at: URL(fileURLWithPath: path)) } catch {
                    throw CLIError("cannot read \(path) as attestation vectors")
                }
            }
            var apps = AttestationFiles.appIDs(in: cases)
            for appID in appIDs {
                do { apps.insert(try AppAttest.AppID(appID)) } catch { throw CLIError("--app-id \(appID): \(error.reason)") }
            }
            var failures = 0
            for item in cases {
                let verdict = await AttestationChecker.check(item, appIDs: apps, at: time)
                printVerdict(item.name + (item.shouldPass ? "" : " (must be refused)"), verdict, expected: item.shouldPass)
                if verdict.passed != item.shouldPass { failures += 1 }
            }
            Console.line("\(cases.count) cases, \(failures) not as expected")
            if failures > 0 || cases.isEmpty { throw ExitCode.failure }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify one App Attest attestation object as a server receives it.",
            discussion: "Binary arguments are base64 or base64url. Exits 1 if the attestation is refused, naming the check that failed.")

        @Option(help: "The attestation object from DCAppAttestService.attestKey.") var attestation: String
        @Option(name: .customLong("key-id"), help: "The key identifier from DCAppAttestService.generateKey.") var keyID: String
        @Option(name: .customLong("client-data-hash"), help: "SHA-256 of the client data the app attested.") var clientDataHash: String
        @Option(name: .customLong("app-id"), help: "TEAMID.bundle of an app to accept (repeatable).") var appIDs: [String]
        @Flag(help: "Accept development keys too (production only by default).") var development = false
        @Option(help: "Verify at this ISO 8601 time instead of now.") var at: String?

        func run() async throws {
            func bytes(_ text: String, _ name: String) throws -> Data {
                guard let data = Data(base64Encoded: text) ?? Base64URL.decode(text) else { throw CLIError("--\(name) is not base64") }
                return data
            }
            var apps = Set<AppAttest.AppID>()
            for appID in appIDs {
                do { apps.insert(try AppAttest.AppID(appID)) } catch { throw CLIError("--app-id \(appID): \(error.reason)") }
            }
            let item = AttestationCase(
                name: "attestation",
                evidence: .appAttestation(
                    object: try bytes(attestation, "attestation"), keyID: try bytes(keyID, "key-id"),
                    clientDataHash: try bytes(clientDataHash, "client-data-hash"), appID: nil),
                shouldPass: true, time: nil)
            let environments: Set<AppAttest.Environment> = development ? [.development, .production] : [.production]
            let verdict = await AttestationChecker.check(
                item, appIDs: apps, environments: environments, at: try at.map(parseInstant) ?? Date())
            printVerdict("attestation", verdict, expected: true)
            if !verdict.passed { throw ExitCode.failure }
        }
    }
}
