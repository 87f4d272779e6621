import Foundation

/// One request's writes, decided by a flow and applied by a store in one transaction
/// (``BioAuthStore/apply(_:)``). The store first checks every guard inside the transaction — if
/// one fails, nothing is written — then runs the mutations in order. A store translates each case
/// to its SQL and decides nothing: what a change withdraws, audits and delivers is written once, in
/// the plans below (`WritePlan.revokeDevice(id:userID:at:audit:)` and its neighbours).
public struct WritePlan: Sendable, Hashable {
    /// A condition that must hold inside the transaction, against concurrent requests and instances.
    public enum Guard: Sendable, Hashable {
        /// The user's device exists and is not revoked.
        case activeDevice(id: DeviceID, userID: UserID)
        /// The user's device exists, is not revoked and still holds `publicKey` — the key a
        /// signature was just verified against (the row locked until the transaction ends). A login
        /// or step-up that races a revocation or a re-key is refused, instead of leaving a session
        /// or approval that the revocation's withdrawal did not see.
        case activeDeviceKey(id: DeviceID, userID: UserID, publicKey: Data)
        /// The user's device exists, revoked or not.
        case ownedDevice(id: DeviceID, userID: UserID)
        /// The user's session exists and is not revoked.
        case activeSession(id: SessionID, userID: UserID)
        /// The API key exists and is not revoked.
        case activeApiKey(id: ApiKeyID)
        /// The enrolment request exists, is approved and has not ended (locked until the
        /// transaction ends: two enrolments cannot both use it).
        case approvedEnrolmentRequest(id: EnrolmentRequestID)
        /// The client address's failure limit in the query's window is not reached.
        case belowFailureLimits(LockoutQuery)
        /// The user has never had a device, revoked or not (checked under a per-user lock:
        /// concurrent first enrolments cannot all pass).
        case noDeviceEver(userID: UserID)
        /// Nobody owns this user id yet: the app's backend never vouched for it
        /// (``Mutation/claimForBackend(userID:at:)``) and it never had a device (checked under a
        /// per-id lock shared with ``noPasswordAccount(userID:)``).
        case userIDFree(userID: UserID)
        /// No password account has this id (under the same per-id lock).
        case noPasswordAccount(userID: UserID)
        /// The device's attestation still holds the App Attest key `keyID`, with a stored counter
        /// below `below` (the row locked until the transaction ends): an assertion's counter is
        /// accepted once, in order (``isSatisfied(byAttestation:)``).
        case appAttestCounter(deviceID: DeviceID, keyID: Data, below: UInt32)
        /// The device is still the passkey `credentialID` and its stored signature counter is below
        /// `below` — or both are 0, an authenticator that keeps none (the row locked until the
        /// transaction ends): of parallel sign-ins with one counter value, one stores it and the
        /// others are refused, so the counter never goes back (``isSatisfied(byPasskey:)``).
        case passkeyCounter(deviceID: DeviceID, credentialID: Data, below: UInt32)
    }

    /// Which live sessions a revocation ends.
    public enum Sessions: Sendable, Hashable {
        case one(id: SessionID, userID: UserID)
        /// Every session the device opened.
        case openedBy(deviceID: DeviceID, userID: UserID)
        case allOf(userID: UserID)
        /// Every session of the user that ranks below a device but `except`: primary (password)
        /// sessions and screens a phone let in (``SessionKind/crossDevice``).
        case belowDevicesOf(userID: UserID, except: SessionID?)
    }

    /// Which unredeemed approvals a withdrawal deletes.
    public enum Approvals: Sendable, Hashable {
        /// Those the device signed, and those any session it opened obtained.
        case ofDevice(id: DeviceID, userID: UserID)
        /// Those the session obtained.
        case obtainedBy(sessionID: SessionID)
        case allOf(userID: UserID)
        /// Those obtained by a session ``Sessions/belowDevicesOf(userID:except:)`` names.
        case obtainedBySessionsBelowDevicesOf(userID: UserID, except: SessionID?)
    }

    /// Which outstanding challenges a withdrawal deletes: a challenge issued before a device was
    /// revoked or re-keyed can no longer be finished.
    public enum OutstandingChallenges: Sendable, Hashable {
        /// Every challenge naming the device (login, step-up, and registrations replacing its key).
        case ofDevice(id: DeviceID, userID: UserID)
        case allOf(userID: UserID)
    }

