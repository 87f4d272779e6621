import ArgumentParser
import BioAuthAttestation
import BioAuthCore
import BioAuthServer
import BioAuthWebhooks
import Foundation
import X509

/// The server's `AttestationPolicy` from the command line: naming an app turns its platform's
/// attestation on, `required` unless told otherwise.
struct AttestationOptions: ParsableArguments {
    @Option(
        name: .customLong("apple-app-id"),
        help:
            "An iOS app allowed to enrol, TEAMID.bundle.id; repeat for several (env BIOAUTH_APPLE_APP_IDS, comma-separated). Turns App Attest on."
    )
    var appleAppIDOptions: [String] = []
    var appleAppIDs: [String] { appleAppIDOptions.isEmpty ? envList("BIOAUTH_APPLE_APP_IDS") : appleAppIDOptions }

    @Option(
        name: .customLong("apple-attestation"),
        help:
            "required (default with --apple-app-id), preferred (verify when sent: the Simulator and macOS have no App Attest) or off (env BIOAUTH_APPLE_ATTESTATION)."
    )
    var appleRuleOption: String?
    var appleRule: String? { appleRuleOption ?? env("BIOAUTH_APPLE_ATTESTATION") }

    @Flag(
        name: .customLong("app-attest-development"),
        help: "Also accept App Attest keys of development builds (env BIOAUTH_APP_ATTEST_DEVELOPMENT=1).")
    var appAttestDevelopmentFlag = false
    var appAttestDevelopment: Bool { appAttestDevelopmentFlag || env("BIOAUTH_APP_ATTEST_DEVELOPMENT") == "1" }

    @Option(
        name: .customLong("insecure-app-attest-root"),
        help:
            "Trust this PEM root instead of Apple's App Attestation Root (test suites only: an emulator's CA; anyone holding its key attests anything)."
    )
    var appAttestRootFile: String?

    @Option(
        name: .customLong("app-attest-assertions"),
        help:
            "when-sent (default: an assertion sent with a login or step-up is verified) or required (every login and step-up of an App Attest device carries one) (env BIOAUTH_APP_ATTEST_ASSERTIONS)."
    )
    var assertionsOption: String?
    var assertions: String? { assertionsOption ?? env("BIOAUTH_APP_ATTEST_ASSERTIONS") }

    @Option(
        name: .customLong("android-package"),
        help:
            "An Android package allowed to enrol; repeat for several (env BIOAUTH_ANDROID_PACKAGES, comma-separated). Turns Android Key Attestation on."
    )
    var androidPackageOptions: [String] = []
    var androidPackages: [String] { androidPackageOptions.isEmpty ? envList("BIOAUTH_ANDROID_PACKAGES") : androidPackageOptions }

    @Option(
        name: .customLong("android-signing-digest"),
        help:
            "SHA-256 of a signing certificate the Android app may carry, hex; repeat for several (env BIOAUTH_ANDROID_SIGNING_DIGESTS, comma-separated)."
    )
    var androidDigestOptions: [String] = []
    var androidDigests: [String] { androidDigestOptions.isEmpty ? envList("BIOAUTH_ANDROID_SIGNING_DIGESTS") : androidDigestOptions }

    @Option(
        name: .customLong("insecure-android-attestation-root"),
        help:
            "Trust the PEM roots in this file instead of Google's hardware attestation roots (test suites only: a test CA's chains; anyone holding its key attests anything)."
    )
    var androidRootFile: String?

    @Option(
        name: .customLong("android-attestation-status"),
        help:
            "Where the attestation status list (revoked attestation keys) comes from: an https URL, a file kept by `bioauth attestation status update`, or off (default Google's list; env BIOAUTH_ANDROID_ATTESTATION_STATUS)."
    )
    var androidStatusOption: String?
    var androidStatus: String {
        androidStatusOption ?? env("BIOAUTH_ANDROID_ATTESTATION_STATUS") ?? AttestationStatusList.googleURL.absoluteString
    }

    @Option(
        name: .customLong("android-attestation-status-max-age"),
        help:
            "Seconds a status list stays good; older, Android enrolments are refused with 503 (default 604800, 7 days; env BIOAUTH_ANDROID_ATTESTATION_STATUS_MAX_AGE)."
    )
    var androidStatusMaxAgeOption: Int?
    var androidStatusMaxAge: Int? { androidStatusMaxAgeOption ?? env("BIOAUTH_ANDROID_ATTESTATION_STATUS_MAX_AGE").flatMap { Int($0) } }

