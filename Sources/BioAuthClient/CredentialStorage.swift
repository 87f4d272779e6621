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
        do { return try registrations.readJSON(Registration.self, Self.registrationAccount) } catch { throw ClientError(device: error) }
    }

    func save(_ registration: Registration) throws(ClientError) {
        do { try registrations.writeJSON(registration, Self.registrationAccount) } catch { throw ClientError(device: error) }
    }

    func forgetRegistration() throws(ClientError) {
        do { try registrations.remove(Self.registrationAccount) } catch { throw ClientError(device: error) }
    }

    func session() throws(ClientError) -> Wire.Session? {
        do { return try sessions.readJSON(Wire.Session.self, Self.sessionAccount) } catch { throw ClientError(device: error) }
    }

    func save(_ session: Wire.Session) throws(ClientError) {
        do { try sessions.writeJSON(session, Self.sessionAccount) } catch { throw ClientError(device: error) }
    }

    func forgetSession() throws(ClientError) {
        do { try sessions.remove(Self.sessionAccount) } catch { throw ClientError(device: error) }
    }
}
