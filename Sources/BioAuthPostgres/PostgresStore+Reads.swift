import BioAuthCore
import BioAuthSQL
import BioAuthServer
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import _ConnectionPoolModule
import Synchronization

/// The store's reads, each one statement of the SQL kit.
extension PostgresStore {
    // MARK: Reads

    public func device(id: DeviceID) async throws -> DeviceRecord? {
        try await read(Reads.device(id)).first.map { try DeviceRecord(row: $0) }
    }

    public func devices(userID: UserID) async throws -> [DeviceRecord] {
        try await read(Reads.devices(of: userID)).map { try DeviceRecord(row: $0) }
    }

    public func session(tokenHash: TokenHash) async throws -> SessionState? {
        try await read(Reads.sessionState(where: "s.token_hash = \(tokenHash)")).first.map(SessionState.init(row:))
    }

    public func session(id: SessionID) async throws -> SessionState? {
        try await read(Reads.sessionState(where: "s.id = \(id)")).first.map(SessionState.init(row:))
    }

    public func sessions(userID: UserID) async throws -> [SessionRecord] {
        try await read(Reads.sessions(of: userID)).map(SessionRecord.init(row:))
    }

    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await read(Reads.signingKeys).map(SigningKeyRecord.init(row:))
    }

    public func apiKey(secretHash: TokenHash) async throws -> ApiKeyRecord? {
        try await read(Reads.apiKey(secretHash: secretHash)).first.map(ApiKeyRecord.init(row:))
    }

    public func apiKeys() async throws -> [ApiKeyRecord] {
        try await read(Reads.apiKeys).map(ApiKeyRecord.init(row:))
    }

    public func enrolmentRequest(id: EnrolmentRequestID) async throws -> EnrolmentRequestRecord? {
        try await read(Reads.enrolmentRequest(id, locked: false)).first.map(EnrolmentRequestRecord.init(row:))
    }

    public func enrolmentRequests(userID: UserID, now: Date) async throws -> [EnrolmentRequestRecord] {
        try await read(Reads.enrolmentRequests(of: userID, now: now)).map(EnrolmentRequestRecord.init(row:))
    }

    public func crossDeviceRequest(id: CrossDeviceRequestID) async throws -> CrossDeviceRequestRecord? {
        try await read(Reads.crossDeviceRequest(id, locked: false)).first.map(CrossDeviceRequestRecord.init(row:))
    }

    public func pendingCrossDeviceRequests(userID: UserID, now: Date, limit: Int) async throws -> [CrossDeviceRequestRecord] {
        try await read(Reads.pendingCrossDeviceRequests(of: userID, now: now, limit: limit)).map(CrossDeviceRequestRecord.init(row:))
    }

    public func deviceRemovals(userID: UserID) async throws -> [DeviceRemovalRecord] {
        try await read(Reads.deviceRemovals(of: userID)).map(DeviceRemovalRecord.init(row:))
    }

    public func dueDeviceRemovals(now: Date, limit: Int) async throws -> [DeviceRemovalRecord] {
        try await read(Reads.dueDeviceRemovals(now: now, limit: limit)).map(DeviceRemovalRecord.init(row:))
    }

    public func auditEvents(userID: UserID?, limit: Int) async throws -> [AuditEvent] {
        try await read(Reads.auditEvents(of: userID, limit: limit)).map { try AuditEvent(row: $0) }
    }

    /// Runs a read written once for both stores outside a transaction, its rows ready to decode.
    func read(_ statement: SQL) async throws -> [PostgresStoredRow] {
        try await rows(PostgresQuery(statement)).map(PostgresStoredRow.init)
    }

    /// The first row of a statement run on `c`, decoded; nil for no row.
    func first<Record>(_ statement: SQL, _ c: PostgresConnection, _ decode: (PostgresStoredRow) throws -> Record) async throws -> Record? {
        try await rows(statement, c).first.map { try decode(PostgresStoredRow($0)) }
    }

    func isLockedOut(_ lockout: LockoutQuery, _ c: PostgresConnection) async throws -> Bool {
        let count = try await run(ClientFailuresStatement(lockout: lockout), c).first.map { try $0.decode(Int32.self) } ?? 0
        return lockout.isLockedOut(clientCount: Int(count))
    }
}
