extension Wire {
    /// `POST /v1/cross-device/requests`: a screen asks a user's phone to let it in.
    public struct CrossDeviceStart: WireRequest, Hashable, WireRedacted {
        public var username: String
        /// The screen token a phone's approval gave this screen before (``CrossDevicePollResult/screenToken``):
        /// the request is then the owner's own screen's, listed and announced before strangers'.
        public var screenToken: String?
        public init(username: String, screenToken: String? = nil) {
            self.username = username
            self.screenToken = screenToken
        }
        public enum CodingKeys: String, CodingKey, CaseIterable { case username, screenToken }
        public var visibleFields: KeyValuePairs<String, Any> { ["username": username] }
    }

    /// The answer to ``CrossDeviceStart``, for the asking screen only: the number it shows and
    /// the token it polls with.
    public struct CrossDeviceStarted: Codable, Sendable, Hashable, WireRedacted {
        public var id: String
        /// Four digits the user types on the phone.
        public var number: String
        /// 32 bytes, base64url: whoever holds it collects the session.
        public var pollToken: String
        public var expiresAt: Int64
        /// Seconds between polls.
        public var interval: Int
        public init(id: String, number: String, pollToken: String, expiresAt: Int64, interval: Int) {
            self.id = id
            self.number = number
            self.pollToken = pollToken
            self.expiresAt = expiresAt
            self.interval = interval
        }
        public var visibleFields: KeyValuePairs<String, Any> { ["id": id, "expiresAt": expiresAt, "interval": interval] }
    }

    /// `POST /v1/cross-device/requests/{id}/poll`: the screen's token.
    public struct CrossDevicePoll: WireRequest, Hashable, WireRedacted {
        public var pollToken: String
        public init(pollToken: String) { self.pollToken = pollToken }
        public enum CodingKeys: String, CodingKey, CaseIterable { case pollToken }
        public var visibleFields: KeyValuePairs<String, Any> { [:] }
    }

    /// What a poll found: `pending`; `approved` with the session (handed out once); or `ended`
    /// with `endedBy` — `collected`, `denied`, `wrongNumber` or `expired`.
    public struct CrossDevicePollResult: Codable, Sendable, Hashable, WireRedacted {
        public var status: String
        public var endedBy: String?
        public var session: Session?
        /// With `approved`: 32 bytes, base64url, that this screen keeps and sends with its next
        /// request for the user (``CrossDeviceStart/screenToken``), for 90 days.
        public var screenToken: String?
        public init(status: String, endedBy: String? = nil, session: Session? = nil, screenToken: String? = nil) {
            self.status = status
            self.endedBy = endedBy
            self.session = session
            self.screenToken = screenToken
        }
        public var visibleFields: KeyValuePairs<String, Any> { ["status": status, "endedBy": endedBy as Any] }

        /// Where the request stands, typed (nil for a status this version does not know).
        public var state: State? { State(rawValue: status) }
        /// Why it ended, typed (nil while it has not, or for an ending this version does not know).
        public var ending: Ending? { endedBy.flatMap(Ending.init(rawValue:)) }

        /// `status`'s values.
        public enum State: String, Sendable, Hashable, CaseIterable {
            /// No phone has answered yet: poll again after `interval` seconds.
            case pending
            /// A phone let the screen in: `session` is its session, handed out this once.
            case approved
            /// Over: `endedBy` says why.
            case ended
        }

        /// `endedBy`'s values.
        public enum Ending: String, Sendable, Hashable, CaseIterable {
            /// The session was collected already.
            case collected
            /// A phone refused it.
            case denied
            /// A phone's approval signed another number: start again.
            case wrongNumber
            /// No phone answered in time.
            case expired
        }
    }

    /// A sign-in waiting for a phone (`GET /v1/cross-device/requests`): what the phone shows.
    public struct CrossDeviceRequest: Codable, Sendable, Hashable {
        public var id: String
        /// The text the phone shows and signs, the number appended
        /// (`CrossDeviceApprovalText.signed(_:number:)`).
        public var text: String
        /// The address that asked, as the server saw it.
        public var requester: String
        /// Its `User-Agent`, trimmed.
        public var userAgent: String
        public var createdAt: Int64
        public var expiresAt: Int64
        public init(id: String, text: String, requester: String, userAgent: String, createdAt: Int64, expiresAt: Int64) {
            self.id = id
            self.text = text
            self.requester = requester
            self.userAgent = userAgent
            self.createdAt = createdAt
            self.expiresAt = expiresAt
        }
    }
}
