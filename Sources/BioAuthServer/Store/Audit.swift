import BioAuthCore
import Foundation

/// What an audit event records. A struct with static values (extensible like an error code); the
/// audit log stores its name.
public struct AuditKind: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    private init(_ name: String) { description = name }

    public static let userCreated = AuditKind("user.created")
    /// The built-in password was changed, with a device's approval (`PasswordChangeText`).
    public static let passwordChanged = AuditKind("password.changed")
    public static let passwordLoginSucceeded = AuditKind("password.login.succeeded")
    public static let passwordLoginFailed = AuditKind("password.login.failed")
    public static let loginSucceeded = AuditKind("login.succeeded")
    public static let loginFailed = AuditKind("login.failed")
    public static let deviceEnrolled = AuditKind("device.enrolled")
    public static let deviceReenrolled = AuditKind("device.reenrolled")
    /// A device's app attested a new App Attest key at a login or step-up, its old one gone with
    /// a reinstall (`docs/Attestation.md`, "Re-attestation").
    public static let deviceReattested = AuditKind("device.reattested")
    public static let deviceEnrollmentFailed = AuditKind("device.enrollment.failed")
    public static let deviceRenamed = AuditKind("device.renamed")
    public static let deviceRevoked = AuditKind("device.revoked")
    /// A password (or a device in its cool-down) asked to remove a device after the security
    /// delay: a recovery code went to the owner.
    public static let deviceRemovalRequested = AuditKind("device.removal.requested")
    /// The code was entered: the device is revoked after the delay unless a device cancels it.
    public static let deviceRemovalScheduled = AuditKind("device.removal.scheduled")
    public static let deviceRemovalCancelled = AuditKind("device.removal.cancelled")
    public static let stepUpApproved = AuditKind("stepup.approved")
    public static let stepUpFailed = AuditKind("stepup.failed")
    public static let approvalRedeemed = AuditKind("approval.redeemed")
    public static let approvalRejected = AuditKind("approval.rejected")
    public static let sessionRevoked = AuditKind("session.revoked")
    public static let sessionsRevoked = AuditKind("sessions.revoked")
    public static let sessionRejected = AuditKind("session.rejected")
    public static let rateLimited = AuditKind("rate.limited")
    public static let challengeRefused = AuditKind("challenge.refused")
    public static let lockout = AuditKind("lockout")
    public static let enrolmentGrantIssued = AuditKind("enrolment.grant.issued")
    public static let enrolmentRequested = AuditKind("enrolment.requested")
    public static let enrolmentApproved = AuditKind("enrolment.approved")
    public static let recoveryCodeSent = AuditKind("enrolment.recovery.sent")
    public static let recoveryCodeRejected = AuditKind("enrolment.recovery.rejected")
    /// A sign-in code was sent to the user for a password login from a new address (the row's).
    public static let signInCodeSent = AuditKind("login.code.sent")
    /// An enrolment request ended before it was used: its reason is the ``EnrolmentRequestEnding``.
    public static let enrolmentRequestEnded = AuditKind("enrolment.request.ended")
    /// A sign-in was started on another screen for the user and announced to the user's phones
    /// (an outbox event a deployment forwards as a push).
    public static let crossDeviceRequested = AuditKind("crossdevice.requested")
    /// The same, past the user's announcements (``CrossDevicePolicy/announcementsPerUser``):
    /// listed to the phones, not pushed.
    public static let crossDeviceRequestUnannounced = AuditKind("crossdevice.requested.quiet")
    /// A phone approved a sign-in on another screen (the row's device).
    public static let crossDeviceApproved = AuditKind("crossdevice.approved")
    /// A cross-device sign-in ended before a session: its reason is the ``CrossDeviceEnding``.
    public static let crossDeviceEnded = AuditKind("crossdevice.ended")
    /// The other screen collected the session a phone approved (the row's device approved it).
    public static let crossDeviceSignedIn = AuditKind("crossdevice.signed.in")
    public static let apiKeyCreated = AuditKind("apikey.created")
    public static let apiKeyRevoked = AuditKind("apikey.revoked")
    public static let apiKeyRejected = AuditKind("apikey.rejected")
    /// A backend API request refused after its key was verified (unknown user's device, bad
    /// input, an ended request): the reason is the error code and field, the row names the key.
    public static let backendRequestRefused = AuditKind("backend.refused")
    public static let primaryLoginSucceeded = AuditKind("primary.login.succeeded")
    public static let primaryLoginFailed = AuditKind("primary.login.failed")
    public static let tokenRefreshed = AuditKind("token.refreshed")
    public static let refreshTokenReused = AuditKind("token.refresh.reused")
    public static let refreshRejected = AuditKind("token.refresh.rejected")
    public static let signingKeyAdded = AuditKind("signingkey.added")
    /// A signing key was deleted: by an operator (`bioauth-server keys retire`) or after its publication window.
    public static let signingKeyRetired = AuditKind("signingkey.retired")

    /// The kinds that record a failure or refusal: merged when repeated (``AuditEvent/aggregates``).
    public static let failures: Set<AuditKind> = [
        passwordLoginFailed, loginFailed, deviceEnrollmentFailed, stepUpFailed, approvalRejected, sessionRejected, rateLimited,
        challengeRefused, lockout,
        recoveryCodeRejected, apiKeyRejected, refreshRejected, primaryLoginFailed, backendRequestRefused,
    ]

    /// A kind read from storage. A name this version does not know (written by a newer one) is
    /// kept as it is rather than refused: an audit row is a record, not a decision.
    package init(stored name: String) { description = name }
}

