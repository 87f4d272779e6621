import BioAuthCore
import Foundation

/// A cross-device sign-in's id (``CrossDeviceRequestRecord``).
public typealias CrossDeviceRequestID = RecordID<CrossDeviceRequestRecord>

/// Why a cross-device sign-in ended.
public enum CrossDeviceEnding: String, Sendable, Hashable, Codable, CaseIterable {
    /// The browser collected its session.
    case collected
    /// A phone of the user refused it.
    case denied
    /// A phone's approval signed another number: whoever typed it did not see the screen that
    /// asked, so the request ends and the screen must start again.
    case wrongNumber
}

/// A sign-in started on another screen (a browser, a desktop app) for a username, waiting for one
/// of the user's enrolled phones: the screen shows a four-digit number, the phone lists the request
/// with where it comes from and signs a step-up over `CrossDeviceApprovalText` with the number
/// the user types; only then does the screen, polling with its token, get a session. The number,
/// the poll token and the approved text are stored as hashes only.
public struct CrossDeviceRequestRecord: Sendable, Hashable {
    public var id: CrossDeviceRequestID
    /// The username asked for; a request for a user that does not exist is stored alike and
    /// never approved, so the answer tells nobody which users exist.
    public var userID: UserID
    /// The client address that asked, as limits count it (``CrossDevicePolicy/maxPendingPerRequester``).
    public var requester: String
    /// What the screen is, in the server's words (`ScreenLabel`): never the header's text.
    public var screen: ScreenLabel
    /// The screen's remembered key when it sent a screen token (``CrossDevicePolicy/screenKey(_:)``):
    /// a screen a phone let in before counts as the user's, as a known address does. nil: none.
    public var screenKey: String?
    public var createdAt: Date
    public var expiresAt: Date
    /// SHA-256 of `CrossDeviceApprovalText.signed(_:number:)` with the screen's number: the
    /// operation an approval must have signed.
    public var approvalHash: TokenHash
    /// SHA-256 of the token the screen polls with.
    public var pollTokenHash: TokenHash
    /// Whether an outbox event announced it to the user's phones (``CrossDevicePolicy/announcementsPerUser``).
    public var announced: Bool
    public var approvedAt: Date?
    public var approvedByDevice: DeviceID?
    public var endedAt: Date?
    public var ending: CrossDeviceEnding?

    public init(
        id: CrossDeviceRequestID, userID: UserID, requester: String, screen: ScreenLabel, createdAt: Date, expiresAt: Date,
        approvalHash: TokenHash, pollTokenHash: TokenHash, announced: Bool, approvedAt: Date? = nil, approvedByDevice: DeviceID? = nil,
        endedAt: Date? = nil, ending: CrossDeviceEnding? = nil, screenKey: String? = nil
    ) {
        self.screenKey = screenKey
        self.id = id
        self.userID = userID
        self.requester = requester
        self.screen = screen
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.approvalHash = approvalHash
        self.pollTokenHash = pollTokenHash
        self.announced = announced
        self.approvedAt = approvedAt
        self.approvedByDevice = approvedByDevice
        self.endedAt = endedAt
        self.ending = ending
    }

    /// The text the phone shows and signs, without the number.
    public var text: String {
        CrossDeviceApprovalText.make(userID: userID.rawValue, screen: screen, requester: requester, at: createdAt)
    }

    /// Where a request stands at a moment.
    public enum Status: String, Sendable, Hashable {
        /// Waiting for a phone.
        case pending
        /// A phone approved it; the screen has not collected its session yet.
        case approved
        /// Ended (``CrossDeviceRequestRecord/ending``), or expired.
        case ended
    }

    public func status(at now: Date) -> Status {
        if endedAt != nil || now >= expiresAt { return .ended }
        return approvedAt == nil ? .pending : .approved
    }
}

/// Limits and lifetimes of cross-device sign-ins.
public struct CrossDevicePolicy: Sendable, Hashable {
    /// How long a request waits for a phone and then for the screen to collect its session.
    public var requestTTL: TimeInterval
    /// How often the screen is told to poll, in seconds.
    public var pollInterval: Int
    /// Pending requests one client address may hold for one user (429 beyond): a stranger's
    /// requests from their own addresses never refuse the owner's.
    public var maxPendingPerRequester: Int
    /// Requests from addresses where the user has not signed in that are announced (an outbox
    /// event a deployment forwards as a push) per ``announcementWindow``; later ones are stored
    /// and listed but not pushed. A request from an address where the user signed in before is
    /// always announced: a stranger's storm never silences the owner's own request.
    public var announcementsPerUser: Int
    public var announcementWindow: TimeInterval
    /// At most this many pending requests are listed to a phone: those from the user's known
    /// addresses first, then the newest.
    public var listedRequests: Int

