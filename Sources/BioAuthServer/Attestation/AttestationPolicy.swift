import BioAuthAttestation
import Foundation

/// Which attestation enrolment asks for, per platform (`docs/Attestation.md`).
///
/// A device that attests nothing cannot prove its platform either, so an enrolment without an
/// attestation is accepted only while no platform's rule is ``Rule/required(_:)``
/// (``acceptsUnattested``). A deployment names its apps to turn attestation on; until it does,
/// both rules are ``Rule/off``, every device enrols unattested, and its access tokens say so
/// (`amr` `pop`, not `hwk`).
public struct AttestationPolicy: Sendable, Hashable {
    /// What one platform's attestation must be.
    public enum Rule<Verifier: Sendable & Hashable>: Sendable, Hashable {
        /// Enrolment needs a valid attestation (of this platform or another that verifies).
        case required(Verifier)
        /// An attestation the device sends is verified — one that fails refuses the enrolment —
        /// and one it does not send is not asked for: the device is recorded as unattested. The
        /// escape for the Simulator and macOS builds without App Attest.
        case preferred(Verifier)
        /// This platform's attestations are neither verified nor recorded: an explicit, weaker
        /// choice (`docs/ThreatModel.md`).
        case off

        /// The verifier, unless the rule is off.
        public var verifier: Verifier? {
            switch self {
            case .required(let verifier), .preferred(let verifier): verifier
            case .off: nil
            }
        }

        public var isRequired: Bool {
            if case .required = self { true } else { false }
        }
    }

    /// Whether a device that App Attest proved at enrolment must send an assertion with each
    /// login and step-up (`docs/Attestation.md`, "Assertions").
    public enum Assertions: Sendable, Hashable {
        /// An assertion sent is verified — one that fails refuses the login or step-up — and one
        /// not sent is not asked for.
        case verifiedWhenSent
        /// Every login and step-up of such a device carries a valid assertion: the genuine app, not
        /// just the device key, is behind each one. An app reinstalled over its keychain has lost
        /// its App Attest key, so that device must enrol again.
        case required
    }

    public var apple: Rule<AppAttestVerifier>
    public var android: Rule<AndroidKeyAttestationVerifier>
    /// Assertions at login and step-up; they are verified only while ``apple`` is not off.
    public var assertions: Assertions

    public init(
        apple: Rule<AppAttestVerifier> = .off, android: Rule<AndroidKeyAttestationVerifier> = .off,
        assertions: Assertions = .verifiedWhenSent
    ) {
        self.apple = apple
        self.android = android
        self.assertions = assertions
    }

    /// How long an Android attestation challenge may wait for its registration finish (ten
    /// minutes): the key is made, its registration begun, signed and finished within it.
    public static let androidChallengeLifetime: TimeInterval = 600

    /// The attestation status lists the verifiers check, for a refresher to keep current.
    public var statusLists: [AttestationStatus] {
        guard case .checked(let status)? = android.verifier?.revocation else { return [] }
        return [status]
    }

    /// Whether an enrolment without attestation is accepted: only while no platform requires one.
    public var acceptsUnattested: Bool { !apple.isRequired && !android.isRequired }
}