/// Why an audited event happened: a failure's ``FailureReason``, the limit that refused a
/// request, how an enrolment request ended, or why a change was made (the static values).
/// Extensible: a new reason is a new static value or initialiser, never free text.
public struct AuditReason: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    private init(_ name: String) { description = name }

    /// A failure, by its reason.
    public init(_ failure: FailureReason) { description = failure.description }
    /// A lockout or rate limit, by the counter that reached its limit (``FailureSubject/kind``).
    public init(limit subject: FailureSubject) { description = subject.kind }
    /// An enrolment request that ended before it was used.
    public init(_ ending: EnrolmentRequestEnding) { description = ending.rawValue }
    public init(_ ending: CrossDeviceEnding) { description = ending.rawValue }
    /// A re-enrolment, by the proof that allowed it.
    public init(_ proof: EnrolmentProof) { description = proof.rawValue }
    /// A backend request refused: its error code and, if any, the field (`invalid_request:userId`).
    public init(refusal error: ServerError) {
        description = [error.code.description, error.field].compactMap { $0 }.joined(separator: ":")
    }
    /// The key the event is about, by its id: a signing key added or retired, an API key
    /// created or revoked. An id, never key material.
    public static func key(_ id: String) -> AuditReason { AuditReason(id) }
    /// A reason read from storage, kept as written (by this version or a newer one).
    package init(stored name: String) { description = name }

    /// Every session of the user was revoked at once.
    public static let allSessions = AuditReason("all")
    /// Every device of the user was revoked at once (with every session).
    public static let allDevices = AuditReason("allDevices")
    /// An enrolment request was approved by another device of the user.
    public static let approvedByDevice = AuditReason("approval")
    /// An enrolment request was approved with a recovery code.
    public static let recoveryCode = AuditReason("recovery")
    /// A device removal whose security delay passed (``DeviceRemovalRecord``).
    public static let securityDelay = AuditReason("securityDelay")
    /// An enrolment request was approved by the app's backend after its own account recovery
    /// (the row names the API key).
    public static let approvedByBackend = AuditReason("backend")
    /// An enrolment grant ended with the enrolment it allowed.
    public static let enrolmentGrantUsed = AuditReason("enrolmentGrantUsed")
    /// A cross-device session (``SessionKind/crossDevice``) enrolled its one passkey and ended.
    public static let crossDeviceEnrolmentUsed = AuditReason("crossDeviceEnrolmentUsed")
    /// A refresh token presented again within the retry grace: the same successor was returned.
    public static let refreshRetried = AuditReason("retry")

    /// What a user may see of a reason in their own audit log (`GET /v1/audit`): the class of
    /// failure, not which check failed. "unknownDevice" versus "wrongUser" versus "revokedDevice"
    /// would tell whoever holds a session which device ids exist and whose they are; the full
    /// reason stays in the operator's audit log.
    public var userVisible: String {
        typealias F = FailureReason
        let reason = description
        return switch reason {
        case F.unknownDevice.description, F.revokedDevice.description, F.wrongUser.description, F.replacedKey.description,
            F.malformedSignature.description,
            F.badSignature.description:
            "verificationFailed"
        case F.unknownChallenge.description, F.expiredChallenge.description, F.wrongPurpose.description, F.wrongSession.description:
            "challengeRejected"
        case F.unknownUser.description, F.badPassword.description, F.primaryLoginRejected.description: "passwordRejected"
        case F.missingSession.description, F.unknownSession.description, F.expiredSession.description, F.revokedSession.description,
            F.revokedDeviceSession.description, F.unknownRefreshToken.description, F.refreshTokenReused.description:
            "sessionRejected"
        case F.approvalRejected.description, F.recoveryCodeRejected.description: "approvalRejected"
        case F.attestationMissing.description, F.assertionMissing.description,
            _ where reason.hasPrefix("attestation.") || reason.hasPrefix("assertion.") || reason.hasPrefix("reattestation."):
            "attestationRejected"
        case F.lockedOut.description, F.tooManyChallenges.description,
            _ where reason.hasPrefix(FailureSubject.failureCounterPrefix):
            F.lockedOut.description
        default: reason  // not a failure reason (e.g. "all" for sessions revoked everywhere)
        }
    }
}

