import BioAuth
import BioAuthCore
import Foundation

/// An enrolment waiting for an approval from another of the user's devices, or a recovery code.
public struct PendingEnrolment: Sendable, Hashable, Codable {
    public let id: String
    public let userID: String
    /// The id the device will have (this phone's own for a new key).
    public let deviceID: String
    public let deviceName: String
    public let replacing: Bool
    /// What the approving phone shows; tell the user to look for it there.
    public let approvalText: String
    /// Show this on this phone while it waits: the user types it on the approving phone
    /// (``BioAuthClient/approveEnrolment(_:bindingCode:)``). nil for a request made by an older
    /// version, which only a recovery code can approve.
    public let bindingCode: String?
    public let expiresAt: Date
    /// Whether the request was approved when this value was read.
    public let isApproved: Bool
    /// Why the request had ended when this value was read; nil while it can still be used. An
    /// ended request can do nothing more: make a new one.
    public let ending: Ending?

    /// Why an enrolment request ended.
    public enum Ending: String, Sendable, Hashable, Codable {
        /// Five wrong recovery codes.
        case wrongCodes
        /// The owner cancelled it from an enrolled device.
        case cancelled
        /// A reason this version does not know.
        case other
    }
}

/// An enrolment this phone started, as a relaunched app finds it (``BioAuthClient/enrolmentInProgress()``).
public struct EnrolmentInProgress: Sendable, Hashable {
    /// The server's request as last seen; nil when the app stopped before the server answered:
    /// call ``BioAuthClient/requestEnrolment(_:deviceName:)`` again (same key).
    public let request: PendingEnrolment?
    /// The primary session that made the request (the server binds the request to it); nil once
    /// it expired: sign in again and call ``BioAuthClient/requestEnrolment(_:deviceName:)``, which
    /// resumes with the same key as a new request.
    public let primary: PrimarySession?
    public let deviceName: String
    /// Whether it re-keys this phone's device (after an enrollment change).
    public let replacing: Bool
}

/// An enrolment request shown on a phone that may approve it: the text is built here from the
/// key the server sent, never taken from the server.
public struct EnrolmentRequestToApprove: Sendable, Hashable {
    public let id: String
    public let deviceName: String
    /// The first 8 bytes of SHA-256 of the new key, in hex.
    public let fingerprint: String
    public let replacing: Bool
    /// `Add device ‹name›, key ‹fingerprint›` (or the replace-key text): shown and signed.
    public let approvalText: String
    public let expiresAt: Date

    init(_ request: Wire.EnrolmentRequest) throws(ClientError) {
        guard let spki = Base64URL.decode(request.publicKey), let key = try? DevicePublicKey(spki: spki) else {
            throw ClientError(.protocolViolation)
        }
        id = request.id
        deviceName = request.name
        fingerprint = key.fingerprint
        replacing = request.replacing
        approvalText = EnrolmentApprovalText.make(deviceName: request.name, fingerprint: key.fingerprint, replacing: request.replacing)
        expiresAt = Date(seconds: request.expiresAt)
    }
}

extension BioAuthClient {
    // MARK: - The phone being added

