import ArgumentParser
import BioAuthAttestation
import BioAuthWebhooks
import Foundation

extension AttestationCommand {
    /// `bioauth attestation status …`: the attestation status list a server reads from a file.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Keep the Android attestation status list (revoked attestation keys) in a file, for a server without outbound HTTP.",
            subcommands: [Update.self, Show.self])
    }
}

extension AttestationCommand.Status {
    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch the list, check it, and replace the file with it (atomically); the file's time is the list's age.",
            discussion: """
                Run it from cron (hourly) on a host that may reach the source, and start bioauth-server with \
                --android-attestation-status FILE. A list that cannot be fetched or read leaves the file as it was.
                """)

        @Option(name: .long, help: "Where the list comes from: an https URL or a file (default Google's list).")
        var source: String = AttestationStatusList.googleURL.absoluteString

        @Option(name: .long, help: "The file to write.")
        var file: String

        func run() async throws {
            let loaded: AttestationStatus.Loaded
            do { loaded = try await AttestationStatusSource(source).load(now: Date(), fetch: attestationStatusFetch) } catch {
                throw CLIError(error.description, hint: "the file \(file) is left as it was")
            }
            do { try loaded.list.json().write(to: URL(fileURLWithPath: file), options: .atomic) } catch {
                throw CLIError("cannot write \(file)", hint: "check the directory exists and is writable")
            }
            Console.line("\(file): \(loaded.list.entries.count) listed certificates from \(source)")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a status list file's age and counts, or the status of serial numbers.",
            discussion: "Exits 1 if a serial given is listed.")

        @Option(name: .long, help: "The list file (as bioauth attestation status update writes it, or Google's JSON).")
        var file: String

        @Option(name: .long, help: "A certificate serial number in hex (as openssl x509 -serial prints it); repeat for several.")
        var serial: [String] = []

        func run() async throws {
            let loaded: AttestationStatus.Loaded
            do { loaded = try await AttestationStatusSource.file(file).load(now: Date()) } catch { throw CLIError(error.description) }
            let age = Int(Date().timeIntervalSince(loaded.asOf) / 3600)
            let statuses = Dictionary(grouping: loaded.list.entries.values, by: \.status).mapValues(\.count).sorted { $0.key < $1.key }
            Console.line(
                "\(file): as of \(ISO8601DateFormatter().string(from: loaded.asOf)) (\(age) hours ago), \(loaded.list.entries.count) listed"
            )
            for (status, count) in statuses { Console.line("  \(status): \(count)") }
            var listed = false
            for serial in serial {
                let key = AttestationStatusList.key(serial.replacingOccurrences(of: ":", with: ""))
                if let entry = loaded.list.entries[key] {
                    listed = true
                    Console.line("\(key): \(entry)")
                } else {
                    Console.line("\(key): not listed")
                }
            }
            if listed { throw ExitCode(1) }
        }
    }
}