    public enum Mutation: Sendable, Hashable {
        /// Inserts the user; an existing id throws ``StoreError`` `duplicate` and nothing is written.
        case insertUser(UserRecord)
        /// Inserts a challenge; an existing id throws ``StoreError`` `duplicate`.
        case insertChallenge(ChallengeRecord)
        /// Replaces the user's password salt, rounds and hash.
        case replacePassword(UserRecord)
        /// Inserts the session and, if given, sets that device's `lastUsedAt` to the session's start.
        case insertSession(SessionRecord, touchingDevice: DeviceID?)
        /// Deletes these failure counters (nothing for an empty list).
        case clearFailures([FailureSubject])
        /// Sets the subject's counter to this value (inserting it if absent).
        case setCounter(FailureSubject, FailureCounter)
        /// Remembers that the user signed in successfully from this client address at `at`
        /// (``PasswordAttemptRows/knownClient``). A known address's time moves only when the stored
        /// one is older than ``knownClientRefresh``: it only decides when the address is forgotten
        /// (with the audit log), so a user's every login need not rewrite its row.
        case rememberClient(userID: UserID, client: String, at: Date)
        /// Counts the failure against each subject's window counter, then applies what
        /// ``FailureRecord/consequences(ofCounts:)`` makes of the new counts (audit and lockout
        /// events); the subjects that reached their limit are the outcome's.
        case countFailure(FailureRecord)
        /// Records that the app's backend vouched for this user id (an enrolment grant, a
        /// ``PrimaryAuthenticator`` login), once: it can never be signed up for a password.
        case claimForBackend(userID: UserID, at: Date)
        /// Inserts a device; an existing id throws ``StoreError`` `duplicate` and nothing is written.
        case insertDevice(DeviceRecord)
        /// Gives the device a new public key with what its attestation proved (nil: none), marks
        /// it used at `at` and records when and how the key was replaced.
        case replaceDeviceKey(
            id: DeviceID, publicKey: Data, attestation: DeviceAttestation?, at: Date, how: EnrolmentProof, dpopThumbprint: String? = nil)
        case renameDevice(id: DeviceID, name: String)
        /// Replaces what the device's attestation records (an App Attest key's advanced counter).
        case storeAttestation(deviceID: DeviceID, DeviceAttestation)
        /// Replaces a passkey's stored credential (its counter and backup state after a sign-in).
        case storePasskey(deviceID: DeviceID, PasskeyCredential)
        /// Inserts a one-time step-up approval.
        case insertApproval(ApprovalRecord)
        /// Marks the approval consumed at `at`.
        case redeemApproval(tokenHash: TokenHash, at: Date)
        /// Replaces the session's current refresh token and remembers the old one as spent by it at
        /// `at`, with the successor sealed under the old token (``RefreshSuccessor``).
        case rotateRefreshToken(sessionID: SessionID, spent: TokenHash, replacement: TokenHash, at: Date, sealedSuccessor: Data)
        /// Inserts the request; an existing id throws ``StoreError`` `duplicate` and nothing is written.
        case insertEnrolmentRequest(EnrolmentRequestRecord)
        case deleteEnrolmentRequest(id: EnrolmentRequestID)
        /// Marks the request approved at `at`, by that device's approval (nil: by a recovery code).
        case approveEnrolmentRequest(id: EnrolmentRequestID, at: Date, byDevice: DeviceID?)
        /// Stores the hash of the request's recovery code (the previous code stops working), when it
        /// was sent and how many codes the request has had.
        case setRecoveryCode(requestID: EnrolmentRequestID, codeHash: TokenHash, sentAt: Date, codesSent: Int)
        /// Ends the request at `at` (``EnrolmentRequestRecord/endedAt``).
        case endEnrolmentRequest(id: EnrolmentRequestID, at: Date, ending: EnrolmentRequestEnding)
        /// Ends every request of the user that has not ended, approved ones included.
        case endOpenEnrolmentRequests(userID: UserID, at: Date, ending: EnrolmentRequestEnding)
        /// Counts one wrong recovery code against the request.
        case countRecoveryAttempt(requestID: EnrolmentRequestID)
        /// Inserts the removal; an existing id throws ``StoreError`` `duplicate` and nothing is written.
        case insertDeviceRemoval(DeviceRemovalRecord)
        /// Writes the removal's code attempts, schedule and ending (the rest never changes).
        case updateDeviceRemoval(DeviceRemovalRecord)
        /// Remembers a DPoP proof (the hash of its key's thumbprint and its `jti`) until `until`;
        /// one seen before throws ``StoreError`` `duplicate` and nothing is written.
        case rememberDPoPProof(TokenHash, until: Date)
        /// Inserts the request; an existing id throws ``StoreError`` `duplicate` and nothing is written.
        case insertCrossDeviceRequest(CrossDeviceRequestRecord)
        /// Writes the request's approval and ending (the rest never changes).
        case updateCrossDeviceRequest(CrossDeviceRequestRecord)
        /// Inserts the key; an existing id or secret hash throws ``StoreError`` `duplicate`.
        case insertApiKey(ApiKeyRecord)
        /// Inserts an access-token signing key; an existing id throws ``StoreError`` `duplicate`.
        case insertSigningKey(SigningKeyRecord)
        /// Deletes a signing key: it neither signs nor is published any more.
        case deleteSigningKey(id: String)
        case revokeApiKey(id: ApiKeyID, at: Date)
        case revokeDevice(id: DeviceID, at: Date)
        /// Sets `revokedAt` on every active device of the user; their number is the outcome's.
        case revokeDevices(userID: UserID, at: Date)
        /// Sets `revokedAt` on the selected sessions not yet revoked; their number is the outcome's.
        case revokeSessions(Sessions, at: Date)
        case withdrawApprovals(Approvals)
        case deleteChallenges(OutstandingChallenges)
        /// One audit row, merged into the row it repeats (``AuditEvent/aggregates``).
        case appendAudit(AuditEvent)
        /// One event for the webhook outbox (its ``AuditEvent/delivered`` fields: no address, no request id).
        case enqueueEvent(AuditEvent)
    }

