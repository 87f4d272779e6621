import BioAuthCore
import Foundation

/// A bearer credential (session token, approval). Its description, debug description and
/// `dump()` show nothing of it.
public struct BearerToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The token as sent in `Authorization: Bearer …`. Handle it as carefully as a password.
    public let value: String
    /// Bound to this device's DPoP key (RFC 9449): sent as `Authorization: DPoP …` with a proof.
    public let isDPoPBound: Bool
    public init(_ value: String, dpopBound: Bool = false) {
        self.value = value
        isDPoPBound = dpopBound
    }
    public var description: String { "BearerToken(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// A primary-login session (password, or a grant from the app's backend): the only kind that
/// may enrol a device. Short-lived; kept in memory, and in the keychain (`WhenUnlockedThisDeviceOnly`)
/// only while an enrolment it started is in progress, so that a relaunch can resume it.
public struct PrimarySession: Sendable, Hashable {
    public let userID: String
    public let token: BearerToken
    public let expiresAt: Date

    public init(userID: String, token: BearerToken, expiresAt: Date) {
        self.userID = userID
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// A session opened by a biometric login on this device.
public struct DeviceSession: Sendable, Hashable {
    public let userID: String
    public let deviceID: String
    public let sessionID: String
    public let token: BearerToken
    public let expiresAt: Date

    /// The session a device login answered; nil for one without a device (a primary session).
    init?(_ session: Wire.Session) {
        guard let deviceID = session.deviceId else { return nil }
        self.init(
            userID: session.userId, deviceID: deviceID, sessionID: session.sessionId,
            token: BearerToken(session.token, dpopBound: session.tokenType == "DPoP"),
            expiresAt: Date(seconds: session.expiresAt))
    }

    init(userID: String, deviceID: String, sessionID: String, token: BearerToken, expiresAt: Date) {
        self.userID = userID
        self.deviceID = deviceID
        self.sessionID = sessionID
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// An access token for the app's other services: an ES256 JWT (`typ` `at+jwt`) with `sub` (the
/// user), `device_id`, `sid`, `amr`, valid until `expiresAt`.
public struct AccessToken: Sendable, Hashable {
    public let token: BearerToken
    public let expiresAt: Date
}

/// A one-time approval of one operation, for the app's backend to redeem before it acts.
public struct Approval: Sendable, Hashable {
    public let operation: String
    public let token: BearerToken
    public let expiresAt: Date

    /// The body the app's backend posts to `/v1/backend/approvals/redeem`: the approval, the
    /// exact operation text (UTF-8, base64url) and the user the backend's own session names.
    public func redemption(userID: String) -> Wire.Redemption {
        Wire.Redemption(approval: token.value, operation: Base64URL.encode(Data(operation.utf8)), userId: userID)
    }
}

/// This phone's registration with the server.
public struct Registration: Sendable, Hashable, Codable {
    public let userID: String
    public let deviceID: String
    public let deviceName: String
    /// The App Attest key the server recorded for this device at enrolment, whose assertions go
    /// with each login and step-up; nil when the server recorded none.
    let appAttestKeyID: Data?

    init(userID: String, deviceID: String, deviceName: String, appAttestKeyID: Data? = nil) {
        self.userID = userID
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.appAttestKeyID = appAttestKeyID
    }
}