    @Option(
        name: .customLong("android-attestation"),
        help: "required (default with --android-package), preferred or off (env BIOAUTH_ANDROID_ATTESTATION).")
    var androidRuleOption: String?
    var androidRule: String? { androidRuleOption ?? env("BIOAUTH_ANDROID_ATTESTATION") }

    func validate() throws { _ = try policy() }

    /// The policy these options describe.
    func policy() throws -> AttestationPolicy {
        var policy = AttestationPolicy()
        var appIDs: Set<AppAttest.AppID> = []
        for id in appleAppIDs {
            do { appIDs.insert(try AppAttest.AppID(id)) } catch { throw ValidationError("--apple-app-id: \(id) is not TEAMID.bundle.id") }
        }
        if !appIDs.isEmpty {
            let roots =
                try appAttestRootFile.map { try Self.roots($0, option: "--insecure-app-attest-root") } ?? [
                    TrustAnchors.appleAppAttestationRoot
                ]
            let verifier = AppAttestVerifier(
                appIDs: appIDs, environments: appAttestDevelopment ? [.production, .development] : [.production], roots: roots)
            policy.apple = try Self.rule(appleRule, verifier, option: "--apple-attestation")
        } else if appleRule.map({ $0 != "off" }) ?? false {
            throw ValidationError("--apple-attestation needs --apple-app-id")
        }
        switch assertions ?? "when-sent" {
        case "when-sent": policy.assertions = .verifiedWhenSent
        case "required":
            guard policy.apple.verifier != nil else { throw ValidationError("--app-attest-assertions required needs --apple-app-id") }
            policy.assertions = .required
        default: throw ValidationError("--app-attest-assertions: when-sent or required")
        }
        if !androidPackages.isEmpty {
            var digests: Set<Data> = []
            for hex in androidDigests {
                guard let digest = Data(hexString: hex.replacingOccurrences(of: ":", with: "")), digest.count == 32 else {
                    throw ValidationError("--android-signing-digest: \(hex) is not 32 bytes of hex")
                }
                digests.insert(digest)
            }
            guard !digests.isEmpty else {
                throw ValidationError("--android-package needs --android-signing-digest: a package name alone is no proof of the app")
            }
            let verifier = AndroidKeyAttestationVerifier(
                requirements: AndroidKeyRequirements(packageNames: Set(androidPackages), signingCertificateDigests: digests),
                roots: try androidRootFile.map { try Self.roots($0, option: "--insecure-android-attestation-root") }
                    ?? TrustAnchors.googleHardwareAttestationRoots,
                revocation: try revocation())
            policy.android = try Self.rule(androidRule, verifier, option: "--android-attestation")
        } else if androidRule.map({ $0 != "off" }) ?? false {
            throw ValidationError("--android-attestation needs --android-package")
        }
        return policy
    }

    /// The status list the Android verifier checks: read from its source by the server's refresher.
    private func revocation() throws -> AndroidKeyAttestationVerifier.Revocation {
        guard androidStatus != "off" else { return .unchecked }
        let maximumAge = androidStatusMaxAge ?? Int(AttestationStatus.defaultMaximumAge)
        guard maximumAge >= 3600 else { throw ValidationError("--android-attestation-status-max-age: at least 3600 seconds") }
        do {
            return .checked(
                AttestationStatus(
                    source: try AttestationStatusSource(androidStatus), maximumAge: TimeInterval(maximumAge), fetch: attestationStatusFetch)
            )
        } catch {
            throw ValidationError("--android-attestation-status: \(error.reason)")
        }
    }

    /// The options that replace a platform's pinned roots with a test CA's: what the server warns of at start.
    var insecureRoots: [String] {
        [appAttestRootFile.map { _ in "--insecure-app-attest-root" }, androidRootFile.map { _ in "--insecure-android-attestation-root" }]
            .compactMap { $0 }
    }

    private static func roots(_ file: String, option: String) throws -> [Certificate] {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8), let parsed = try? TrustAnchors.certificates(pem: text),
            !parsed.isEmpty
        else {
            throw ValidationError("\(option): no PEM certificate in \(file)")
        }
        return parsed
    }

    private static func rule<Verifier>(_ name: String?, _ verifier: Verifier, option: String) throws -> AttestationPolicy.Rule<Verifier> {
        switch name ?? "required" {
        case "required": .required(verifier)
        case "preferred": .preferred(verifier)
        case "off": .off
        default: throw ValidationError("\(option): required, preferred or off")
        }
    }
}
