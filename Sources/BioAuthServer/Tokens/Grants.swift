import BioAuthCore
import Foundation

/// A session token handed to the client once. The server keeps only its SHA-256.
/// Its description omits the token.
public struct SessionGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var token: String
    public var session: SessionRecord
    /// A device session's access and refresh tokens; nil for other sessions.
    public var tokens: TokenGrant?

    public init(token: String, session: SessionRecord, tokens: TokenGrant? = nil) {
        self.token = token
        self.session = session
        self.tokens = tokens
    }

    public var description: String { "SessionGrant(session: \(session.id), user: \(session.userID), token: redacted)" }
    public var debugDescription: String { description }
    /// `dump()` and debuggers see the session, not the token.
    public var customMirror: Mirror { Mirror(self, children: ["session": session, "token": "redacted"]) }
}

/// A one-time step-up approval handed to the client once. The server keeps only its SHA-256.
/// Its description omits the approval.
public struct ApprovalGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var approval: String
    public var record: ApprovalRecord

    public var description: String { "ApprovalGrant(user: \(record.userID), device: \(record.deviceID), approval: redacted)" }
    public var debugDescription: String { description }
    /// `dump()` and debuggers see the record, not the approval.
    public var customMirror: Mirror { Mirror(self, children: ["record": record, "approval": "redacted"]) }
}
