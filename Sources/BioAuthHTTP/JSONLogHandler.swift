import Foundation
import Logging

/// A log handler that writes one JSON object per line to standard error (`bioauth-server
/// --log-format json`), for log pipelines that parse instead of grepping: `time` (ISO 8601 with
/// milliseconds, UTC), `level`, `label`, `message`, and the metadata's keys at the top level
/// (`metadata` nested where a key would shadow one of those). Values are strings, as swift-log
/// metadata prints them; no secret is ever put in metadata (the tests scan every line).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let write: @Sendable (String) -> Void

    /// Writes to standard error.
    public init(label: String) {
        self.init(label: label) { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }
    }

    /// Hands each line to `write` (tests).
    public init(label: String, write: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static let reserved: Set<String> = ["time", "level", "label", "message", "metadata"]

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var object: [String: Any] = [
            "time": Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)),
            "level": event.level.rawValue, "label": label, "message": event.message.description,
        ]
        var nested: [String: String] = [:]
        for (key, value) in merged {
            if Self.reserved.contains(key) { nested[key] = "\(value)" } else { object[key] = "\(value)" }
        }
        if !nested.isEmpty { object["metadata"] = nested }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return
        }
        write(String(decoding: data, as: UTF8.self))
    }
}
