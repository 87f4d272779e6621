import ArgumentParser
import BioAuthAttestation
import BioAuthCore
import BioAuthHTTP
import BioAuthPostgres
import BioAuthServer
import BioAuthSQLite
import BioAuthWebhooks
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// A setting from the environment, else from the configuration file (``ConfigurationFile``).
func env(_ name: String) -> String? { ProcessInfo.processInfo.environment[name] ?? ConfigurationFile.values[name] }

/// A comma-separated list setting (``env(_:)``), its items trimmed, empty ones dropped.
func envList(_ name: String) -> [String] {
    (env(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}

/// A key of at least 32 bytes, base64, from `file` or else `value` (an environment variable's);
/// nil when neither is given. - Throws: `ValidationError` naming `name` for one that is unreadable or short.
func secretKey(file: String?, orValue value: String?, name: String) throws -> SecretBytes? {
    let text: String
    if let file {
        guard let read = try? String(contentsOfFile: file, encoding: .utf8) else { throw ValidationError("cannot read \(file)") }
        text = read
    } else if let value {
        text = value
    } else {
        return nil
    }
    guard let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count >= 32 else {
        throw ValidationError("\(name) must be at least 32 bytes, base64")
    }
    return SecretBytes(key)
}
