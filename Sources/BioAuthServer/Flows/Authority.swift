import Foundation

/// The credential a session stands for, as the authority table ranks it: one column each.
public enum CallerCredential: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A one-time enrolment grant from the app's backend (``SessionKind/enrolmentGrant``).
    case enrolmentGrant
    /// A primary login: the password, or the backend's own login (``SessionKind/primary``).
    case password
    /// A sign-in on another screen a phone approved (``SessionKind/crossDevice``): it proves a
    /// tap and the number, not a key of the screen's own.
    case crossDevice
    /// A sign-in with a synced passkey (backup eligible: iCloud Keychain, Google Password
    /// Manager): as strong as the provider account that syncs it, which can be phished or
    /// recovered like a password — it never outranks a phone.
    case syncedPasskey
    /// A device login — a phone's key or a device-bound passkey — whose key is in its cool-down
    /// (``EnrolmentPolicy/isCoolingDown(_:among:at:)``).
    case coolingDevice
    /// A device login — a phone's key or a device-bound passkey — out of its cool-down (or the
    /// user's first device, with its first key).
    case device

    public var description: String { rawValue }

    /// How the table's header names the column.
    var columnTitle: String {
        switch self {
        case .enrolmentGrant: "enrolment grant"
        case .password: "password"
        case .crossDevice: "approved screen"
        case .syncedPasskey: "synced passkey"
        case .coolingDevice: "device in cool-down"
        case .device: "device"
        }
    }
}

/// Everything a session may ask of its own account. Each names the least credential it needs in
/// ``Authority``; the backend API (API keys) is authorised by scope and ownership instead.
public enum AccountAction: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case listDevices, renameDevice, revokeDevice
    case listSessions, endOwnSession, endOtherSession, endAllSessions
    case readAuditLog, readSecurityEvents
    case enrolDevice, requestEnrolment, readEnrolmentRequest, listEnrolmentRequests
    case sendRecoveryCode, recoverEnrolment, approveEnrolmentRequest, cancelEnrolmentRequest
    case stepUp
    case changePassword
    case requestDeviceRemoval, confirmDeviceRemoval, listDeviceRemovals, cancelDeviceRemoval
    case listCrossDeviceRequests, approveCrossDeviceRequest, denyCrossDeviceRequest

    public var description: String { rawValue }

    /// The HTTP route of the action (`docs/Protocol.md`).
    public var route: String {
        switch self {
        case .listDevices: "GET /v1/devices"
        case .renameDevice: "PATCH /v1/devices/{id}"
        case .revokeDevice: "DELETE /v1/devices/{id}"
        case .listSessions: "GET /v1/sessions"
        case .endOwnSession: "POST /v1/logout, DELETE /v1/sessions/{own id}"
        case .endOtherSession: "DELETE /v1/sessions/{id}"
        case .endAllSessions: "DELETE /v1/sessions"
        case .readAuditLog: "GET /v1/audit"
        case .readSecurityEvents: "GET /v1/security-events"
        case .enrolDevice: "POST /v1/devices/registration/…, GET …/attestation-challenge, POST /v1/passkeys/registration/…"
        case .requestEnrolment: "POST /v1/enrolment-requests"
        case .readEnrolmentRequest: "GET /v1/enrolment-requests/{id}"
        case .listEnrolmentRequests: "GET /v1/enrolment-requests"
        case .sendRecoveryCode: "POST /v1/enrolment-requests/{id}/recovery-code"
        case .recoverEnrolment: "POST /v1/enrolment-requests/{id}/recover"
        case .approveEnrolmentRequest: "POST /v1/enrolment-requests/{id}/approve"
        case .cancelEnrolmentRequest: "DELETE /v1/enrolment-requests/{id}"
        case .stepUp: "POST /v1/step-up/challenge, …/finish"
        case .changePassword: "POST /v1/password (with a device's approval)"
        case .requestDeviceRemoval: "POST /v1/device-removals"
        case .confirmDeviceRemoval: "POST /v1/device-removals/{id}/confirm"
        case .listDeviceRemovals: "GET /v1/device-removals"
        case .cancelDeviceRemoval: "DELETE /v1/device-removals/{id}"
        case .listCrossDeviceRequests: "GET /v1/cross-device/requests"
        case .approveCrossDeviceRequest: "POST /v1/cross-device/requests/{id}/approve"
        case .denyCrossDeviceRequest: "DELETE /v1/cross-device/requests/{id}"
        }
    }
}

