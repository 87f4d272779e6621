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

    public var apple: Rule<AppAttestVerifier>
    public var android: Rule<AndroidKeyAttestationVerifier>

    public init(apple: Rule<AppAttestVerifier> = .off, android: Rule<AndroidKeyAttestationVerifier> = .off) {
        self.apple = apple
        self.android = android
    }

    /// Whether an enrolment without attestation is accepted: only while no platform requires one.
    public var acceptsUnattested: Bool { !apple.isRequired && !android.isRequired }
}
