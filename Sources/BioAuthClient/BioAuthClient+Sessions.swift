import BioAuth
import BioAuthCore
import Crypto
import Foundation

/// The user's devices and this phone's session: listing, revoking, tokens, DPoP proofs, logging out.
extension BioAuthClient {
    // MARK: - Devices and sessions

    /// The user's devices, this one marked.
    public func devices() async throws(ClientError) -> [RegisteredDevice] {
        let session = try currentSession()
        let thisDevice = try storage.registration()?.deviceID
        let devices = try await authorized { () async throws(ClientError) in try await api.devices(token: session) }
        return try devices.map { device throws(ClientError) in try RegisteredDevice(device, thisDevice: thisDevice) }
    }

    /// Revokes a device of the user; it can never sign in again. Revoking this phone also forgets
    /// its registration and session and deletes its key, which the server no longer accepts.
    public func revoke(device id: String) async throws(ClientError) {
        let session = try currentSession()
        try await authorized { () async throws(ClientError) in try await api.revokeDevice(id: id, token: session) }
        if try storage.registration()?.deviceID == id {
            defer { publishState() }
            endBiometricSession()
            try storage.forgetSession()
            try storage.forgetPending()
            try storage.forgetRegistration()
            try storage.forgetKeyRecord()
            signer.deleteKey()
            api.dpop?.key.deleteKey()
        }
    }

    /// A DPoP proof (RFC 9449) for one of your own API requests: `method` and `url` (without query
    /// and fragment) of the request, and the access token it carries (``AccessToken/token``, sent
    /// as `Authorization: DPoP …` when ``BearerToken/isDPoPBound``). Signed by the device's proof
    /// key, without a prompt; your service checks it as `docs/Clients.md` §9 shows.
    ///
    /// - Throws: ``ClientError/Code/notEnrolled`` when this device has no proof key (DPoP is off
    ///   in ``Configuration/proofKeyTag``, or nothing is enrolled: tokens are bearer tokens).
    public func dpopProof(method: String, url: String, accessToken: AccessToken? = nil) throws(ClientError) -> String {
        guard let key = api.dpop?.key, key.hasKey else { throw ClientError(.notEnrolled) }
        do { return try key.proof(method: method, url: url, at: configuration.clock.now(), accessToken: accessToken?.token.value) } catch {
            throw ClientError(device: error)
        }
    }

    /// Ends the device session on the server and forgets it here. A session the server no longer
    /// knows counts as ended; an unreachable server keeps it here (the call can be retried).
    public func logOut() async throws(ClientError) {
        defer { publishState() }
        endBiometricSession()
        guard let session = try storage.session() else { return }
        do { try await api.logout(token: BearerToken(session.token, dpopBound: session.tokenType == "DPoP")) } catch
            where error.code == .authenticationFailed
        {}
        try storage.forgetSession()
    }

    /// An access token for your other services — an ES256 JWT they verify with the server's
    /// `/.well-known/jwks.json` — valid for at least `minTTL` more seconds. An expiring one is
    /// replaced with the stored refresh token, which is replaced too (each works once); no prompt.
    /// Concurrent callers share one refresh: the server never sees the same refresh token twice
    /// from this phone (it would read that as theft and end the session).
    ///
    /// - Throws: ``ClientError/Code-swift.struct/sessionExpired`` when there is no session or the
    ///   server refused the refresh token (log in again); ``ClientError/Code/credentialsUnavailable``
    ///   while the device is locked.
    public func accessToken(minTTL: TimeInterval = 30) async throws(ClientError) -> AccessToken {
        guard let stored = try storage.session(), stored.deviceId != nil, Date(seconds: stored.expiresAt) > configuration.clock.now() else {
            throw ClientError(.sessionExpired)
        }
        if let token = stored.accessToken, let expiry = stored.accessTokenExpiresAt,
            Date(seconds: expiry) > configuration.clock.now().addingTimeInterval(minTTL)
        {
            return AccessToken(token: BearerToken(token, dpopBound: stored.tokenType == "DPoP"), expiresAt: Date(seconds: expiry))
        }
        if let refreshing { return try await refreshing.value.get() }
        let refresh = Task { await self.refreshTokens(stored) }
        refreshing = refresh
        let result = await refresh.value
        refreshing = nil
        return try result.get()
    }

    /// The one refresh of ``accessToken(minTTL:)``: spends the stored refresh token, keeps the new ones.
    func refreshTokens(_ stored: Wire.Session) async -> Result<AccessToken, ClientError> {
        defer { publishState() }
        var stored = stored
        guard let refreshToken = stored.refreshToken else { return .failure(ClientError(.sessionExpired)) }
        do {
            let tokens = try await authorized { () async throws(ClientError) in
                try await api.refresh(Wire.RefreshRequest(refreshToken: refreshToken))
            }
            stored.accessToken = tokens.accessToken
            stored.accessTokenExpiresAt = tokens.accessTokenExpiresAt
            stored.refreshToken = tokens.refreshToken
            stored.tokenType = tokens.tokenType ?? stored.tokenType
            try storage.save(stored)
            return .success(
                AccessToken(
                    token: BearerToken(tokens.accessToken, dpopBound: tokens.tokenType == "DPoP"),
                    expiresAt: Date(seconds: tokens.accessTokenExpiresAt)))
        } catch { return .failure(error) }
    }

    /// The stored device session, if it has not expired.
    public func session() throws(ClientError) -> DeviceSession? {
        guard let stored = try storage.session(), let session = DeviceSession(stored), session.expiresAt > configuration.clock.now() else {
            return nil
        }
        return session
    }
}
