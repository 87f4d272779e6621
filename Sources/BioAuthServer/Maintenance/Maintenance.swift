import BioAuthCore
import Foundation
import Logging

/// Deleting what no longer decides anything. Safe on every instance at once.
struct Maintenance: Flow {
    let context: FlowContext

    /// Whether the store answers a read within `limit`. The read is cancelled then; a driver that
    /// ignores cancellation holds the answer until the store gives up (PostgreSQL: its `operationTimeout`, 5 s by default).
    func isReady(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    _ = try await self.store.device(id: DeviceID("readiness-probe"))
                    return true
                } catch { return false }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    func sweepExpiredChallenges() async throws -> Int {
        try await store.deleteChallenges(expiredBefore: clock.now())
    }

    func sweep() async throws -> SweepResult {
        let now = clock.now()
        var result = try await store.sweep(
            windowsBefore: windows.windowStart(now),
            runsBefore: now.addingTimeInterval(-max(configuration.retention.passwordRuns, RecoveryCodeLimits.day)),
            auditBefore: now.addingTimeInterval(-configuration.retention.audit),
            sessionsBefore: now.addingTimeInterval(-configuration.retention.sessions))
        result.challenges = try await store.deleteChallenges(expiredBefore: now)
        result.signingKeys = try await SigningKeys(context: context).sweep()
        result.removedDevices = try await DeviceRemovals(context: context).executeDue()
        return result
    }
}
