import BioAuthCore
import BioAuthHTTP
import Foundation
import Testing

/// `openapi.yaml` and the `Wire` types the server and `BioAuthClient` share describe the same
/// bodies: a field added, renamed or dropped on either side fails here.
struct WireDocumentTests {
    static let document = OpenAPIDocument.yaml

    /// The top-level keys of the object that starts at `text`'s first `{`, and the `required` list before it.
    static func inlineObject(_ text: Substring) -> (properties: Set<String>, required: Set<String>) {
        var required: Set<String> = []
        if let match = text.firstMatch(of: /required: \[([^\]]*)\]/) {
            required = Set(match.1.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        guard let start = text.range(of: "properties: {")?.upperBound else { return ([], required) }
        var depth = 0, key = "", keys: Set<String> = [], inQuote = false
        for character in text[start...] {
            if character == "'" { inQuote.toggle() }
            if inQuote { continue }
            switch character {
            case "{", "[": depth += 1
            case "}", "]":
                if depth == 0 { return (keys, required) }
                depth -= 1
            case ":" where depth == 0:
                keys.insert(key.trimmingCharacters(in: .whitespaces))
                key = ""
            case "," where depth == 0: key = ""
            default: if depth == 0 { key.append(character) }
            }
        }
        return (keys, required)
    }

    /// A component schema written in block form.
    static func component(_ name: String) throws -> (properties: Set<String>, required: Set<String>) {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "    \(name):") else { throw SchemaMissing(name: name) }
        var properties: Set<String> = [], required: Set<String> = []
        for line in lines[(start + 1)...] {
            guard line.hasPrefix("      ") else { break }
            if let match = line.firstMatch(of: /^      required: \[([^\]]*)\]/) {
                required = Set(match.1.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            }
            if let match = line.firstMatch(of: /^        ([A-Za-z_]+):/) { properties.insert(String(match.1)) }
        }
        return (properties, required)
    }

