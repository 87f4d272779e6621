import BioAuthServer
import Foundation
import Synchronization

/// The login challenges this instance stored, each with the device row the statement that stored
/// it read (``IssueChallengeStatement``), kept until they are finished or expire: a login finished
/// on the instance that issued its challenge is decided on these rows, with no read first, and its
/// one statement (``FinishDeviceLogin``) is what checks they still hold — the challenge is there to
/// take, the address below its failure limit, the device active with the key that verified. Where
/// any of that fails, nothing is taken, and the login is decided again on the rows as they are.
/// A login finished on another instance reads them as before.
///
/// Only rows the database gave are kept, never anything a client sent, so a wrong entry can only
/// be an out-of-date one, which the statement refuses. At most ``capacity`` entries; past that,
/// challenges are not remembered (their logins read first). Expired entries leave in the order
/// they came, a few at each new one, so no call scans them all.
package final class PostgresIssuedChallenges: Sendable {
    private struct Entry: Sendable {
        let challenge: ChallengeRecord
        let device: DeviceRecord?
    }

    private struct State {
        var entries: [ChallengeID: Entry] = [:]
        /// Every remembered id in the order it came, with its expiry; `head` is the oldest still
        /// listed (taken ones stay listed until they expire).
        var order: [(id: ChallengeID, expiresAt: Date)] = []
        var head = 0

        /// Forgets the entries that expired before `now`, oldest first.
        mutating func dropExpired(before now: Date) {
            while head < order.count, order[head].expiresAt < now {
                entries.removeValue(forKey: order[head].id)
                head += 1
            }
            if head >= 1_024, head * 2 >= order.count {
                order.removeFirst(head)
                head = 0
            }
        }
    }

    /// A challenge lives `challengeTTL` (60 s by default); this many covers a few hundred logins a
    /// second from one instance.
    package static let capacity = 32_768

    private let state = Mutex(State())

    package init() {}

    /// Remembers a login challenge just stored and its device's row (nil: no such device). Time
    /// is the challenge's own `createdAt` (the service's clock): what expired before it is forgotten.
    package func remember(_ challenge: ChallengeRecord, device: DeviceRecord?) {
        guard case .login = challenge.binding, challenge.enrolmentRequestID == nil else { return }
        state.withLock { state in
            state.dropExpired(before: challenge.createdAt)
            guard state.entries.count < Self.capacity, state.order.count - state.head < 2 * Self.capacity else { return }
            state.entries[challenge.id] = Entry(challenge: challenge, device: device)
            state.order.append((challenge.id, challenge.expiresAt))
        }
    }

    /// The rows a finishing login may be decided on, forgotten as they are given; nil if this
    /// instance did not issue the challenge. (Whether it has expired is the decision's to say, on
    /// the service's clock.)
    package func take(_ id: ChallengeID) -> TakenChallenge? {
        guard let entry = state.withLock({ $0.entries.removeValue(forKey: id) }) else { return nil }
        return TakenChallenge(challenge: entry.challenge, device: entry.device, lockedOut: false)
    }

    /// Challenges remembered now; for tests.
    package var count: Int { state.withLock { $0.entries.count } }
}
