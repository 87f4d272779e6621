import Foundation

/// The JSON bodies of `bioauth-server`'s HTTP API (`docs/Protocol.md` §5, `openapi.yaml`), shared
/// by the server's routes and by `BioAuthClient`: a field renamed on one side breaks the other's build.
///
/// Binary values are base64url without padding; times are whole seconds since
/// 1970-01-01T00:00:00Z. Bodies that carry a password, token, approval or signature redact it
/// from `description` and `dump()`. The server decodes requests strictly (unknown and duplicate
/// fields rejected, size-limited); that stays in `BioAuthHTTP`.
public enum Wire {}

/// A request body. Its coding keys are listed, so ``fieldNames`` — what the server's unknown-field
/// check accepts — can never drift from the type.
public protocol WireRequest: Codable, Sendable {
    associatedtype CodingKeys: CodingKey & CaseIterable
}

extension WireRequest {
    /// Every field the body may carry.
    public static var fieldNames: Set<String> { Set(CodingKeys.allCases.map(\.stringValue)) }
}

/// One redaction rule for every body that holds a secret.
public protocol WireRedacted: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The fields that may be shown.
    var visibleFields: KeyValuePairs<String, Any> { get }
}

extension WireRedacted {
    public var description: String {
        let fields = visibleFields.map { "\($0.key): \($0.value)" } + ["secret: redacted"]
        return "\(type(of: self))(\(fields.joined(separator: ", ")))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: visibleFields.map { (label: $0.key, value: $0.value) }) }
}

extension Wire {
    // MARK: Requests

    /// `POST /v1/users`, `POST /v1/login/password`: the built-in demo accounts.
    public struct Credentials: WireRequest, Hashable, WireRedacted {
        public var username: String
        public var password: String
        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case username, password }
        public var visibleFields: KeyValuePairs<String, Any> { ["username": username] }
    }

    /// `POST /v1/login/password`: the credentials, and a sign-in code sent for this address
    /// (`POST /v1/login/password/code`) when strangers' wrong passwords slow logins from it.
    public struct PasswordLogin: WireRequest, Hashable, WireRedacted {
        public var username: String
        public var password: String
        public var signInCode: String?
        public init(username: String, password: String, signInCode: String? = nil) {
            self.username = username
            self.password = password
            self.signInCode = signInCode
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case username, password, signInCode }
        public var visibleFields: KeyValuePairs<String, Any> { ["username": username] }
    }

    /// `POST /v1/login/password/code`: whose password login a sign-in code is for.
    public struct SignInCodeRequest: WireRequest, Hashable {
        public var username: String
        public init(username: String) { self.username = username }
        public enum CodingKeys: String, CodingKey, CaseIterable { case username }
    }

    /// `POST /v1/login/challenge`.
    public struct LoginChallengeRequest: WireRequest, Hashable {
        public var userId: String
        public var deviceId: String
        public init(userId: String, deviceId: String) {
            self.userId = userId
            self.deviceId = deviceId
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case userId, deviceId }
    }

    /// `POST /v1/devices/registration/challenge`: the new key (SPKI DER, base64url).
    public struct RegistrationChallengeRequest: WireRequest, Hashable {
        public var name: String
        public var publicKey: String
        /// Re-enrolment: the device whose invalidated key this one replaces.
        public var replacesDeviceId: String?
        /// A second device or a new key: the approved enrolment request for this name and key.
        public var enrolmentRequestId: String?
        public init(name: String, publicKey: String, replacesDeviceId: String? = nil, enrolmentRequestId: String? = nil) {
            self.name = name
            self.publicKey = publicKey
            self.replacesDeviceId = replacesDeviceId
            self.enrolmentRequestId = enrolmentRequestId
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case name, publicKey, replacesDeviceId, enrolmentRequestId }
    }

    /// `POST /v1/enrolment-requests`: the device and key that wait for an approval or recovery code.
    public struct EnrolmentRequestCreation: WireRequest, Hashable {
        public var name: String
        public var publicKey: String
        public var replacesDeviceId: String?
        public init(name: String, publicKey: String, replacesDeviceId: String? = nil) {
            self.name = name
            self.publicKey = publicKey
            self.replacesDeviceId = replacesDeviceId
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case name, publicKey, replacesDeviceId }
    }

    /// `POST /v1/enrolment-requests/{id}/approve`: a step-up approval for the request's text.
    public struct EnrolmentApproval: WireRequest, Hashable, WireRedacted {
        public var approval: String
        public init(approval: String) { self.approval = approval }
        public enum CodingKeys: String, CodingKey, CaseIterable { case approval }
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }

    /// `POST /v1/password`: the new built-in password, allowed by a step-up approval over
    /// ``PasswordChangeText``. Both are secrets: neither is ever described.
    public struct PasswordChange: WireRequest, Hashable, WireRedacted {
        public var password: String
        public var approval: String
        public init(password: String, approval: String) {
            self.password = password
            self.approval = approval
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case password, approval }
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }

    /// `POST /v1/enrolment-requests/{id}/recover`: the recovery code the user received.
    /// `POST /v1/device-removals`: the device to remove after the security delay.
    public struct DeviceRemovalCreation: WireRequest, Hashable {
        public var deviceId: String
        public init(deviceId: String) { self.deviceId = deviceId }
        public enum CodingKeys: String, CodingKey, CaseIterable { case deviceId }
    }

