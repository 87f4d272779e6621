import BioAuthAttestation
import BioAuthCore
import BioAuthServer
import Foundation

// The server's side of `Wire`: building response bodies from records.

extension Wire.Session {
    init(_ grant: SessionGrant) {
        self.init(
            token: grant.token, sessionId: grant.session.id.rawValue, userId: grant.session.userID.rawValue,
            deviceId: grant.session.deviceID?.rawValue,
            expiresAt: grant.session.expiresAt.seconds, accessToken: grant.tokens?.accessToken,
            accessTokenExpiresAt: grant.tokens?.accessTokenExpiresAt.seconds,
            refreshToken: grant.tokens?.refreshToken,
            tokenType: grant.tokens.map { $0.dpopBound ? "DPoP" : "Bearer" } ?? (grant.session.dpopThumbprint == nil ? nil : "DPoP"))
    }
}

extension Wire.Tokens {
    init(_ grant: TokenGrant) {
        self.init(
            accessToken: grant.accessToken, accessTokenExpiresAt: grant.accessTokenExpiresAt.seconds, refreshToken: grant.refreshToken,
            tokenType: grant.dpopBound ? "DPoP" : "Bearer")
    }
}

extension Wire.Introspection {
    init(_ token: VerifiedAccessToken?) {
        guard let token else {
            self.init(active: false)
            return
        }
        self.init(
            active: true, tokenType: token.dpopThumbprint == nil ? "Bearer" : "DPoP", iss: token.issuer, aud: token.audience,
            sub: token.subject, exp: token.expiresAt.seconds,
            iat: token.issuedAt.seconds, jti: token.tokenID, deviceId: token.deviceID.rawValue, sid: token.sessionID.rawValue,
            amr: token.methods,
            acr: token.authenticationClass, att: token.attestation, enr: token.enrolment, clientId: token.clientID,
            cnf: token.dpopThumbprint.map(Wire.Confirmation.init(jkt:)))
    }
}

extension Wire.JWKS {
    init(_ keys: [PublishedKey]) {
        self.init(keys: keys.map { Wire.JWK(kid: $0.id, x: $0.coordinates.x, y: $0.coordinates.y) })
    }
}

extension Wire.Device {
    init(_ device: DeviceRecord) {
        self.init(
            id: device.id.rawValue, name: device.name, publicKey: Base64URL.encode(device.publicKey), createdAt: device.createdAt.seconds,
            lastUsedAt: device.lastUsedAt?.seconds, revokedAt: device.revokedAt?.seconds, keyReplacedAt: device.keyReplacedAt?.seconds,
            keyReplacedBy: device.keyReplacement?.rawValue,
            attestation: device.credential.attestation.map {
                Wire.DeviceAttestation(
                    format: $0.format.rawValue, securityLevel: $0.securityLevel.rawValue, appId: $0.appID, environment: $0.environment,
                    verifiedAt: $0.verifiedAt.seconds)
            }, enrolledBy: device.enrolledBy?.rawValue,
            passkey: device.credential.passkey.map {
                Wire.Passkey(
                    synced: $0.backupEligible, backedUp: $0.backedUp, format: $0.format, attestation: $0.attestation.rawValue,
                    aaguid: Self.uuidText($0.aaguid))
            })
    }
}

extension Wire.Device {
    /// 16 bytes as a UUID's text (`8-4-4-4-12` lower-case hex).
    static func uuidText(_ bytes: Data) -> String {
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        var text = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { text.append("-") }
            text.append(character)
        }
        return text
    }
}

extension Date {
    var seconds: Int64 { Int64(timeIntervalSince1970.rounded(.down)) }
}

extension Wire.EnrolmentRequest {
    init(_ record: EnrolmentRequestRecord) {
        self.init(
            id: record.id.rawValue, deviceId: record.deviceID.rawValue, name: record.name, publicKey: Base64URL.encode(record.publicKey),
            replacing: record.replacing,
            approvalText: record.approvalText, status: record.hasEnded ? "ended" : record.isApproved ? "approved" : "pending",
            createdAt: record.createdAt.seconds,
            expiresAt: record.expiresAt.seconds, endedBy: record.ending?.rawValue)
    }
}

extension Wire.DeviceRemoval {
    init(_ record: DeviceRemovalRecord, at now: Date) {
        self.init(
            id: record.id.rawValue, deviceId: record.deviceID.rawValue, status: record.status(at: now).rawValue,
            createdAt: record.createdAt.seconds,
            codeExpiresAt: record.codeExpiresAt.seconds, executesAt: record.executesAt?.seconds, endedBy: record.ending?.rawValue)
    }
}

extension Wire.SessionInfo {
    init(_ session: SessionRecord, current: Bool) {
        self.init(
            id: session.id.rawValue, kind: session.kind.rawValue, deviceId: session.deviceID?.rawValue,
            createdAt: session.createdAt.seconds,
            expiresAt: session.expiresAt.seconds, current: current)
    }
}
