import BioAuthCore
import BioAuthServer
import Foundation

// The server's side of `Wire`: building response bodies from records.

extension Wire.Session {
    init(_ grant: SessionGrant) {
        self.init(
            token: grant.token, sessionId: grant.session.id, userId: grant.session.userID, deviceId: grant.session.deviceID,
            expiresAt: grant.session.expiresAt.seconds)
    }
}

extension Wire.Device {
    init(_ device: DeviceRecord) {
        self.init(
            id: device.id, name: device.name, publicKey: Base64URL.encode(device.publicKey), createdAt: device.createdAt.seconds,
            lastUsedAt: device.lastUsedAt?.seconds, revokedAt: device.revokedAt?.seconds)
    }
}

extension Date {
    var seconds: Int64 { Int64(timeIntervalSince1970.rounded(.down)) }
}

extension Wire.EnrolmentRequest {
    init(_ record: EnrolmentRequestRecord) {
        self.init(
            id: record.id, deviceId: record.deviceID, name: record.name, publicKey: Base64URL.encode(record.publicKey), replacing: record.replacing,
            approvalText: record.approvalText, status: record.isApproved ? "approved" : "pending", createdAt: record.createdAt.seconds,
            expiresAt: record.expiresAt.seconds)
    }
}
