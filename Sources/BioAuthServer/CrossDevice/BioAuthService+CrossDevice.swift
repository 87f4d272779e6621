import Foundation

// MARK: Cross-device sign-in

extension BioAuthService {
    /// Starts a sign-in on another screen for `username` (``CrossDeviceRequestRecord``): the
    /// screen shows the number and polls with the token. The same answer whether or not the user
    /// exists. `screenToken`: what a phone's earlier approval gave this screen, so that it is
    /// listed and announced as the user's own. 404 when ``ServerConfiguration/crossDevice`` is
    /// nil; 429 past the requester's pending requests for the user.
    public func startCrossDeviceSignIn(username: String, userAgent: String?, screenToken: String? = nil, request: RequestInfo)
        async throws(ServerError) -> NewCrossDeviceRequest
    {
        try await CrossDeviceSignIn(context: context).start(
            username: username, userAgent: userAgent, screenToken: screenToken, request: request)
    }

    /// The screen's poll: pending, the ``SessionKind/crossDevice`` session once a phone approved
    /// (handed out once), or ended. 404 for an unknown request or another poll token.
    public func collectCrossDeviceSignIn(id: CrossDeviceRequestID, pollToken: String, request: RequestInfo) async throws(ServerError)
        -> CrossDeviceCollection
    {
        try await CrossDeviceSignIn(context: context).collect(id: id, pollToken: pollToken, request: request)
    }

    /// The requests waiting for one of the session's user's phones.
    public func pendingCrossDeviceRequests(of session: SessionRecord, request: RequestInfo) async throws(ServerError)
        -> [CrossDeviceRequestRecord]
    {
        try await CrossDeviceSignIn(context: context).pending(of: session, request: request)
    }

    /// Lets the request in with a step-up approval over `CrossDeviceApprovalText.signed(_:number:)`
    /// from a device out of its cool-down. An approval of anything else — another number — ends
    /// the request.
    public func approveCrossDeviceRequest(id: CrossDeviceRequestID, approval: String, session: SessionRecord, request: RequestInfo)
        async throws(ServerError)
    {
        try await CrossDeviceSignIn(context: context).approve(id: id, approval: approval, session: session, request: request)
    }

    /// Refuses a pending request: the screen's next poll finds it ended.
    public func denyCrossDeviceRequest(id: CrossDeviceRequestID, session: SessionRecord, request: RequestInfo) async throws(ServerError) {
        try await CrossDeviceSignIn(context: context).deny(id: id, session: session, request: request)
    }
}
