import BioAuthAttestation
import BioAuthSQL
import BioAuthServer
import Foundation
import Testing

/// A device's credential is one of its kinds, each decided by the rules that tell them apart,
/// and a stored row holds at most one of them.
struct DeviceCredentialTests {
    static let attestation = DeviceAttestation(format: .androidKey, securityLevel: .strongBox, appID: "app", verifiedAt: Date())

    static func passkey(synced: Bool) -> PasskeyCredential {
        PasskeyCredential(
            credentialID: Data([1]), publicKey: Data([2]), signCount: 0, backupEligible: synced, backedUp: synced, format: "none",
            attestation: .none, aaguid: Data(count: 16))
    }

    @Test func eachCredentialHasItsKind() {
        let kinds: [(DeviceCredential, DeviceCredential.Kind, signs: Bool)] = [
            (.appKey(attestation: Self.attestation), .attestedAppKey, true), (.appKey(attestation: nil), .appKey, true),
            (.passkey(Self.passkey(synced: false)), .deviceBoundPasskey, false),
            (.passkey(Self.passkey(synced: true)), .syncedPasskey, false),
        ]
        for (credential, kind, signs) in kinds {
            #expect(credential.kind == kind && credential.signsBioAuthMessages == signs, "\(kind)")
        }
        #expect(Set(kinds.map(\.1)) == Set(DeviceCredential.Kind.allCases))
    }

    @Test func aRowWithAnAttestationAndAPasskeyIsCorrupt() throws {
        #expect(try DeviceCredential(attestation: nil, passkey: nil) == .appKey(attestation: nil))
        #expect(try DeviceCredential(attestation: Self.attestation, passkey: nil) == .appKey(attestation: Self.attestation))
        #expect(try DeviceCredential(attestation: nil, passkey: Self.passkey(synced: true)) == .passkey(Self.passkey(synced: true)))
        let corrupt = #expect(throws: StoreError.self) {
            try DeviceCredential(attestation: Self.attestation, passkey: Self.passkey(synced: false))
        }
        #expect(corrupt?.code == .corruptRow)
    }
}