    public init(
        requestTTL: TimeInterval = 180, pollInterval: Int = 3, maxPendingPerRequester: Int = 3, announcementsPerUser: Int = 5,
        announcementWindow: TimeInterval = 600, listedRequests: Int = 20
    ) {
        self.requestTTL = requestTTL
        self.pollInterval = pollInterval
        self.maxPendingPerRequester = maxPendingPerRequester
        self.announcementsPerUser = announcementsPerUser
        self.announcementWindow = announcementWindow
        self.listedRequests = listedRequests
    }

    /// Where a screen token is remembered: the `known_clients` entry of the screen a phone let in,
    /// `screen:` and the SHA-256 of the token in hex (never an address, so the password back-off
    /// never mistakes it for one).
    public static func screenKey(_ token: SecretBytes) -> String { "screen:" + TokenHash(of: token).digest.hexString }

    /// A request's number: `CrossDeviceApprovalText.numberLength` random digits, from the
    /// platform's cryptographic generator (SystemRandomNumberGenerator: getrandom, arc4random).
    static func randomNumber() -> String {
        String((0..<CrossDeviceApprovalText.numberLength).map { _ in Character(String(Int.random(in: 0...9))) })
    }
}

/// A request just made: the record, and what only the requesting screen sees.
public struct NewCrossDeviceRequest: Sendable, Hashable, CustomStringConvertible {
    public let record: CrossDeviceRequestRecord
    /// The number the screen shows (`CrossDeviceApprovalText.numberLength` digits).
    public let number: String
    /// The token the screen polls with (base64url of 32 random bytes).
    public let pollToken: String

    public var description: String { "NewCrossDeviceRequest(\(record.id), number: redacted, pollToken: redacted)" }
}

/// What a screen's poll found.
public enum CrossDeviceCollection: Sendable, Hashable {
    /// No phone has approved it yet.
    case pending(CrossDeviceRequestRecord)
    /// Approved: the session now opened (the request ends as ``CrossDeviceEnding/collected``), and
    /// the screen token the screen keeps (base64url of 32 bytes; remembered as ``CrossDevicePolicy/screenKey(_:)``).
    case session(SessionGrant, screenToken: String)
    /// Ended, or expired (nil).
    case ended(CrossDeviceEnding?)
}

/// What asking for a cross-device sign-in got.
package enum CrossDeviceAdmission: Sendable, Hashable {
    /// Stored (announced or not).
    case stored(CrossDeviceRequestRecord)
    /// The requester's pending requests for the user are at the cap until then.
    case limited(until: Date)
}

extension WritePlan {
    /// Stores `request` while its requester has fewer than `policy.maxPendingPerRequester` pending
    /// requests for the user among `rows` (read under a per-user lock). It is announced to a user
    /// with an active device (`announceable`) when it comes from an address where the user signed
    /// in before, or while fewer than ``CrossDevicePolicy/announcementsPerUser`` were announced in
    /// the window. Verdict: the stored record (whether it was announced), else when the
    /// requester's first pending request stops being pending.
    package static func requestCrossDevice(
        _ rows: LockedRows, _ request: CrossDeviceRequestRecord, announceable: Bool, policy: CrossDevicePolicy,
        audit: AuditEvent
    ) -> (verdict: CrossDeviceAdmission, plan: WritePlan) {
        let now = request.createdAt
        let mine = rows.crossDeviceRequests.filter { $0.requester == request.requester && $0.status(at: now) == .pending }
        guard mine.count < policy.maxPendingPerRequester else { return (.limited(until: mine.map(\.expiresAt).min() ?? now), WritePlan()) }
        let since = now.addingTimeInterval(-policy.announcementWindow)
        let announced = rows.crossDeviceRequests.filter { $0.announced && $0.createdAt > since }.count
        var stored = request
        stored.announced = announceable && (rows.crossDeviceRequesterKnown || announced < policy.announcementsPerUser)
        var plan = WritePlan()
        plan.add(.insertCrossDeviceRequest(stored))
        var event = audit
        if !stored.announced { event.kind = .crossDeviceRequestUnannounced }
        plan.audit(event)
        return (.stored(stored), plan)
    }

