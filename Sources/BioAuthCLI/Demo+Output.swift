import BioAuth
import BioAuthAttestation
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthTestServer
import Crypto
import Foundation
import Logging
import Synchronization

/// How the demo reports: a line per step, or one JSON record per step and a summary.
extension Demo {
    /// One step: its number, `story` or `attack`, its title, whether it behaved as expected, and what happened.
    public struct Step: Codable, Sendable {
        public var step: Int
        public var part: String
        public var title: String
        public var ok: Bool
        public var detail: String
    }

    /// The error code an operation failed with, nil if it succeeded.
    func outcome(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as ClientError { return "\(error.code)" } catch let error as BioAuthError { return "\(error.code)" } catch {
            return "\(type(of: error))"
        }
    }

    func header(_ url: String) {
        guard !json else { return }
        Console.line("BioAuth demo: an emulated iPhone with Face ID against bioauth-server at \(url)")
        Console.line("(in-process, temporary SQLite database). Each step checks what happened.")
    }

    func emit(_ step: Step, after previous: Step?) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            Console.line(String(decoding: (try? encoder.encode(step)) ?? Data(), as: UTF8.self))
            return
        }
        if step.part != previous?.part {
            Console.line(step.part == "story" ? "\nThe story" : "\nThe attacks — each must fail for the attacker")
        }
        Console.line("  \(step.ok ? "✔" : "✘") \(step.step). \(step.title)")
        Console.line("     \(step.detail)")
    }

    func footer(_ steps: [Step], _ passed: Bool) {
        let good = steps.filter(\.ok).count
        if json {
            Console.line(#"{"passed":\#(passed),"steps":\#(steps.count),"ok":\#(good)}"#)
        } else {
            Console.line(
                passed
                    ? "\nAll \(steps.count) steps behaved as expected."
                    : "\n\(steps.count - good) of \(steps.count) steps did NOT behave as expected.")
        }
    }
}
