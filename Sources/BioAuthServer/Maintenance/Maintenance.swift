import BioAuthCore
import Foundation
import Logging

/// Deleting what no longer decides anything. Safe on every instance at once.
struct Maintenance: Flow {
    let context: FlowContext

    func sweepExpiredChallenges() async throws -> Int {
        try await store.deleteChallenges(expiredBefore: clock.now())
    }

    func sweep() async throws -> SweepResult {
        let now = clock.now()
        var result = try await store.sweep(
            windowsBefore: windows.windowStart(now), runsBefore: now.addingTimeInterval(-max(configuration.retention.passwordRuns, RecoveryCodeLimits.day)),
            auditBefore: now.addingTimeInterval(-configuration.retention.audit), sessionsBefore: now.addingTimeInterval(-configuration.retention.sessions))
        result.challenges = try await store.deleteChallenges(expiredBefore: now)
        return result
    }
}
