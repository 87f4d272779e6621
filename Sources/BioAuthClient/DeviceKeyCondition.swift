import BioAuth
import BioAuthCore
import Foundation

/// Whether this phone's device key can still sign for its registration, decided without a prompt.
enum DeviceKeyCondition: Sendable, Hashable {
    /// The registered key, not known to be invalidated.
    case usable
    /// A key is found but it can no longer sign for the registration: an enrollment change killed
    /// it (a failure after a match, or a changed domain state), or it is a replacement not yet registered.
    case dead
    /// No key under the tag.
    case missing
}

extension BioAuthClient {
    /// The registration, with a key that can still sign.
    ///
    /// - Throws: ``ClientError/Code/notEnrolled`` without a registration;
    ///   ``ClientError/Code/reenrolmentRequired`` when the key is missing or dead.
    func enrolled() throws(ClientError) -> Registration {
        guard let registration = try storage.registration() else { throw ClientError(.notEnrolled) }
        guard try keyCondition() == .usable else { throw ClientError(.reenrolmentRequired) }
        return registration
    }

    /// The key's condition. A domain state that differs from the one recorded at registration
    /// marks the key dead: a `.biometryCurrentSet` key dies with exactly that change
    /// (`SecAccessControl.h`); Apple changes the value otherwise only exceptionally, across a major
    /// OS update (`LAContext.h`), where re-enrolment costs the user one recovery but loses nothing.
    func keyCondition() throws(ClientError) -> DeviceKeyCondition {
        let key: DevicePublicKey
        do { key = try signer.publicKey() } catch  where error.code == .keyUnavailable { return .missing } catch {
            throw ClientError(device: error)
        }
        guard var record = try storage.keyRecord() else { return .usable }  // registered before keys were recorded
        if record.invalidated || record.registeredKey != key.spkiRepresentation { return .dead }
        if let enrolled = record.domainState, let current = platform.currentDomainState, enrolled != current {
            record.invalidated = true
            try storage.save(record)
            return .dead
        }
        return .usable
    }

    /// Records that the registered key failed after a successful match: it stays dead until re-enrolment.
    func keyFailedAfterMatch() {
        guard var record = try? storage.keyRecord(), let key = try? signer.publicKey(), record.registeredKey == key.spkiRepresentation
        else { return }
        record.invalidated = true
        try? storage.save(record)
    }

    /// Keeps the registration and what identifies its key; an enrolment in progress ends with it.
    func remember(_ registration: Registration, key: DevicePublicKey) throws(ClientError) {
        // Read before a prompt where the platform allows, else the one the enrolment's match saw.
        try storage.save(
            DeviceKeyRecord(
                registeredKey: key.spkiRepresentation, domainState: platform.currentDomainState ?? evaluatedDomainState, invalidated: false)
        )
        try storage.save(registration)
        try storage.forgetPending()
    }
}