/// Who may do what to an account, written once: the flows consult ``permits(_:_:)`` and nothing
/// else, `docs/Protocol.md` prints ``table``, and a test walks every route with every credential.
///
/// The rank it encodes: a password proves knowledge that can be phished, a device — a phone's key
/// or a device-bound passkey — proves possession and biometry. A screen a phone let in proves a
/// tap and a number, and ranks like a password; a synced passkey proves the provider account that
/// syncs it, and ranks below every device. So a password may look, enrol (with the policy's proof)
/// and end its own session; removing or silencing a device — renaming or revoking it, ending sessions that are not
/// its own — needs an enrolled device. A device in its cool-down may do that only to itself and to
/// what came after it (``EnrolmentPolicy/mayManage(_:from:)``; its own sessions), and may cancel
/// any pending enrolment request or device removal; ending every session and approving an
/// enrolment need a device out of its cool-down. Without a device, a password and a recovery code
/// schedule a device's removal after a delay that a device with an older key may cancel
/// (``DeviceRemovalRecord``); meanwhile the device being removed touches no other device or
/// session (``refusedWhileRemovalScheduled``).
public enum Authority {
    /// The credentials `action` accepts: a switch over every action, so a new one does not
    /// compile without its decision. An approved screen may do what a password may; a synced
    /// passkey what any account session may, and nothing that needs a device.
    public static func credentials(for action: AccountAction) -> Set<CallerCredential> {
        let anyAccount: Set<CallerCredential> = [.password, .crossDevice, .syncedPasskey, .coolingDevice, .device]
        let enrolling: Set<CallerCredential> = [.enrolmentGrant, .password, .crossDevice]
        let devices: Set<CallerCredential> = [.coolingDevice, .device]
        switch action {
        case .listDevices, .listSessions, .endOwnSession, .readAuditLog, .readSecurityEvents, .listEnrolmentRequests: return anyAccount
        case .renameDevice, .revokeDevice, .endOtherSession: return devices
        case .endAllSessions: return [.device]
        case .enrolDevice, .requestEnrolment, .sendRecoveryCode, .recoverEnrolment: return enrolling
        case .readEnrolmentRequest: return anyAccount.union(enrolling)
        case .approveEnrolmentRequest: return [.device]
        case .cancelEnrolmentRequest: return devices
        case .stepUp: return anyAccount
        // The approval of a device out of its cool-down is the authority; any account session carries it.
        case .changePassword: return anyAccount
        // The lost-phone case: a recovery code confirms, a delay follows, and an older device may cancel.
        case .requestDeviceRemoval, .confirmDeviceRemoval, .listDeviceRemovals: return anyAccount
        case .cancelDeviceRemoval: return devices
        // A sign-in on another screen is let in by a phone out of its cool-down, with the number;
        // any phone may see and refuse one.
        case .listCrossDeviceRequests, .denyCrossDeviceRequest: return devices
        case .approveCrossDeviceRequest: return [.device]
        }
    }

    /// The credentials each action accepts (``credentials(for:)``), as a table.
    public static var table: [AccountAction: Set<CallerCredential>] {
        Dictionary(uniqueKeysWithValues: AccountAction.allCases.map { ($0, credentials(for: $0)) })
    }

    /// Where a device in its cool-down may act only on itself and what came after it: devices whose
    /// key arrived no earlier than its own (``EnrolmentPolicy/mayManage(_:from:)``), sessions it opened.
    public static let limitedWhileCooling: Set<AccountAction> = [.renameDevice, .revokeDevice, .endOtherSession]

    /// What a device whose removal is scheduled (``DeviceRemovalRecord``) may not do until the
    /// removal ends: touch the other devices or their sessions (403 `removalScheduled`). A phone
    /// an attacker recovered cannot strike back at the owner's phone while the owner removes it.
    public static let refusedWhileRemovalScheduled: Set<AccountAction> = [
        .renameDevice, .revokeDevice, .endOtherSession, .endAllSessions, .approveEnrolmentRequest,
    ]

    /// The table as `docs/Protocol.md` prints it: a row per action, a column per credential
    /// (✓ permitted, ◐ only on itself and what came after it, – refused).
    public static var markdownTable: String {
        var lines = [
            "| action | route | " + CallerCredential.allCases.map(\.columnTitle).joined(separator: " | ") + " |",
            "|---|---|" + String(repeating: "---|", count: CallerCredential.allCases.count),
        ]
        for action in AccountAction.allCases {
            let cells = CallerCredential.allCases.map { credential in
                guard permits(action, credential) else { return "–" }
                return credential == .coolingDevice && limitedWhileCooling.contains(action) ? "◐" : "✓"
            }
            lines.append("| `\(action)` | `\(action.route)` | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whether `credential` may do `action`.
    public static func permits(_ action: AccountAction, _ credential: CallerCredential) -> Bool {
        credentials(for: action).contains(credential)
    }

    /// What a device session may be: a synced passkey, or a device in its cool-down or out of it.
    static let deviceSessionCredentials: [CallerCredential] = [.syncedPasskey, .coolingDevice, .device]

    /// Whether the answer for `action` depends on what a device session's device is — a synced
    /// passkey, a device in its cool-down — only then is the device read to rank the caller.
    static func distinguishesDevices(_ action: AccountAction) -> Bool {
        Set(deviceSessionCredentials.map { permits(action, $0) }).count > 1 || limitedWhileCooling.contains(action)
    }

    /// What a refusal says (the 403's `reason`): the least credential that would do.
    /// `enrolmentSessionRequired` (a primary login or an enrolment grant), `accountSessionRequired`
    /// (a primary or device login), `deviceRequired` (an enrolled device's login),
    /// `settledDeviceRequired` (an enrolled device out of its cool-down).
    public static func refusal(_ action: AccountAction) -> String {
        let accepted = credentials(for: action)
        if accepted.contains(.enrolmentGrant) { return "enrolmentSessionRequired" }
        if accepted.contains(.password) { return "accountSessionRequired" }
        if accepted.contains(.coolingDevice) { return "deviceRequired" }
        return "settledDeviceRequired"
    }
}

/// A session ranked for one action (``Flow/authorize(_:_:request:)``).
struct Caller: Sendable {
    let session: SessionRecord
    let credential: CallerCredential
    /// The session's device, when it was read to rank the caller.
    let device: DeviceRecord?
}
