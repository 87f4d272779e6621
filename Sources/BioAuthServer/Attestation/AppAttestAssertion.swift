import BioAuthAttestation
import BioAuthCore
import Foundation

/// What a login or step-up finish carries for the genuine app (`docs/Attestation.md`).
public enum AppAttestProof: Sendable, Hashable {
    /// An assertion of the device's attested App Attest key.
    case assertion(Data)
    /// A new App Attest key, attested over `AttestationBinding.registrationHash(_:publicKey:)` of
    /// this challenge's message and the device key's SPKI: the app was reinstalled and the key the
    /// server knows is gone. The device key's biometric signature in the same finish authorises it.
    case reattestation(keyID: Data, object: Data)

    /// The App Attest fields of a login or step-up finish, checked for shape: an assertion, or a new
    /// key id with its attestation object, not both. Nil when none is sent.
    public init?(assertion: String?, keyID: String?, attestation: String?) throws(ServerError) {
        switch (assertion, keyID, attestation) {
        case (nil, nil, nil): return nil
        case (let assertion?, nil, nil):
            self = .assertion(try Validate.base64URL(assertion, field: "appAttestAssertion", count: 1...Self.maximumAssertionSize))
        case (nil, let keyID?, let object?):
            let (keyID, object) = try PresentedAttestation.appAttestFields(keyID: keyID, object: object)
            self = .reattestation(keyID: keyID, object: object)
        case (.some, _, _):
            throw ServerError(.invalidRequest, field: "appAttestAssertion", detail: "an assertion or a new key's attestation, not both")
        case (nil, nil, .some): throw ServerError(.invalidRequest, field: "appAttestKeyId", detail: "required with appAttestation")
        case (nil, .some, nil): throw ServerError(.invalidRequest, field: "appAttestation", detail: "required with appAttestKeyId")
        }
    }

    /// The largest App Attest assertion taken, in bytes (real ones are about 200).
    public static let maximumAssertionSize = 1024
}

/// Decides what the App Attest assertion of a login or step-up proves, under the
/// ``AttestationPolicy``. Pure: the device row, the verified challenge's message and signature
/// are passed in (`AppAttestAssertionTests`).
///
/// Only a device whose enrolment App Attest proved has a key to verify against; for any other, an
/// assertion is ignored. The assertion's client data is ``AttestationBinding/assertion(_:signature:)``:
/// this challenge's message and the device key's signature over it.
package struct AppAttestAssertion: Sendable {
    /// What the check decides.
    package enum Verdict: Sendable, Hashable {
        /// Nothing to check: no attested app key, or an assertion neither sent nor required.
        case notApplicable
        /// A valid assertion: the device's attestation with the counter it advanced to, stored
        /// with what the assertion authorises (``WritePlan/assertion(_:device:)``).
        case accepted(DeviceAttestation)
        /// Failing this check; nil: missing where required.
        case rejected(AttestationError.Check?)
    }

    package var policy: AttestationPolicy

    package init(policy: AttestationPolicy) { self.policy = policy }

    /// `message` is the verified challenge's, built only when an assertion is to be verified (most logins have none).
    package func check(_ assertion: Data?, device: DeviceRecord, message: () -> SignedMessage?, signature: Data) -> Verdict {
        guard let verifier = policy.apple.verifier, let attestation = device.credential.attestation, attestation.format == .appleAppAttest
        else {
            return .notApplicable
        }
        guard let assertion else {
            return policy.assertions == .required ? .rejected(nil) : .notApplicable
        }
        guard let key = attestation.attestedAppKey, let message = message() else { return .rejected(.malformed) }
        do {
            let advanced = try verifier.verifyAssertion(
                assertion, clientData: AttestationBinding.assertion(message, signature: signature), key: key)
            return .accepted(attestation.advanced(to: advanced))
        } catch {
            return .rejected(error.check)
        }
    }
}

extension WritePlan {
    /// Adds an accepted assertion to the plan of what it authorises: the device's attestation is
    /// stored with the new counter, guarded so that a concurrent request with the same or a later
    /// counter, or a re-key in between, refuses this plan (``Guard/appAttestCounter(deviceID:keyID:below:)``).
    package mutating func assertion(_ attestation: DeviceAttestation, device: DeviceID) {
        guard let key = attestation.appAttestKey else { return }
        guards.insert(.appAttestCounter(deviceID: device, keyID: key.keyID, below: key.counter), at: 0)
        add(.storeAttestation(deviceID: device, attestation))
    }
}
