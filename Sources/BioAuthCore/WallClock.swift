import Foundation
import Synchronization

/// A source of wall-clock time, injected wherever expiry, delays or reuse windows are decided.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that moves only when told to: for tests, the emulator and demos.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>

    /// Starts at `start` (default: 2026-01-01T00:00:00Z, so output is reproducible).
    public init(start: Date = Date(timeIntervalSince1970: 1_767_225_600)) { current = Mutex(start) }

    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }

    /// Sets the clock to `date`.
    public func set(_ date: Date) { current.withLock { $0 = date } }
}
