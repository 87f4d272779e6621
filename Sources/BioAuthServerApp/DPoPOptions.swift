import ArgumentParser
import BioAuthCore
import BioAuthServer
import Foundation

/// The server's `DPoPPolicy` from the command line. Proofs are always accepted; these make them
/// required, ask for the server's nonce, and name the origin a proof's `htu` must carry.
struct DPoPOptions: ParsableArguments {
    @Flag(
        name: .customLong("dpop-required"),
        help:
            "Every device enrolment and login, passkey sign-in and cross-device sign-in must carry a DPoP proof: tokens are bound to the device's second key or the browser's, never bearer (env BIOAUTH_DPOP_REQUIRED=1)."
    )
    var requiredFlag = false
    var required: Bool { requiredFlag || env("BIOAUTH_DPOP_REQUIRED") == "1" }

    @Flag(
        name: .customLong("dpop-nonces"),
        help:
            "Ask for the server's DPoP nonce (DPoP-Nonce, use_dpop_nonce) at registration, login and refresh; give every instance the same --dpop-nonce-key-file (env BIOAUTH_DPOP_NONCES=1)."
    )
    var noncesFlag = false
    var nonces: Bool { noncesFlag || env("BIOAUTH_DPOP_NONCES") == "1" }

    @Option(
        name: .customLong("dpop-nonce-key-file"),
        help:
            "A file holding the key (at least 32 bytes, base64) the DPoP nonces are made with, the same on every instance (env BIOAUTH_DPOP_NONCE_KEY holds the key itself). Default: random per process."
    )
    var nonceKeyFile: String?

    @Option(
        name: .customLong("public-origin"),
        help:
            "This server's public origin as clients call it (https://auth.example.com): a DPoP proof's htu must name it with the request's path (env BIOAUTH_PUBLIC_ORIGIN). Default: the request's Host, over https (http on loopback)."
    )
    var publicOriginOption: String?
    var publicOrigin: String? { publicOriginOption ?? env("BIOAUTH_PUBLIC_ORIGIN") }

    func validate() throws {
        _ = try nonceKey()
        if let publicOrigin {
            guard let normalised = DPoPProof.normalisedURL(publicOrigin), normalised == publicOrigin + "/" else {
                throw ValidationError("--public-origin: an origin (https://host[:port]) without a path: \(publicOrigin)")
            }
        }
    }

    func nonceKey() throws -> SecretBytes? {
        try secretKey(file: nonceKeyFile, orValue: env("BIOAUTH_DPOP_NONCE_KEY"), name: "the DPoP nonce key")
    }

    /// The policy these options describe.
    func policy() throws -> DPoPPolicy {
        var policy = DPoPPolicy(required: required, nonces: nonces, publicOrigin: publicOrigin)
        if let key = try nonceKey() { policy.nonceKey = key }
        return policy
    }
}
