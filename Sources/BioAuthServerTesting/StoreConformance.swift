import BioAuthCore
import BioAuthTesting
import BioAuthServer
import Crypto
import Foundation
import Synchronization

/// The behaviour every `BioAuthStore` must have, run against the SQLite (file and `:memory:`) and
/// PostgreSQL stores alike (modelled on swift-configuration's `ProviderCompatTest`).
///
/// ```swift
/// @Test(arguments: StoreConformance.Check.allCases)
/// func sqliteConforms(_ check: StoreConformance.Check) async throws {
///     try await StoreConformance { try await SQLiteStore.open(path: temporaryPath) }.run(check)
/// }
/// ```
public struct StoreConformance: Sendable {
    public let makeStore: @Sendable () async throws -> any BioAuthStore
    let t0 = Date(timeIntervalSince1970: 1_767_225_600)

    public init(makeStore: @escaping @Sendable () async throws -> any BioAuthStore) { self.makeStore = makeStore }

    /// One behaviour a store must have; each runs on a fresh store, and a test reports each on its
    /// own (`@Test(arguments: StoreConformance.Check.allCases)`).
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        case users, challenges, challengeRace, failures, passwordAttempts, verdicts, devices, sessions, approvals, approvalWithdrawal,
            audit, retention
        case enrolmentRequests, apiKeys, refreshTokens, signingKeys, outbox, pendingEnrolmentRequestCap, recoveryCodeLimits,
            cancelledRequests, firstDevice, userIDNamespaces
        case appAttestCounters, staleDeviceKey, challengeWithdrawal, deviceRemovals
        case crossDeviceRequests, dpopProofs, passkeyCounters

