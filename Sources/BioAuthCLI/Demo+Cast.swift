import BioAuth
import BioAuthAttestation
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthTestServer
import Crypto
import Foundation
import Logging
import Synchronization

/// Who and what the demo plays with: alice, her secrets, the operation she approves, the demo
/// app and the server it runs against.
extension Demo {
    static let user = "alice"
    static let password = "correct horse battery staple"
    static let newPassword = "a new horse for a new battery"
    static let appPasscode = "246810"
    static let devicePasscode = "123456"
    static let operation = "transfer 100.00 EUR to bob"
    /// The web app's origin, where the laptop's browser registers and uses its passkey.
    static let webOrigin = "http://localhost:8080"
    /// The demo app's App Attest identity; the server requires App Attest for it.
    static let app = try! AppAttest.AppID("DEMOTEAM01.dev.bioauth.demo")

    /// The demo server: App Attest required for the demo app, trusting the emulator's test root,
    /// "approve on my phone" on (`--cross-device-sign-in`), and passkeys for the web app's origin
    /// (`--passkey-rp-id`, `--passkey-origin`).
    static func configureServer(_ configuration: inout ServerConfiguration) {
        configuration.attestation.apple = .required(
            AppAttestVerifier(appIDs: [app], environments: [.development], roots: [EmulatedAppAttest.testRoot]))
        configuration.crossDevice = CrossDevicePolicy()
        configuration.passkeys = PasskeyPolicy(
            relyingParty: WebAuthnRelyingParty(id: "localhost", origins: [webOrigin]), relyingPartyName: "BioAuth demo")
    }
}