    /// How stale a known address's time may be before a login rewrites it (one hour).
    public static let knownClientRefresh: TimeInterval = 3_600

    public internal(set) var guards: [Guard] = []
    public private(set) var mutations: [Mutation] = []

    public init() {}

    public mutating func require(_ condition: Guard) { guards.append(condition) }
    public mutating func add(_ mutation: Mutation) { mutations.append(mutation) }

    /// True when the plan's only writes are challenges: losing them in a crash costs a device one
    /// more challenge request and nothing else, so a store may commit such a plan without waiting
    /// for the disk (SQLite: no fsync; PostgreSQL: an unlogged table, no transaction).
    public var isEphemeral: Bool {
        !mutations.isEmpty && mutations.allSatisfy { if case .insertChallenge = $0 { true } else { false } }
    }

    /// Adds another plan's guards and mutations after this plan's.
    public mutating func merge(_ other: WritePlan) {
        guards += other.guards
        mutations += other.mutations
    }

    /// Appends the event to the audit log. Whether it is also delivered is decided when the plan
    /// is published (`publishing(_:)`), for the deployment.
    public mutating func audit(_ event: AuditEvent) {
        mutations.append(.appendAudit(event))
    }

    /// This plan as a deployment that delivers the kinds in `published` applies it — the outbox
    /// rule, in one place: each audited event of a kind both published and in
    /// ``AuditKind/deliveredEvents`` is also queued for delivery (``Mutation/enqueueEvent(_:)``),
    /// in the same transaction, and so are the lockouts a counted failure causes. What nobody
    /// will deliver costs no outbox row.
    package func publishing(_ published: Set<AuditKind>) -> WritePlan {
        let delivered = published.intersection(AuditKind.deliveredEvents)
        var plan = WritePlan()
        plan.guards = guards
        for mutation in mutations {
            switch mutation {
            case .appendAudit(let event):
                plan.add(mutation)
                if delivered.contains(event.kind) { plan.add(.enqueueEvent(event.delivered)) }
            case .countFailure(var failure):
                failure.published = delivered
                plan.add(.countFailure(failure))
            case .enqueueEvent: continue  // queued above, once, by this rule only
            default: plan.add(mutation)
            }
        }
        return plan
    }
}

extension WritePlan.Guard {
    /// For ``appAttestCounter(deviceID:keyID:below:)``: whether the device's stored attestation
    /// (nil: none, or no such device) satisfies it. The rule is here; a store reads the row, locked,
    /// and asks. Every other guard answers false.
    public func isSatisfied(byAttestation attestation: DeviceAttestation?) -> Bool {
        guard case .appAttestCounter(_, let keyID, let below) = self, let key = attestation?.appAttestKey else { return false }
        return key.keyID == keyID && key.counter < below
    }

    /// For ``passkeyCounter(deviceID:credentialID:below:)``: whether the device's stored passkey
    /// (nil: none, or no such device) satisfies it. Every other guard answers false.
    public func isSatisfied(byPasskey passkey: PasskeyCredential?) -> Bool {
        guard case .passkeyCounter(_, let credentialID, let below) = self, let passkey, passkey.credentialID == credentialID else {
            return false
        }
        return passkey.signCount < below || (passkey.signCount == 0 && below == 0)
    }
}

/// What ``BioAuthStore/apply(_:)`` did.
public struct PlanOutcome: Sendable, Hashable {
    /// The guard that failed, nothing written; nil when every mutation ran.
    public var refusal: WritePlan.Guard?
    /// How many sessions the revocations ended.
    public var revokedSessions: Int
    /// How many devices ``WritePlan/Mutation/revokeDevices(userID:at:)`` revoked.
    public var revokedDevices: Int = 0
    /// The subjects whose failure counters reached their limit with this plan's ``WritePlan/Mutation/countFailure(_:)``.
    public var lockedSubjects: [FailureSubject]

    public var wasApplied: Bool { refusal == nil }

    /// Every mutation ran.
    public static func applied(revokedSessions: Int = 0, lockedSubjects: [FailureSubject] = []) -> PlanOutcome {
        PlanOutcome(refusal: nil, revokedSessions: revokedSessions, lockedSubjects: lockedSubjects)
    }

    /// This guard failed: nothing was written.
    public static func refused(_ condition: WritePlan.Guard) -> PlanOutcome {
        PlanOutcome(refusal: condition, revokedSessions: 0, lockedSubjects: [])
    }
}
