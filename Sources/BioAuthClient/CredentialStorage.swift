import BioAuth
import BioAuthCore
import Foundation

/// Where the client keeps what outlives the process, in the keychain, never synchronized:
/// the registration (`AfterFirstUnlockThisDeviceOnly`: ids, no secret) and the device session
/// (`WhenUnlockedThisDeviceOnly`: its token). A read the platform refuses because the device is
/// locked is ``ClientError/Code/credentialsUnavailable`` — never "logged out".
struct CredentialStorage: Sendable {
    let registrations: PlainRecords
    let sessions: PlainRecords

    static let registrationAccount = "registration"
    static let sessionAccount = "session"

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

    /// A keychain call, its failure said in the client's terms (a locked device: `credentialsUnavailable`).
    private func keychain<T>(_ body: () throws(BioAuthError) -> T) throws(ClientError) -> T {
        do { return try body() } catch { throw ClientError(device: error) }
    }
}
