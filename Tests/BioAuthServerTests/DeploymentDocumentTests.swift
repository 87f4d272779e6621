@testable import BioAuthHTTP
import BioAuthServerTesting
import BioAuthTesting
import Foundation
import HTTPTypes
import BioAuthAttestation
import Logging
import Testing

/// `docs/Deployment.md` against the server it describes: every `serve` option and every metric.
struct DeploymentDocumentTests {
    static func section(_ heading: String) throws -> Substring {
        let document = try String(contentsOf: PackagePaths.root.appendingPathComponent("docs/Deployment.md"), encoding: .utf8)
        let start = try #require(document.range(of: "\n## \(heading)\n")).upperBound
        let rest = document[start...]
        return rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
    }

    /// The option table lists exactly the options `serve --help` prints, with every environment
    /// variable the help names.
    @Test(.timeLimit(.minutes(2)))
    func theOptionTableIsTheHelp() throws {
        let help = try ServerProcess.command(["serve", "--help"])
        #expect(help.status == 0)
        let offered = Set(help.output.matches(of: #/(?m)^  (?:-\w, )?(--[a-z0-9-]+)/#).map { String($0.1) }).subtracting([
            "--help", "--version",
        ])
        let rows = try Self.section("Every `serve` option").split(separator: "\n").filter { $0.hasPrefix("| `--") }
        let documented = Set(rows.compactMap { $0.firstMatch(of: #/^\| `(--[a-z0-9-]+)`/#).map { String($0.1) } })
        #expect(
            offered.count > 40 && documented == offered,
            "missing: \(offered.subtracting(documented).sorted()), stale: \(documented.subtracting(offered).sorted())")
        let variables = Set(help.output.matches(of: #/BIOAUTH_[A-Z_]+/#).map { String($0.0) })
        let documentedVariables = Set(rows.joined().matches(of: #/BIOAUTH_[A-Z_]+/#).map { String($0.0) })
        #expect(
            variables.count > 30 && variables.isSubset(of: documentedVariables),
            "missing: \(variables.subtracting(documentedVariables).sorted())")
    }

    /// Every metric in the table is in the exposition of a server that answered one request, and
    /// every BioAuth metric there is in the table.
    @Test func theMetricTableIsTheExposition() async throws {
        let rows = try Self.section("Metrics").split(separator: "\n").filter { $0.hasPrefix("| `bioauth_") }
        let documented = Set(rows.compactMap { $0.firstMatch(of: #/^\| `(bioauth_[a-z_]+)/#).map { String($0.1) } })
        let harness = ServerHarness()
        try await harness.test { api in
            _ = try await api.call(.get, "/health")
            await Sweeper(service: harness.service, logger: Logger(label: "test"), registry: harness.routes.registry).measureOutbox()
            // What a server with Android attestation adds: the status list's age and failed reads.
            AttestationStatusRefresher(
                status: AttestationStatus(), clock: harness.clock, logger: Logger(label: "test"), registry: harness.routes.registry
            ).measure()
            let exposition = try await api.call(.get, "/metrics").text
            let shown = Set(
                exposition.matches(of: #/(?m)^# TYPE (bioauth_[a-z_]+) /#).map { String($0.1) })
            #expect(
                documented.count >= 12 && shown == documented,
                "undocumented: \(shown.subtracting(documented).sorted()), absent: \(documented.subtracting(shown).sorted())")
        }
    }
}