        public var description: String { rawValue }
    }

    /// Runs one check on a fresh store, closed afterwards.
    public func run(_ check: Check) async throws {
        let store = try await makeStore()
        do {
            switch check {
            case .users: try await users(store)
            case .challenges: try await challenges(store)
            case .challengeRace: try await challengeRace(store)
            case .failures: try await failures(store)
            case .passwordAttempts: try await passwordAttempts(store)
            case .verdicts: try await verdicts(store)
            case .devices: try await devices(store)
            case .sessions: try await sessions(store)
            case .approvals: try await approvals(store)
            case .approvalWithdrawal: try await approvalWithdrawal(store)
            case .audit: try await audit(store)
            case .retention: try await retention(store)
            case .enrolmentRequests: try await enrolmentRequests(store)
            case .apiKeys: try await apiKeys(store)
            case .refreshTokens: try await refreshTokens(store)
            case .signingKeys: try await signingKeys(store)
            case .outbox: try await outbox(store)
            case .pendingEnrolmentRequestCap: try await pendingEnrolmentRequestCap(store)
            case .recoveryCodeLimits: try await recoveryCodeLimits(store)
            case .cancelledRequests: try await cancelledRequests(store)
            case .firstDevice: try await firstDevice(store)
            case .userIDNamespaces: try await userIDNamespaces(store)
            case .appAttestCounters: try await appAttestCounters(store)
            case .staleDeviceKey: try await staleDeviceKey(store)
            case .challengeWithdrawal: try await challengeWithdrawal(store)
            case .deviceRemovals: try await deviceRemovals(store)
            case .crossDeviceRequests: try await crossDeviceRequests(store)
            case .dpopProofs: try await dpopProofs(store)
            case .passkeyCounters: try await passkeyCounters(store)
            }
            try await store.close()
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Runs every check, each on a fresh store, stopping at the first failure.
    public func run() async throws {
        for check in Check.allCases { try await run(check) }
    }

    // MARK: Fixtures

    func lockout(_ window: Date? = nil, client: String = "203.0.113.9", limit: Int = 3) -> LockoutQuery {
        LockoutQuery(windowStart: window ?? t0, client: client, clientLimit: limit)
    }

    /// Password-attempt limits: three wrong passwords per (user, address) in a 300-second window,
    /// thirty failures per address, and a run that backs off after five attempts.
    func passwordLimits(_ window: Date? = nil, client: String) -> PasswordAttemptLimits {
        let start = window ?? t0
        return PasswordAttemptLimits(
            lockout: lockout(start, client: client, limit: 30), windowEnd: start.addingTimeInterval(300), passwordsPerClient: 3,
            run: PasswordRunPolicy(threshold: 5, base: 60, cap: 600))
    }

    /// Stores a challenge through its plan; false if the plan was refused (a failure limit reached).
    func issue(_ store: any BioAuthStore, _ challenge: ChallengeRecord, lockout: LockoutQuery? = nil) async throws -> Bool {
        try await store.apply(.issueChallenge(challenge, lockout: lockout ?? self.lockout())).wasApplied
    }

    func challenge(
        _ binding: ChallengeRecord.Binding = .stepUp(
            operationHash: Data(repeating: 9, count: 32), deviceKey: Data(repeating: 4, count: 91)), user: UserID = "alice",
        device: DeviceID = "d1",
        expires: TimeInterval = 60
    ) -> ChallengeRecord {
        ChallengeRecord(
            id: ChallengeID(bytes: SecretBytes.random(count: 16).data), binding: binding, relyingPartyID: "example.com", userID: user,
            deviceID: device,
            nonce: SecretBytes.random(count: 32).data, createdAt: t0, expiresAt: t0.addingTimeInterval(expires))
    }

    func event(_ kind: String, user: UserID? = "alice", device: DeviceID? = nil) -> AuditEvent {
        AuditEvent(
            at: t0, kind: AuditKind(stored: kind), userID: user, deviceID: device, reason: AuditReason(stored: "r"), clientAddress: "c",
            requestID: BioAuthRequestID("q"))
    }

    func isDuplicate(_ body: () async throws -> Void) async -> Bool {
        do { try await body() } catch let error as StoreError { return error.code == .duplicate } catch { return false }
        return false
    }

    /// Takes a challenge and applies the plan `decide` makes of it.
    @discardableResult
    func finish(
        _ store: any BioAuthStore, _ id: ChallengeID, lockout: LockoutQuery? = nil,
        _ decide: @escaping @Sendable (TakenChallenge?) -> WritePlan
    )
        async throws -> PlanOutcome
    {
        try await store.consumeChallenge(id: id, lockout: lockout ?? self.lockout()) { taken in ((), decide(taken)) }.outcome
    }

    /// Applies an enrolment's plan through the challenge and returns the device as stored (nil if the plan was refused).
    func enrolled(_ store: any BioAuthStore, _ challenge: ChallengeRecord, _ device: DeviceRecord, replacing: EnrolmentProof?) async throws
        -> DeviceRecord?
    {
        let outcome = try await finish(store, challenge.id) { _ in
            // Published as the service publishes by default: every delivered kind is queued.
            WritePlan.enrolment(
                device, replacing: replacing, approvedRequest: challenge.enrolmentRequestID,
                audit: self.event("device.enrolled", user: device.userID, device: device.id)
            ).publishing(AuditKind.deliveredEvents)
        }
        return outcome.wasApplied ? try await store.device(id: device.id) : nil
    }

    /// Enrols a device through a registration challenge, as the service does.
    @discardableResult
    func enrol(_ store: any BioAuthStore, _ device: DeviceRecord, replacing: EnrolmentProof? = nil) async throws -> DeviceRecord? {
        let registration = challenge(
            .registration(publicKey: device.publicKey, deviceName: device.name, replacing: replacing != nil), user: device.userID,
            device: device.id)
        try require(try await issue(store, registration), "enrol: challenge issued")
        return try await enrolled(store, registration, device, replacing: replacing)
    }

    /// A session with every field set (a device session is refreshable and DPoP-bound), so that a
    /// store path that drops a field fails every check that reads the session back.
    func session(_ id: SessionID, device: DeviceID?, user: UserID = "alice") -> SessionRecord {
        SessionRecord(
            id: id, tokenHash: TokenHash(ofText: id.rawValue), userID: user, deviceID: device, kind: device == nil ? .primary : .device,
            createdAt: t0.addingTimeInterval(Double(id.rawValue.count)), expiresAt: t0.addingTimeInterval(3600),
            refreshTokenHash: device == nil ? nil : TokenHash(ofText: "refresh " + id.rawValue),
            dpopThumbprint: device == nil ? nil : "jkt-" + id.rawValue)
    }

}

/// A value set from inside a store's `decide` closure and read afterwards.
final class Captured<Value: Sendable>: Sendable {
    private let box = Mutex<Value?>(nil)
    func set(_ value: Value) { box.withLock { $0 = value } }
    var value: Value? { box.withLock { $0 } }
}