    /// The approval in `rows` for the request in `rows` (both read locked): a pending request of
    /// `userID`'s and an approval `userID` may redeem, signed by an active device. The approval's
    /// operation is the request's ``CrossDeviceRequestRecord/approvalHash``: it is redeemed and
    /// the request approved by its device (verdict true). Any other approval — another number —
    /// ends the request (``CrossDeviceEnding/wrongNumber``; verdict false) and redeems nothing.
    package static func approveCrossDevice(
        _ rows: LockedRows, userID: UserID, at now: Date, audit: AuditEvent, wrongNumber: AuditEvent
    ) -> (verdict: Bool?, plan: WritePlan) {
        guard var request = rows.crossDeviceRequest, request.userID == userID, request.status(at: now) == .pending else {
            return (nil, WritePlan())
        }
        var plan = WritePlan()
        guard let approval = rows.approval, rows.approvalSignerActive,
            approval.isRedeemable(for: request.approvalHash.digest, by: userID, at: now)
        else {
            request.endedAt = now
            request.ending = .wrongNumber
            plan.add(.updateCrossDeviceRequest(request))
            plan.audit(wrongNumber)
            return (false, plan)
        }
        request.approvedAt = now
        request.approvedByDevice = approval.deviceID
        plan.add(.redeemApproval(tokenHash: approval.tokenHash, at: now))
        plan.add(.updateCrossDeviceRequest(request))
        plan.audit(audit.about(user: userID, device: approval.deviceID))
        return (true, plan)
    }

    /// A phone of `userID`'s refuses the pending request in `rows`: it ends
    /// (``CrossDeviceEnding/denied``). Verdict false when it was not pending.
    package static func denyCrossDevice(_ rows: LockedRows, userID: UserID, at now: Date, audit: AuditEvent) -> (
        verdict: Bool, plan: WritePlan
    ) {
        guard var request = rows.crossDeviceRequest, request.userID == userID, request.status(at: now) == .pending else {
            return (false, WritePlan())
        }
        request.endedAt = now
        request.ending = .denied
        var plan = WritePlan()
        plan.add(.updateCrossDeviceRequest(request))
        plan.audit(audit)
        return (true, plan)
    }

    /// The screen collects the request in `rows` with its poll token's hash: once approved, the
    /// request ends (``CrossDeviceEnding/collected``) and the session `session` makes for it — of
    /// the approving device — is opened, provided that device is still active, and the requester's address becomes one
    /// where the user signed in. Verdict nil when the token does not match (nothing written).
    package static func collectCrossDevice(
        _ rows: LockedRows, pollTokenHash: TokenHash, session: (CrossDeviceRequestRecord) -> SessionGrant, screenToken: SecretBytes,
        at now: Date, audit: AuditEvent
    ) -> (verdict: CrossDeviceCollection?, plan: WritePlan) {
        guard var request = rows.crossDeviceRequest, constantTimeEquals(request.pollTokenHash.digest, pollTokenHash.digest) else {
            return (nil, WritePlan())
        }
        switch request.status(at: now) {
        case .pending: return (.pending(request), WritePlan())
        case .ended: return (.ended(request.ending), WritePlan())
        case .approved: break
        }
        guard let deviceID = request.approvedByDevice else { return (.ended(nil), WritePlan()) }
        let opened = session(request)
        request.endedAt = now
        request.ending = .collected
        var plan = WritePlan()
        plan.require(.activeDevice(id: deviceID, userID: request.userID))
        plan.add(.updateCrossDeviceRequest(request))
        plan.add(.insertSession(opened.session, touchingDevice: nil))
        plan.add(.rememberClient(userID: request.userID, client: request.requester, at: now))
        plan.add(.rememberClient(userID: request.userID, client: CrossDevicePolicy.screenKey(screenToken), at: now))
        plan.audit(audit.about(user: request.userID, device: deviceID))
        return (.session(opened, screenToken: Base64URL.encode(screenToken.data)), plan)
    }
}
