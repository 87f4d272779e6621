import ArgumentParser
import BioAuthAttestation
import BioAuthServer
import Foundation

/// The server's `PasskeyPolicy` from the command line: naming the relying party turns passkeys on.
struct PasskeyOptions: ParsableArguments {
    @Option(
        name: .customLong("passkey-rp-id"),
        help:
            "The WebAuthn RP ID (a registrable domain, or localhost) passkeys are created for; turns the passkey endpoints on (env BIOAUTH_PASSKEY_RP_ID)."
    )
    var relyingPartyIDOption: String?
    var relyingPartyID: String? { relyingPartyIDOption ?? env("BIOAUTH_PASSKEY_RP_ID") }

    @Option(
        name: .customLong("passkey-origin"),
        help:
            "An origin a passkey ceremony may come from, exactly as the browser writes it (https://example.com, http://localhost:8080, android:apk-key-hash:…); repeat for several (env BIOAUTH_PASSKEY_ORIGINS, comma-separated)."
    )
    var originOptions: [String] = []
    var origins: [String] { originOptions.isEmpty ? envList("BIOAUTH_PASSKEY_ORIGINS") : originOptions }

    @Option(name: .customLong("passkey-rp-name"), help: "The name a browser shows while creating a passkey (env BIOAUTH_PASSKEY_RP_NAME).")
    var relyingPartyNameOption: String?
    var relyingPartyName: String { relyingPartyNameOption ?? env("BIOAUTH_PASSKEY_RP_NAME") ?? relyingPartyID ?? "" }

    @Flag(
        name: .customLong("passkeys-device-bound-only"),
        help:
            "Refuse synced passkeys (backup-eligible, BE = 1): only device-bound ones register and sign in (env BIOAUTH_PASSKEYS_DEVICE_BOUND_ONLY=1)."
    )
    var deviceBoundOnlyFlag = false
    var deviceBoundOnly: Bool { deviceBoundOnlyFlag || env("BIOAUTH_PASSKEYS_DEVICE_BOUND_ONLY") == "1" }

    @Flag(
        name: .customLong("sign-in-page"),
        help: "Serve the sign-in page at /signin/: passkey sign-in and creation, plain HTML (env BIOAUTH_SIGN_IN_PAGE=1).")
    var signInPageFlag = false
    var signInPage: Bool { signInPageFlag || env("BIOAUTH_SIGN_IN_PAGE") == "1" }

    @Flag(
        name: .customLong("cross-device-sign-in"),
        help:
            "Let a screen sign in when an enrolled phone approves it with the number the screen shows (env BIOAUTH_CROSS_DEVICE_SIGN_IN=1)."
    )
    var crossDeviceFlag = false
    var crossDevice: Bool { crossDeviceFlag || env("BIOAUTH_CROSS_DEVICE_SIGN_IN") == "1" }

    func validate() throws {
        guard let relyingPartyID else {
            if !origins.isEmpty || deviceBoundOnly { throw ValidationError("--passkey-origin needs --passkey-rp-id") }
            return
        }
        guard !origins.isEmpty else { throw ValidationError("--passkey-rp-id needs at least one --passkey-origin") }
        for origin in origins { try Self.check(origin, relyingPartyID: relyingPartyID) }
    }

    /// An origin the RP ID may serve (WebAuthn §5.1.4.1 "RP ID"): an HTTPS origin whose host is the
    /// RP ID or under it, `http://localhost` (a secure context), or an Android app's origin.
    static func check(_ origin: String, relyingPartyID: String) throws {
        if origin.hasPrefix("android:apk-key-hash:"), origin.count > "android:apk-key-hash:".count { return }
        guard let url = URL(string: origin), let scheme = url.scheme, let host = url.host, url.path.isEmpty, url.query == nil,
            origin == "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
        else { throw ValidationError("--passkey-origin: not an origin (scheme://host[:port]): \(origin)") }
        guard scheme == "https" || (scheme == "http" && host == "localhost") else {
            throw ValidationError("--passkey-origin: an origin must be https (or http://localhost): \(origin)")
        }
        guard host == relyingPartyID || host.hasSuffix("." + relyingPartyID) else {
            throw ValidationError("--passkey-origin: \(host) is not \(relyingPartyID) or under it")
        }
    }

    /// The policy; nil when passkeys are off.
    func policy() -> PasskeyPolicy? {
        guard let relyingPartyID else { return nil }
        return PasskeyPolicy(
            relyingParty: WebAuthnRelyingParty(id: relyingPartyID, origins: Set(origins), allowsSyncedCredentials: !deviceBoundOnly),
            relyingPartyName: relyingPartyName)
    }
}