    /// Asks the user's other devices to approve enrolling this phone (after ``enrol(_:deviceName:)``
    /// or ``reenrol(_:deviceName:)`` threw ``ClientError/Code/approvalRequired``). Creates the key
    /// — without a prompt — and keeps it until the enrolment completes. Calling again, after a
    /// relaunch too, resumes with the same key and returns the same request while it is live (no
    /// new request, no recovery code spent); a new request only once it ended or expired, or its
    /// primary session did. A key that still signs is never replaced.
    ///
    /// Everything needed to go on is kept in the keychain: a new client on this phone finds it
    /// with ``enrolmentInProgress()``.
    public func requestEnrolment(_ primary: PrimarySession, deviceName: String? = nil) async throws(ClientError) -> PendingEnrolment {
        defer { publishState() }
        let registration = try storage.registration()
        if let registration, registration.userID != primary.userID { throw ClientError(.forbidden) }
        let inProgress = try storage.pending()
        let key: DevicePublicKey
        let current: DevicePublicKey?
        do { current = try signer.publicKey() } catch  where error.code == .keyUnavailable { current = nil } catch {
            throw ClientError(device: error)
        }
        if let current, current.spkiRepresentation == inProgress?.key || registration == nil {
            // The key of this request, or (without a registration) a key registered nowhere.
            key = current
        } else {
            if registration != nil, current != nil, try keyCondition() == .usable { throw ClientError(.alreadyEnrolled) }
            endBiometricSession()
            do { key = try signer.replaceKey() } catch { throw ClientError(device: error) }
        }
        if let inProgress, inProgress.key == key.spkiRepresentation, inProgress.replacing == registration?.deviceID,
            let live = try await liveRequest(inProgress, key: key, userID: primary.userID)
        {
            return live.request
        }
        let name = deviceName ?? inProgress?.deviceName ?? registration?.deviceName ?? "iPhone"
        var record = PendingEnrolmentRecord(
            key: key.spkiRepresentation, primary: primary, deviceName: name, replacing: registration?.deviceID)
        try storage.save(record)  // before the server hears of it: a relaunch finds the key's purpose
        let body = Wire.EnrolmentRequestCreation(
            name: name, publicKey: Base64URL.encode(key.spkiRepresentation), replacesDeviceId: registration?.deviceID)
        let request = try pending(
            try await api.requestEnrolment(body, token: primary.token), of: primary, key: key, replacing: registration?.deviceID)
        record.request = request
        try storage.save(record)
        return request
    }

    /// The enrolment this phone started and has neither completed nor abandoned, as last seen —
    /// what a relaunched app resumes with. nil when there is none.
    public func enrolmentInProgress() throws(ClientError) -> EnrolmentInProgress? {
        guard let record = try storage.pending() else { return nil }
        let primary = record.primary.expiresAt > configuration.clock.now() ? record.primary : nil
        return EnrolmentInProgress(
            request: record.request, primary: primary, deviceName: record.deviceName, replacing: record.replacing != nil)
    }

    /// Gives up the enrolment in progress: forgets it, and deletes its key when this phone has no
    /// registration (a key made for a re-key stays until the next re-enrolment replaces it; the
    /// old one could no longer sign anyway). The server lets the request expire.
    public func abandonEnrolment() throws(ClientError) {
        defer { publishState() }
        guard let record = try storage.pending() else { return }
        try storage.forgetPending()
        if try storage.registration() == nil, (try? signer.publicKey())?.spkiRepresentation == record.key { signer.deleteKey() }
    }

    /// The request as the server has it now: poll until ``PendingEnrolment/isApproved`` — or
    /// ``PendingEnrolment/ending``, when the owner cancelled it or too many codes were wrong.
    public func refresh(_ request: PendingEnrolment, _ primary: PrimarySession) async throws(ClientError) -> PendingEnrolment {
        try await refreshed(request, try session(of: request, primary), key: try pendingSigningKey())
    }

    /// `request` as the server has it now, kept as the enrolment in progress when it is that one.
    func refreshed(_ request: PendingEnrolment, _ primary: PrimarySession, key: DevicePublicKey) async throws(ClientError)
        -> PendingEnrolment
    {
        let current = try pending(
            try await api.enrolmentRequest(id: request.id, token: primary.token), of: primary, key: key,
            replacing: request.replacing ? request.deviceID : nil,
            bindingCode: request.bindingCode)
        if var record = try storage.pending(), record.request?.id == request.id {
            record.request = current
            try storage.save(record)
        }
        return current
    }

    /// The key made for `record` when it is still this phone's key.
    func keyInProgress(_ record: PendingEnrolmentRecord) throws(ClientError) -> DevicePublicKey? {
        let key: DevicePublicKey
        do { key = try signer.publicKey() } catch  where error.code == .keyUnavailable { return nil } catch {
            throw ClientError(device: error)
        }
        return key.spkiRepresentation == record.key ? key : nil
    }

