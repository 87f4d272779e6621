import Logging

extension Logger {
    /// A logger that drops everything: the default wherever a caller may pass its own. A library
    /// logs through the logger it is given and never through a global one it made itself.
    @usableFromInline package static func discarding(_ label: String) -> Logger { Logger(label: label) { _ in SwiftLogNoOpLogHandler() } }
}