    public struct RecoveryCodeEntry: WireRequest, Hashable, WireRedacted {
        public var code: String
        public init(code: String) { self.code = code }
        public enum CodingKeys: String, CodingKey, CaseIterable { case code }
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }

    /// `POST /v1/step-up/challenge`: the operation's exact bytes (base64url), which the server hashes into the challenge.
    public struct StepUpChallengeRequest: WireRequest, Hashable {
        public var deviceId: String
        public var operation: String
        public init(deviceId: String, operation: String) {
            self.deviceId = deviceId
            self.operation = operation
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case deviceId, operation }
    }

    /// `POST /v1/{login,step-up}/finish`: the device's DER signature over the challenge's message
    /// and, from a device that App Attest proved at enrolment, the app key's assertion.
    public struct SignedChallenge: WireRequest, Hashable, WireRedacted {
        public var challengeId: String
        public var signature: String
        /// App Attest: the assertion `generateAssertion(_:clientDataHash:)` returned for
        /// ``AttestationBinding/assertionHash(_:signature:)`` (CBOR, base64url).
        public var appAttestAssertion: String?
        /// App Attest after a reinstall, instead of an assertion: a new key's id and the
        /// attestation object `attestKey(_:clientDataHash:)` returned for
        /// ``AttestationBinding/registrationHash(_:publicKey:)`` of this message and the device key.
        public var appAttestKeyId: String?
        public var appAttestation: String?
        public init(
            challengeId: String, signature: String, appAttestAssertion: String? = nil, appAttestKeyId: String? = nil,
            appAttestation: String? = nil
        ) {
            self.challengeId = challengeId
            self.signature = signature
            self.appAttestAssertion = appAttestAssertion
            self.appAttestKeyId = appAttestKeyId
            self.appAttestation = appAttestation
        }
        public enum CodingKeys: String, CodingKey, CaseIterable {
            case challengeId, signature, appAttestAssertion, appAttestKeyId, appAttestation
        }
        public var visibleFields: KeyValuePairs<String, Any> {
            ["challengeId": challengeId, "appAttestAssertion": appAttestAssertion != nil, "appAttestation": appAttestation != nil]
        }
    }

    /// `POST /v1/devices/registration/finish`: the new key's signature over the challenge's
    /// message and, when the device has one, the key's attestation — App Attest (both `appAttest`
    /// fields) or Android Key Attestation, never both.
    public struct RegistrationFinish: WireRequest, Hashable, WireRedacted {
        public var challengeId: String
        public var signature: String
        /// App Attest: the app key's id (32 bytes, base64url), as `DCAppAttestService.generateKey` returned it.
        public var appAttestKeyId: String?
        /// App Attest: the attestation object `attestKey(_:clientDataHash:)` returned for
        /// ``AttestationBinding/registrationHash(_:publicKey:)`` (CBOR, base64url).
        public var appAttestation: String?
        /// Android: the enrolled key's attestation certificate chain, leaf first (DER, base64url each).
        public var androidKeyAttestation: [String]?
        public init(
            challengeId: String, signature: String, appAttestKeyId: String? = nil, appAttestation: String? = nil,
            androidKeyAttestation: [String]? = nil
        ) {
            self.challengeId = challengeId
            self.signature = signature
            self.appAttestKeyId = appAttestKeyId
            self.appAttestation = appAttestation
            self.androidKeyAttestation = androidKeyAttestation
        }
        public enum CodingKeys: String, CodingKey, CaseIterable {
            case challengeId, signature, appAttestKeyId, appAttestation, androidKeyAttestation
        }
        public var visibleFields: KeyValuePairs<String, Any> {
            [
                "challengeId": challengeId, "appAttestation": appAttestation != nil,
                "androidKeyAttestation": androidKeyAttestation?.count ?? 0,
            ]
        }
    }

    /// `POST /v1/backend/approvals/redeem`: what the app's backend sends before acting — the
    /// approval and operation the app passed on, and the user the backend's own session names.
    public struct Redemption: WireRequest, Hashable, WireRedacted {
        public var approval: String
        public var operation: String
        public var userId: String
        public init(approval: String, operation: String, userId: String) {
            self.approval = approval
            self.operation = operation
            self.userId = userId
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case approval, operation, userId }
        public var visibleFields: KeyValuePairs<String, Any> { ["operation": operation, "userId": userId] }
    }

    /// `POST /v1/token/refresh`.
    public struct RefreshRequest: WireRequest, Hashable, WireRedacted {
        public var refreshToken: String
        public init(refreshToken: String) { self.refreshToken = refreshToken }
        public enum CodingKeys: String, CodingKey, CaseIterable { case refreshToken }
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }

    /// `POST /v1/introspect` (the app's backend, API key with scope `introspect`).
    public struct IntrospectionRequest: WireRequest, Hashable, WireRedacted {
        public var token: String
        public init(token: String) { self.token = token }
        public enum CodingKeys: String, CodingKey, CaseIterable { case token }
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }

    /// `POST /v1/backend/enrolment-grants`: the user the backend's own login vouches for.
    public struct EnrolmentGrantRequest: WireRequest, Hashable {
        public var userId: String
        public init(userId: String) { self.userId = userId }
        public enum CodingKeys: String, CodingKey, CaseIterable { case userId }
    }

    /// `PATCH /v1/devices/{id}`.
    public struct DeviceRename: WireRequest, Hashable {
        public var name: String
        public init(name: String) { self.name = name }
        public enum CodingKeys: String, CodingKey, CaseIterable { case name }
    }
}