    /// The recorded request as the server has it now, with the session that made it (the only one
    /// the server lets use it), while both can still go on; nil when only a new request can: it
    /// ended, expired or is unknown, or its session expired or was ended.
    func liveRequest(_ record: PendingEnrolmentRecord, key: DevicePublicKey, userID: String) async throws(ClientError)
        -> (request: PendingEnrolment, primary: PrimarySession)?
    {
        let now = configuration.clock.now()
        guard let stored = record.request, stored.ending == nil, stored.expiresAt > now, record.primary.userID == userID,
            record.primary.expiresAt > now
        else { return nil }
        do {
            let current = try await refreshed(stored, record.primary, key: key)
            return current.ending == nil ? (current, record.primary) : nil
        } catch  where [.notFound, .requestEnded, .authenticationFailed].contains(error.code) {
            return nil
        }
    }

    /// The session to use `request` with: the one that made it (the server binds a request to
    /// its session) while it is valid and `primary`'s user's, else `primary`.
    func session(of request: PendingEnrolment, _ primary: PrimarySession) throws(ClientError) -> PrimarySession {
        guard let record = try storage.pending(), record.request?.id == request.id, record.primary.userID == primary.userID,
            record.primary.expiresAt > configuration.clock.now()
        else { return primary }
        return record.primary
    }

    /// Asks the server to send a recovery code to the user through the deployment's channel
    /// (e-mail, SMS): for a user without another device at hand. At most 3 per request, 60 s
    /// apart, and 10 a day: otherwise ``ClientError/Code/rateLimited`` with the wait in
    /// ``ClientError/retryAfter`` (none when this request had all its codes: make a new request).
    public func sendRecoveryCode(for request: PendingEnrolment, _ primary: PrimarySession) async throws(ClientError) {
        try await api.sendRecoveryCode(id: request.id, token: try session(of: request, primary).token)
    }

    /// Approves the request with the recovery code the user received.
    public func recover(_ request: PendingEnrolment, code: String, _ primary: PrimarySession) async throws(ClientError) {
        try await api.recoverEnrolment(id: request.id, Wire.RecoveryCodeEntry(code: code), token: try session(of: request, primary).token)
    }

    /// Enrols this phone once its request is approved: one prompt (proof of possession).
    ///
    /// Calling it again is safe: once this phone is enrolled as `request`'s device it returns the
    /// registration; when the app stopped after the server enrolled the key but before the phone
    /// kept it, it finds the device on the server (no prompt) and keeps it.
    @discardableResult
    public func completeEnrolment(_ request: PendingEnrolment, _ primary: PrimarySession) async throws(ClientError) -> Registration {
        defer { publishState() }
        if try storage.pending() == nil, let registration = try storage.registration(), registration.deviceID == request.deviceID,
            registration.userID == primary.userID, try keyCondition() == .usable
        {
            return registration
        }
        let key = try pendingSigningKey()
        let session = try session(of: request, primary)
        do {
            return try await register(
                key, for: session, deviceName: request.deviceName, replacing: request.replacing ? request.deviceID : nil, request: request)
        } catch  where error.code == .approvalRequired || error.code == .requestEnded {
            guard let enrolled = try await enrolledOnServer(request, key: key, session) else { throw error }
            return enrolled
        }
    }

    /// `request`'s device when the server already holds this key for it (the request was used by
    /// a completion whose answer never arrived), kept as this phone's registration. Not where the
    /// server recorded an App Attest key: its id was not kept, so re-enrolment must make a new one.
    func enrolledOnServer(_ request: PendingEnrolment, key: DevicePublicKey, _ primary: PrimarySession) async throws(ClientError)
        -> Registration?
    {
        let devices = try await api.devices(token: primary.token)
        guard
            let device = devices.first(where: {
                $0.id == request.deviceID && $0.revokedAt == nil && $0.publicKey == Base64URL.encode(key.spkiRepresentation)
            }),
            device.attestation?.format != Wire.DeviceAttestation.appleAppAttest
        else { return nil }
        let registration = Registration(userID: primary.userID, deviceID: device.id, deviceName: device.name, appAttestKeyID: nil)
        try remember(registration, key: key)
        return registration
    }

