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

/// A clock that moves only when told to: for unit tests, the emulator and demos. With a `tick`,
/// each reading is that much after the one before, so no two events it times share an instant —
/// as on a real clock, a device enrolled after another has the younger key.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>
    private let tick: TimeInterval

    /// Starts at `start` (default: 2026-01-01T00:00:00Z, so output is reproducible); each reading
    /// moves it by `tick` seconds (default 0: it moves only when told).
    public init(start: Date = Date(timeIntervalSince1970: 1_767_225_600), tick: TimeInterval = 0) {
        current = Mutex(start)
        self.tick = tick
    }

    public func now() -> Date {
        current.withLock { date in
            defer { date += tick }
            return date
        }
    }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }

    /// Sets the clock to `date`.
    public func set(_ date: Date) { current.withLock { $0 = date } }

    /// A microsecond: a tick below what any wire time shows.
    public static let microsecond: TimeInterval = 1e-6
}

/// A clock for tests against a running server: real time, plus what the test moved it forward
/// by, never the same instant twice. It moves by itself, so a client on the system clock agrees
/// with a server on this one however slow the machine is — until the test moves it: then give
/// the client (and the emulated device) this clock too, and both move together.
public final class TestClock: WallClock {
    private struct State {
        var offset: TimeInterval
        var last: Date
    }
    private let state: Mutex<State>

    /// Real time, moved by `offset` seconds.
    public init(offset: TimeInterval = 0) { state = Mutex(State(offset: offset, last: .distantPast)) }

    public func now() -> Date {
        state.withLock { state in
            let reading = max(Date().addingTimeInterval(state.offset), state.last.addingTimeInterval(ManualClock.microsecond))
            state.last = reading
            return reading
        }
    }

    /// Moves the clock forward by `seconds`: everything waiting for a time comes that much sooner.
    public func advance(by seconds: TimeInterval) { state.withLock { $0.offset += seconds } }

    /// Sets the clock to `date`; it runs on from there.
    public func set(_ date: Date) {
        state.withLock { state in
            state.offset = date.timeIntervalSince(Date())
            state.last = .distantPast
        }
    }
}
