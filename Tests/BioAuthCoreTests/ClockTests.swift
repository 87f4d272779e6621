import BioAuthCore
import Foundation
import Testing

/// The clocks tests run on: a manual one that never repeats an instant when it ticks, and the
/// in-process server's, which runs like a real one until a test moves it.
struct ClockTests {
    @Test func aTickingManualClockNeverRepeatsAnInstant() {
        let still = ManualClock()
        #expect(still.now() == still.now(), "without a tick it moves only when told")
        let ticking = ManualClock(tick: ManualClock.microsecond)
        let readings = (0..<1_000).map { _ in ticking.now() }
        #expect(zip(readings, readings.dropFirst()).allSatisfy { $0 < $1 })
        #expect(readings.last!.timeIntervalSince(readings.first!) < 0.01, "a tick is below any wire time")
    }

    @Test func aTestClockRunsWithRealTimeAndMovesWhenTold() async throws {
        let clock = TestClock()
        let first = clock.now()
        #expect(abs(first.timeIntervalSince(Date())) < 1, "it starts at real time")
        try await Task.sleep(for: .milliseconds(1_100))
        let later = clock.now()
        #expect(later.timeIntervalSince(first) >= 1, "it runs by itself: a client on the system clock agrees with it")
        clock.advance(by: 3_600)
        #expect(clock.now().timeIntervalSince(Date()) > 3_599, "advance moves it ahead of real time")
        let readings = (0..<1_000).map { _ in clock.now() }
        #expect(zip(readings, readings.dropFirst()).allSatisfy { $0 < $1 }, "never the same instant twice")
        let date = Date(timeIntervalSince1970: 1_767_225_600)
        clock.set(date)
        #expect(abs(clock.now().timeIntervalSince(date)) < 1, "set puts it at a date, from where it runs on")
    }
}