    /// The key of the enrolment in progress.
    func pendingSigningKey() throws(ClientError) -> DevicePublicKey {
        guard let record = try storage.pending() else { throw ClientError(.notEnrolled) }
        let key: DevicePublicKey
        do { key = try signer.publicKey() } catch { throw ClientError(device: error) }
        guard key.spkiRepresentation == record.key else { throw ClientError(.notEnrolled) }
        return key
    }

    /// Checks the server's answer against what this phone asked for.
    /// Checks the server's answer against what this phone asked for; the binding code comes only
    /// with the request's creation, so a refreshed request keeps `bindingCode`.
    func pending(
        _ wire: Wire.EnrolmentRequest, of primary: PrimarySession, key: DevicePublicKey, replacing: String?, bindingCode: String? = nil
    ) throws(ClientError) -> PendingEnrolment {
        guard wire.publicKey == Base64URL.encode(key.spkiRepresentation), wire.replacing == (replacing != nil),
            replacing == nil || wire.deviceId == replacing
        else { throw ClientError(.protocolViolation) }
        return PendingEnrolment(
            id: wire.id, userID: primary.userID, deviceID: wire.deviceId, deviceName: wire.name, replacing: wire.replacing,
            approvalText: EnrolmentApprovalText.make(deviceName: wire.name, fingerprint: key.fingerprint, replacing: wire.replacing),
            bindingCode: wire.bindingCode ?? bindingCode, expiresAt: Date(seconds: wire.expiresAt), isApproved: wire.status == "approved",
            ending: wire.status == "ended" ? PendingEnrolment.Ending(rawValue: wire.endedBy ?? "") ?? .other : nil)
    }

    // MARK: - A phone that approves

    /// Enrolment requests waiting for this user's approval (needs a device session: ``logIn()``).
    public func enrolmentRequests() async throws(ClientError) -> [EnrolmentRequestToApprove] {
        let session = try currentSession()
        let requests = try await authorized { () async throws(ClientError) in try await api.enrolmentRequests(token: session) }
        return try requests.map { request throws(ClientError) in try EnrolmentRequestToApprove(request) }
    }

    /// Cancels a request the user did not make (or no longer wants), pending or approved: it can
    /// then enrol nothing. Needs a device session (``logIn()``); a device in its first day may
    /// cancel too.
    public func cancelEnrolment(_ request: EnrolmentRequestToApprove) async throws(ClientError) {
        let session = try currentSession()
        try await authorized { () async throws(ClientError) in try await api.cancelEnrolmentRequest(id: request.id, token: session) }
    }

    /// Approves adding a device: the user types the binding code the new phone shows
    /// (``PendingEnrolment/bindingCode``), then a step-up over ``EnrolmentRequestToApprove/approvalText``
    /// with that code (`EnrolmentApprovalText.signed(_:bindingCode:)`) — one prompt showing the
    /// text — redeemed at once for the request. A code that is not the new phone's is refused by
    /// the server (``ClientError/Code/authenticationFailed``), after the prompt: only someone who
    /// sees the new phone can approve it.
    public func approveEnrolment(_ request: EnrolmentRequestToApprove, bindingCode: String) async throws(ClientError) {
        let approval = try await approve(
            operation: EnrolmentApprovalText.signed(request.approvalText, bindingCode: bindingCode), reason: request.approvalText)
        // The session signed the step-up a moment ago: a 401 here is the approval refused (a wrong
        // binding code), not the session gone, so the session is kept.
        try await api.approveEnrolment(id: request.id, Wire.EnrolmentApproval(approval: approval.token.value), token: try currentSession())
    }
}