    /// The `enum` list of `property` in the component schema `name`.
    static func enumValues(_ name: String, _ property: String) throws -> [String] {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "    \(name):") else { throw SchemaMissing(name: name) }
        for line in lines[(start + 1)...] {
            guard line.hasPrefix("      ") else { break }
            if line.hasPrefix("        \(property):"), let match = line.firstMatch(of: /enum: \[([^\]]*)\]/) {
                return match.1.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            }
        }
        throw SchemaMissing(name: "\(name).\(property)")
    }

    /// The screen's poll statuses and endings, typed in the wire, are the document's.
    @Test func thePollsTypedStatesAreTheDocumentsEnums() throws {
        #expect(try Self.enumValues("CrossDevicePollResult", "status") == Wire.CrossDevicePollResult.State.allCases.map(\.rawValue))
        #expect(try Self.enumValues("CrossDevicePollResult", "endedBy") == Wire.CrossDevicePollResult.Ending.allCases.map(\.rawValue))
    }

    /// The schema of `path`'s request body.
    static func requestSchema(_ path: String) throws -> (properties: Set<String>, required: Set<String>) {
        guard let section = document.components(separatedBy: "\n  \(path):\n").dropFirst().first,
            let line = section.split(separator: "\n").first(where: { $0.contains("requestBody") })
        else { throw SchemaMissing(name: path) }
        if let reference = line.firstMatch(of: /schema: \{\$ref: '#\/components\/schemas\/([A-Za-z]+)'\}/) {
            return try component(String(reference.1))
        }
        return inlineObject(line)
    }

    @Test(arguments: [
        ("/v1/users", Wire.Credentials.fieldNames), ("/v1/login/password", Wire.PasswordLogin.fieldNames),
        ("/v1/login/password/code", Wire.SignInCodeRequest.fieldNames),
        ("/v1/login/challenge", Wire.LoginChallengeRequest.fieldNames),
        ("/v1/devices/registration/challenge", Wire.RegistrationChallengeRequest.fieldNames),
        ("/v1/devices/registration/finish", Wire.RegistrationFinish.fieldNames), ("/v1/login/finish", Wire.SignedChallenge.fieldNames),
        ("/v1/step-up/challenge", Wire.StepUpChallengeRequest.fieldNames), ("/v1/step-up/finish", Wire.SignedChallenge.fieldNames),
        ("/v1/token/refresh", Wire.RefreshRequest.fieldNames), ("/v1/introspect", Wire.IntrospectionRequest.fieldNames),
        ("/v1/backend/approvals/redeem", Wire.Redemption.fieldNames),
        ("/v1/backend/enrolment-grants", Wire.EnrolmentGrantRequest.fieldNames), ("/v1/devices/{id}", Wire.DeviceRename.fieldNames),
        ("/v1/enrolment-requests", Wire.EnrolmentRequestCreation.fieldNames),
        ("/v1/enrolment-requests/{id}/approve", Wire.EnrolmentApproval.fieldNames),
        ("/v1/enrolment-requests/{id}/recover", Wire.RecoveryCodeEntry.fieldNames), ("/v1/password", Wire.PasswordChange.fieldNames),
        ("/v1/cross-device/requests", Wire.CrossDeviceStart.fieldNames),
        ("/v1/cross-device/requests/{id}/poll", Wire.CrossDevicePoll.fieldNames),
        ("/v1/cross-device/requests/{id}/approve", Wire.EnrolmentApproval.fieldNames),
    ])
    func requestBodiesMatchTheDocument(path: String, fields: Set<String>) throws {
        let schema = try Self.requestSchema(path)
        #expect(schema.properties == fields, "\(path)")
        #expect(schema.required.isSubset(of: fields), "\(path)")
    }

    /// Every field of a fully populated response, and the schema's.
    static func keys(_ value: some Encodable) throws -> Set<String> {
        Set(try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any]).keys)
    }

    @Test func responseBodiesMatchTheDocument() throws {
        let cases: [(String, Set<String>)] = [
            (
                "Session",
                try Self.keys(
                    Wire.Session(
                        token: "t", sessionId: "s", userId: "u", deviceId: "d", expiresAt: 1, accessToken: "a", accessTokenExpiresAt: 2,
                        refreshToken: "r", tokenType: "DPoP"))
            ),
            ("Tokens", try Self.keys(Wire.Tokens(accessToken: "a", accessTokenExpiresAt: 1, refreshToken: "r", tokenType: "DPoP"))),
            ("Confirmation", try Self.keys(Wire.Confirmation(jkt: "j"))),
            (
                "Introspection",
                try Self.keys(
                    Wire.Introspection(
                        active: true, tokenType: "Bearer", iss: "i", aud: ["a"], sub: "s", exp: 1, iat: 2, jti: "j", deviceId: "d",
                        sid: "s", amr: ["hwk"], acr: "a",
                        att: Wire.AttestationClaim(fmt: "f", lvl: "l", app: "a", env: "e"), enr: "approval", clientId: "c",
                        cnf: Wire.Confirmation(jkt: "j")))
            ),
            ("JWKS", try Self.keys(Wire.JWKS(keys: []))),
            (
                "ServerMetadata",
                try Self.keys(
                    Wire.ServerMetadata(
                        issuer: "i", jwksURI: "j", introspectionEndpoint: "e", subjectTypesSupported: [], claimsSupported: [],
                        acrValuesSupported: []))
            ),
            ("RevokedDevices", try Self.keys(Wire.RevokedDevices(devices: 1, sessions: 2))),
            ("Event", try Self.keys(Wire.Event(id: "1", type: "device.enrolled", occurredAt: 1, userId: "u", deviceId: "d", reason: "r"))),
            (
                "Device",
                try Self.keys(
                    Wire.Device(
                        id: "i", name: "n", publicKey: "k", createdAt: 1, lastUsedAt: 2, revokedAt: 3, keyReplacedAt: 4,
                        keyReplacedBy: "recovery",
                        attestation: Wire.DeviceAttestation(format: "f", securityLevel: "s", appId: "a", environment: "e", verifiedAt: 5),
                        enrolledBy: "approval", passkey: Self.passkey))
            ),
            ("Passkey", try Self.keys(Self.passkey)),
            (
                "CrossDeviceStarted",
                try Self.keys(Wire.CrossDeviceStarted(id: "i", number: "42", pollToken: "p", expiresAt: 1, interval: 3))
            ),
            (
                "CrossDevicePollResult",
                try Self.keys(
                    Wire.CrossDevicePollResult(
                        status: "ended", endedBy: "collected",
                        session: Wire.Session(token: "t", sessionId: "s", userId: "u", deviceId: nil, expiresAt: 1), screenToken: "k"))
            ),
            (
                "CrossDeviceRequest",
                try Self.keys(Wire.CrossDeviceRequest(id: "i", text: "t", requester: "r", userAgent: "u", createdAt: 1, expiresAt: 2))
            ),
            (
                "PasskeyCreationOptions",
                try Self.keys(
                    Wire.PasskeyCreationOptions(
                        challengeId: "c", relyingPartyID: "r", relyingPartyName: "n", userHandle: Data(count: 32), userName: "u",
                        challenge: Data(count: 32), timeout: 1, excluded: [Data(count: 16)], userVerification: "required", algorithms: [-7])
                )
            ),
            (
                "PasskeyRequestOptions",
                try Self.keys(
                    Wire.PasskeyRequestOptions(
                        challengeId: "c", relyingPartyID: "r", challenge: Data(count: 32), timeout: 1, userVerification: "required"))
            ),
            (
                "DeviceAttestation",
                try Self.keys(Wire.DeviceAttestation(format: "f", securityLevel: "s", appId: "a", environment: "e", verifiedAt: 5))
            ),
            ("AttestationClaim", try Self.keys(Wire.AttestationClaim(fmt: "f", lvl: "l", app: "a", env: "e"))),
            ("AttestationChallenge", try Self.keys(Wire.AttestationChallenge(challenge: "c"))),
            (
                "SessionInfo",
                try Self.keys(Wire.SessionInfo(id: "i", kind: "device", deviceId: "d", createdAt: 1, expiresAt: 2, current: true))
            ),
            ("Approval", try Self.keys(Wire.Approval(approval: "a", expiresAt: 1))),
            ("Redeemed", try Self.keys(Wire.RedeemedApproval(userId: "u", deviceId: "d"))),
            ("Revoked", try Self.keys(Wire.RevokedSessions(revoked: 1))),
            ("AuditEvent", try Self.keys(Wire.AuditEntry(at: 1, kind: "k", deviceId: "d", reason: "r", count: 2))),
            ("SecurityEvent", try Self.keys(Wire.SecurityEvent(at: 1, kind: "k", deviceId: "d", client: "c"))),
            ("Created", try Self.keys(Wire.CreatedUser(username: "u"))),
            (
                "EnrolmentRequest",
                try Self.keys(
                    Wire.EnrolmentRequest(
                        id: "i", deviceId: "d", name: "n", publicKey: "k", replacing: false, approvalText: "t", status: "ended",
                        createdAt: 1, expiresAt: 2,
                        endedBy: "cancelled", bindingCode: "K3QF-7M2X"))
            ),
            ("Error", try Self.keys(Wire.ErrorBody(error: "e", field: "f", reason: "r"))),
            (
                "Challenge",
                try Self.keys(
                    ChallengeEnvelope(
                        try SignedMessage(
                            purpose: .stepUp, relyingPartyID: "rp", challengeID: Data(count: 16), nonce: Data(count: 32), userID: "u",
                            deviceID: "d",
                            expiresAt: 1, operationHash: Data(count: 32))))
            ),
        ]
        for (name, keys) in cases {
            let schema = try Self.component(name)
            #expect(schema.properties == keys, "\(name)")
            #expect(schema.required.isSubset(of: keys), "\(name)")
        }
    }
}

struct SchemaMissing: Error { let name: String }

extension WireDocumentTests {
    static let passkey = Wire.Passkey(synced: true, backedUp: false, format: "none", attestation: "none", aaguid: "a")
}
