import Foundation

/// The rows a decision reads inside its transaction (``BioAuthStore/decide(locking:_:)``), locked
/// until it commits: concurrent decisions on one row — two redemptions of one approval, two
/// rotations of one refresh token — queue, and the later one sees what the first wrote.
public struct RowLocks: Sendable, Hashable {
    /// The approval whose token hashes to this.
    public var approval: TokenHash?
    /// The enrolment request with this id.
    public var enrolmentRequest: EnrolmentRequestID?
    /// The session whose current refresh token hashes to this, or that spent a token hashing to it.
    public var refreshToken: TokenHash?
    /// A password attempt of this user from this client address: the user row, the counters a
    /// ``PasswordAttempt`` is decided on and whether the address is known (``PasswordAttemptRows``),
    /// read under a per-user lock.
    public var passwordAttempt: PasswordAttemptKey?
    /// Every enrolment request of this user, read under a per-user lock.
    public var enrolmentRequestsOf: UserID?
    /// These counters, each under its own lock (absent ones too).
    public var counters: [FailureSubject]
    /// The device removal with this id.
    public var deviceRemoval: DeviceRemovalID?
    /// The cross-device sign-in with this id.
    public var crossDeviceRequest: CrossDeviceRequestID?
    /// This user's cross-device sign-ins created after `since`, read under a per-user lock, and
    /// whether the user signed in from `client` before.
    public var crossDeviceRequestsOf: CrossDeviceRequestsOf?

    public init(
        approval: TokenHash? = nil, enrolmentRequest: EnrolmentRequestID? = nil, refreshToken: TokenHash? = nil,
        passwordAttempt: PasswordAttemptKey? = nil,
        enrolmentRequestsOf: UserID? = nil, counters: [FailureSubject] = [], deviceRemoval: DeviceRemovalID? = nil,
        crossDeviceRequest: CrossDeviceRequestID? = nil, crossDeviceRequestsOf: CrossDeviceRequestsOf? = nil
    ) {
        self.crossDeviceRequest = crossDeviceRequest
        self.crossDeviceRequestsOf = crossDeviceRequestsOf
        self.deviceRemoval = deviceRemoval
        self.enrolmentRequestsOf = enrolmentRequestsOf
        self.counters = counters
        self.approval = approval
        self.enrolmentRequest = enrolmentRequest
        self.refreshToken = refreshToken
        self.passwordAttempt = passwordAttempt
    }
}

/// What ``RowLocks`` found; nil where the row does not exist (or was not asked for).
public struct LockedRows: Sendable, Hashable {
    public var approval: ApprovalRecord?
    /// Whether the device that signed ``approval`` exists, is not revoked, and still has the key
    /// that signed it (no key arrived after the approval was made). The step-up that made the
    /// approval was out of its cool-down with that key, so such a signer still is at redemption.
    public var approvalSignerActive: Bool
    public var enrolmentRequest: EnrolmentRequestRecord?
    /// The session the refresh token names, with its device's state.
    public var refreshSession: SessionState?
    /// The refresh token as the session spent it (a rotated-away token); nil if it is current.
    public var spentRefreshToken: SpentRefreshToken?
    public var passwordAttempt: PasswordAttemptRows?
    /// ``RowLocks/enrolmentRequestsOf``'s requests, oldest first (expired and ended ones too).
    public var enrolmentRequests: [EnrolmentRequestRecord]
    /// ``RowLocks/counters`` that exist.
    public var counters: [FailureSubject: FailureCounter]
    public var deviceRemoval: DeviceRemovalRecord?
    public var crossDeviceRequest: CrossDeviceRequestRecord?
    /// ``RowLocks/crossDeviceRequestsOf``'s requests, oldest first (ended ones too).
    public var crossDeviceRequests: [CrossDeviceRequestRecord] = []
    /// Whether the user signed in from ``CrossDeviceRequestsOf/client`` before, or a phone let in
    /// the screen ``CrossDeviceRequestsOf/screenKey`` names.
    public var crossDeviceRequesterKnown = false

    public init(
        approval: ApprovalRecord? = nil, approvalSignerActive: Bool = false, enrolmentRequest: EnrolmentRequestRecord? = nil,
        refreshSession: SessionState? = nil,
        spentRefreshToken: SpentRefreshToken? = nil, passwordAttempt: PasswordAttemptRows? = nil,
        enrolmentRequests: [EnrolmentRequestRecord] = [],
        counters: [FailureSubject: FailureCounter] = [:]
    ) {
        self.enrolmentRequests = enrolmentRequests
        self.counters = counters
        self.passwordAttempt = passwordAttempt
        self.approval = approval
        self.approvalSignerActive = approvalSignerActive
        self.enrolmentRequest = enrolmentRequest
        self.refreshSession = refreshSession
        self.spentRefreshToken = spentRefreshToken
    }
}

/// Whose password attempt, from where.
public struct PasswordAttemptKey: Sendable, Hashable {
    public var user: UserID
    public var client: String
    /// The hash of the sign-in code the attempt carries, if any.
    public var signInCode: TokenHash?

    public init(user: UserID, client: String, signInCode: TokenHash? = nil) {
        self.user = user
        self.client = client
        self.signInCode = signInCode
    }

    /// The counters the attempt is decided on: the address's, the (user, address) window, the run
    /// and the sign-in code's.
    public var subjects: [FailureSubject] {
        [.client(client), .password(user, client: client), .passwordRun(user)]
            + (signInCode.map { [.signInCode(user, client: client, code: $0)] } ?? [])
    }
}

/// A rotated-away refresh token: when it was spent, and its successor sealed under it
/// (``RefreshSuccessor``); both nil for a token spent before BioAuth remembered them.
public struct SpentRefreshToken: Sendable, Hashable {
    public var spentAt: Date?
    public var sealedSuccessor: Data?

    public init(spentAt: Date?, sealedSuccessor: Data?) {
        self.spentAt = spentAt
        self.sealedSuccessor = sealedSuccessor
    }
}

/// A user's cross-device sign-ins created after a moment, and a requester's address
/// (``RowLocks/crossDeviceRequestsOf``).
public struct CrossDeviceRequestsOf: Sendable, Hashable {
    public var userID: UserID
    public var since: Date
    public var client: String
    /// The requesting screen's remembered key (``CrossDevicePolicy/screenKey(_:)``), if it sent a token.
    public var screenKey: String?

    public init(_ userID: UserID, since: Date, client: String, screenKey: String? = nil) {
        self.userID = userID
        self.since = since
        self.client = client
        self.screenKey = screenKey
    }
}
