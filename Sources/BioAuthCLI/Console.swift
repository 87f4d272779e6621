import Foundation
import Synchronization

/// Where the CLI writes and reads. Task-local, so tests run commands in-process and capture
/// their output and feed their standard input.
public enum Console {
    @TaskLocal public static var output: any TextSink = StandardStream()
    @TaskLocal public static var input: any LineSource = StandardInput()

    static func line(_ text: String = "") { output.write(text + "\n") }
}

public protocol TextSink: Sendable {
    func write(_ text: String)
}

public protocol LineSource: Sendable {
    func readLine() -> String?
}

struct StandardStream: TextSink {
    func write(_ text: String) { try? FileHandle.standardOutput.write(contentsOf: Data(text.utf8)) }  // a closed pipe is not a crash
}

struct StandardInput: LineSource {
    func readLine() -> String? { Swift.readLine(strippingNewline: true) }
}

/// Captures output in memory.
public final class CapturedOutput: TextSink {
    private let buffer = Mutex("")
    public init() {}
    public func write(_ text: String) { buffer.withLock { $0 += text } }
    public var text: String { buffer.withLock { $0 } }
}

/// Feeds fixed lines as standard input.
public final class ScriptedInput: LineSource {
    private let lines: Mutex<[String]>
    public init(_ lines: [String]) { self.lines = Mutex(lines) }
    public func readLine() -> String? { lines.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
}

/// A failure the CLI explains: what went wrong and what to do next. Never holds a secret.
public struct CLIError: Error, CustomStringConvertible {
    public let message: String
    public let hint: String?
    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }
    public var description: String { hint.map { "\(message)\n  → \($0)" } ?? message }
}
