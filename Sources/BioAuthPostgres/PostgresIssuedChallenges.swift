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
/// challenges are not remembered (their logins read first).
package final class PostgresIssuedChallenges: Sendable {
    struct Entry: Sendable {
        let challenge: ChallengeRecord
        let device: DeviceRecord?
    }

    /// A challenge lives `challengeTTL` (60 s by default); this many covers a few hundred logins a
    /// second from one instance.
    static let capacity = 32_768

    private let entries = Mutex<[Data: Entry]>([:])

    /// Remembers a login challenge just stored and its device's row (nil: no such device). When
    /// full, the entries expired by `now` go first.
    func remember(_ challenge: ChallengeRecord, device: DeviceRecord?, now: Date = Date()) {
        guard case .login = challenge.binding, challenge.enrolmentRequestID == nil else { return }
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries = entries.filter { $0.value.challenge.expiresAt > now } }
            if entries.count < Self.capacity { entries[challenge.id] = Entry(challenge: challenge, device: device) }
        }
    }

    /// The rows a finishing login may be decided on, forgotten as they are given; nil if this
    /// instance did not issue the challenge. (Whether it has expired is the decision's to say, on
    /// the service's clock.)
    func take(_ id: Data) -> TakenChallenge? {
        guard let entry = entries.withLock({ $0.removeValue(forKey: id) }) else { return nil }
        return TakenChallenge(challenge: entry.challenge, device: entry.device, lockedOut: false)
    }

    /// Challenges remembered now; for tests.
    package var count: Int { entries.withLock { $0.count } }
}