/// A security event. Holds identifiers and reason codes only, never a secret.
public struct AuditEvent: Sendable, Hashable {
    public var at: Date
    public var kind: AuditKind
    public var userID: UserID?
    public var deviceID: DeviceID?
    public var reason: AuditReason?
    public var clientAddress: String?
    public var requestID: BioAuthRequestID?
    /// How many identical failures this row stands for (see ``aggregates``); `at` is the latest.
    public var count: Int
    /// The API key of the backend request that caused it; nil for the users' own requests.
    public var apiKeyID: ApiKeyID?

    public init(
        at: Date, kind: AuditKind, userID: UserID? = nil, deviceID: DeviceID? = nil, reason: AuditReason? = nil,
        clientAddress: String? = nil,
        requestID: BioAuthRequestID? = nil, count: Int = 1, apiKeyID: ApiKeyID? = nil
    ) {
        self.count = count
        self.apiKeyID = apiKeyID
        self.at = at
        self.kind = kind
        self.userID = userID
        self.deviceID = deviceID
        self.reason = reason
        self.clientAddress = clientAddress
        self.requestID = requestID
    }
}

extension AuditEvent {
    /// Failures are aggregated: one that repeats an earlier row's kind, user, device, reason and
    /// client within ``aggregationWindow`` increments that row's count instead of adding a row, so
    /// a flood of bad requests cannot grow the audit log without bound. Successes are never merged.
    public var aggregates: Bool {
        AuditKind.failures.contains(kind)
    }

    /// How far back an identical failure is merged into.
    public static let aggregationWindow: TimeInterval = 60
}

extension AuditEvent {
    /// The event for a wrong recovery code, made from the success event it would have been.
    public var rejectedRecovery: AuditEvent {
        var event = self
        event.kind = .recoveryCodeRejected
        return event
    }

    /// The event for the request ending, made from an event about it.
    public func ended(_ ending: EnrolmentRequestEnding) -> AuditEvent {
        var event = self
        event.kind = .enrolmentRequestEnded
        event.reason = AuditReason(ending)
        return event
    }

    /// The same event about another user and device (those of the row a decision found).
    public func about(user: UserID?, device: DeviceID?) -> AuditEvent {
        var event = self
        event.userID = user
        event.deviceID = device
        return event
    }
}
