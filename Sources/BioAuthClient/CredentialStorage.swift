import BioAuth
import BioAuthCore
import Foundation

/// Where the client keeps what outlives the process, in the keychain, never synchronized:
/// the registration and what it knows of the device key (`AfterFirstUnlockThisDeviceOnly`: ids
/// and public values, no secret), the device session and an enrolment in progress
/// (`WhenUnlockedThisDeviceOnly`: they hold tokens). A read the platform refuses because the
/// device is locked is ``ClientError/Code/credentialsUnavailable`` — never "logged out". Every
/// write replaces in place: a failed write leaves the previous value.
struct CredentialStorage: Sendable {
    let registrations: PlainRecords
    let sessions: PlainRecords

    static let registrationAccount = "registration"
    static let sessionAccount = "session"
    static let keyAccount = "device-key"
    static let pendingAccount = "pending-enrolment"

    init(keychain: any KeychainService, service: String) {
        registrations = PlainRecords(keychain: keychain, service: service)
        sessions = PlainRecords(keychain: keychain, service: service, accessibility: .whenUnlockedThisDeviceOnly)
    }

    func registration() throws(ClientError) -> Registration? {
        try keychain { () throws(BioAuthError) in try registrations.readJSON(Registration.self, Self.registrationAccount) }
    }

    func save(_ registration: Registration) throws(ClientError) {
        try keychain { () throws(BioAuthError) in try registrations.writeJSON(registration, Self.registrationAccount) }
    }

    func forgetRegistration() throws(ClientError) {
        try keychain { () throws(BioAuthError) in try registrations.remove(Self.registrationAccount) }
    }

    func session() throws(ClientError) -> Wire.Session? {
        try keychain { () throws(BioAuthError) in try sessions.readJSON(Wire.Session.self, Self.sessionAccount) }
    }

    func save(_ session: Wire.Session) throws(ClientError) {
        try keychain { () throws(BioAuthError) in try sessions.writeJSON(session, Self.sessionAccount) }
    }

    func forgetSession() throws(ClientError) {
        try keychain { () throws(BioAuthError) in try sessions.remove(Self.sessionAccount) }
    }

    func keyRecord() throws(ClientError) -> DeviceKeyRecord? {
        try keychain { () throws(BioAuthError) in try registrations.readJSON(DeviceKeyRecord.self, Self.keyAccount) }
    }

    func save(_ record: DeviceKeyRecord) throws(ClientError) {
        try keychain { () throws(BioAuthError) in try registrations.writeJSON(record, Self.keyAccount) }
    }

    func forgetKeyRecord() throws(ClientError) {
        try keychain { () throws(BioAuthError) in try registrations.remove(Self.keyAccount) }
    }

    func pending() throws(ClientError) -> PendingEnrolmentRecord? {
        try keychain { () throws(BioAuthError) in try sessions.readJSON(PendingEnrolmentRecord.self, Self.pendingAccount) }
    }

    func save(_ pending: PendingEnrolmentRecord) throws(ClientError) {
        try keychain { () throws(BioAuthError) in try sessions.writeJSON(pending, Self.pendingAccount) }
    }

    func forgetPending() throws(ClientError) {
        try keychain { () throws(BioAuthError) in try sessions.remove(Self.pendingAccount) }
    }

    /// A keychain call, its failure said in the client's terms (a locked device: `credentialsUnavailable`).
    private func keychain<T>(_ body: () throws(BioAuthError) -> T) throws(ClientError) -> T {
        do { return try body() } catch { throw ClientError(device: error) }
    }
}

/// What the client knows of this phone's device key beyond the Secure Enclave's word, which on a
/// device still finds a key that an enrollment change killed.
struct DeviceKeyRecord: Codable, Sendable, Hashable {
    /// The SPKI of the key the server holds for this device.
    var registeredKey: Data
    /// The biometric domain state when that key was registered; nil where the OS gave none.
    var domainState: Data?
    /// The key failed after a successful match, or the enrolled biometry changed since it was
    /// registered: it can no longer sign, and only re-enrolment replaces it.
    var invalidated: Bool
}

/// An enrolment this phone started and has not completed or abandoned: what a relaunch needs to
/// resume it. Holds the primary session (the request is bound to the session that made it); its
/// token is a ``BearerToken``, so a description or `dump()` of the record shows none of it.
struct PendingEnrolmentRecord: Codable, Sendable, Hashable {
    /// The SPKI of the key made for the request, under the client's key tag.
    var key: Data
    var primary: PrimarySession
    var deviceName: String
    /// The device whose key the request replaces; nil for a new device.
    var replacing: String?
    /// The server's request, once it answered.
    var request: PendingEnrolment?

    init(key: Data, primary: PrimarySession, deviceName: String, replacing: String?, request: PendingEnrolment? = nil) {
        self.key = key
        self.primary = primary
        self.deviceName = deviceName
        self.replacing = replacing
        self.request = request
    }

    private enum CodingKeys: String, CodingKey { case key, userID, primaryToken, primaryExpiresAt, deviceName, replacing, request }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(Data.self, forKey: .key)
        primary = PrimarySession(
            userID: try container.decode(String.self, forKey: .userID),
            token: BearerToken(try container.decode(String.self, forKey: .primaryToken)),
            expiresAt: try container.decode(Date.self, forKey: .primaryExpiresAt))
        deviceName = try container.decode(String.self, forKey: .deviceName)
        replacing = try container.decodeIfPresent(String.self, forKey: .replacing)
        request = try container.decodeIfPresent(PendingEnrolment.self, forKey: .request)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(primary.userID, forKey: .userID)
        try container.encode(primary.token.value, forKey: .primaryToken)
        try container.encode(primary.expiresAt, forKey: .primaryExpiresAt)
        try container.encode(deviceName, forKey: .deviceName)
        try container.encodeIfPresent(replacing, forKey: .replacing)
        try container.encodeIfPresent(request, forKey: .request)
    }
}
