import BioAuthCore
import Foundation

/// Everything the server keeps, behind one protocol: the in-memory, SQLite and PostgreSQL stores
/// pass the same conformance suite (`BioAuthTesting.StoreConformance`).
///
/// Every method is one atomic operation. A method that returns has committed its write: a crash
/// afterwards loses nothing it acknowledged. Times are passed in (no clock inside a store).
public protocol BioAuthStore: Sendable {
    // MARK: Users
    /// - Throws: ``StoreError`` `duplicate` if the id exists.
    func insertUser(_ user: UserRecord) async throws
    func user(id: String) async throws -> UserRecord?

    // MARK: Challenges
    /// Inserts unless the device already has `limit` unexpired challenges at `now`.
    /// - Throws: ``StoreError`` `tooManyChallenges`, `duplicate`.
    func insertChallenge(_ challenge: ChallengeRecord, outstandingLimit limit: Int, now: Date) async throws
    /// Deletes and returns the challenge: exactly one caller ever receives it, even under races.
    func consumeChallenge(id: Data) async throws -> ChallengeRecord?
    /// Deletes challenges that expired before `date`; returns how many.
    func deleteChallenges(expiredBefore date: Date) async throws -> Int

    // MARK: Devices
    /// - Throws: ``StoreError`` `duplicate` if the id exists.
    func insertDevice(_ device: DeviceRecord) async throws
    func device(id: String) async throws -> DeviceRecord?
    func devices(userID: String) async throws -> [DeviceRecord]
    /// Replaces the key of a device of `userID` and clears its revocation; false if there is none.
    func replaceDeviceKey(id: String, userID: String, publicKey: Data, at: Date) async throws -> Bool
    func renameDevice(id: String, userID: String, name: String) async throws -> Bool
    /// Marks the device revoked; false if it does not exist for `userID` or is already revoked.
    func revokeDevice(id: String, userID: String, at: Date) async throws -> Bool
    func touchDevice(id: String, at: Date) async throws

    // MARK: Sessions
    func insertSession(_ session: SessionRecord) async throws
    func session(tokenHash: Data) async throws -> SessionRecord?
    func sessions(userID: String) async throws -> [SessionRecord]
    /// Revokes one session of `userID`; false if none was active.
    func revokeSession(id: String, userID: String, at: Date) async throws -> Bool
    /// Revokes the active sessions of `userID` (of one device if given); returns how many.
    func revokeSessions(userID: String, deviceID: String?, at: Date) async throws -> Int

    // MARK: Approvals
    func insertApproval(_ approval: ApprovalRecord) async throws
    /// Marks the approval consumed if it exists, is unconsumed, unexpired at `now` and approves
    /// `operationHash`; returns it then, nil otherwise. Exactly one caller succeeds.
    func consumeApproval(tokenHash: Data, operationHash: Data, now: Date) async throws -> ApprovalRecord?

    // MARK: Rate limits
    /// Adds one to `key`'s counter for the window starting at `windowStart` (a new window starts
    /// from zero) and returns the new count.
    func incrementCounter(key: String, windowStart: Date) async throws -> Int
    /// The count of `key` in the window starting at `windowStart` (0 for another window).
    func counter(key: String, windowStart: Date) async throws -> Int
    func resetCounter(key: String) async throws

    // MARK: Audit
    func appendAudit(_ event: AuditEvent) async throws
    /// The newest events first, of one user if given.
    func auditEvents(userID: String?, limit: Int) async throws -> [AuditEvent]

    // MARK: Lifecycle
    /// Releases connections. Idempotent; the store is unusable afterwards.
    func close() async throws
}
