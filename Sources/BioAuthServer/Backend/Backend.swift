import BioAuthCore
import Foundation
import Logging
import Metrics

/// What the app's backend does with an API key, and the keys themselves: enrolment grants for
/// users whose login the backend owns.
struct Backend: Flow {
    let context: FlowContext

    func issueEnrolmentGrant(userID: UserID, request: RequestInfo) async throws(ServerError) -> SessionGrant {
        let userID = try Validate.userID(userID)
        let (session, token) = newSession(
            user: userID, device: nil, kind: .enrolmentGrant, ttl: configuration.enrolment.grantTTL, at: clock.now())
        let audit = event(.enrolmentGrantIssued, user: userID, request: request)
        try await openBackendSession(session, audit: audit, request: request)
        log(audit, request: request)
        return SessionGrant(token: token, session: session)
    }

    func createApiKey(name: String, scopes: Set<ApiKeyScope>, request: RequestInfo) async throws(ServerError) -> (
        record: ApiKeyRecord, secret: ApiKeySecret
    ) {
        let name = try Validate.deviceName(name)
        let secret = ApiKeySecret()
        let record = ApiKeyRecord(
            id: ApiKeyID("key_" + SecretBytes.random(count: 8).data.hexString), name: name, secretHash: secret.hash, scopes: scopes,
            createdAt: clock.now())
        let audit = event(.apiKeyCreated, reason: .key(record.id.rawValue), request: request)
        _ = try await run(request) { try await self.writer.apply(.createApiKey(record, audit: audit)) }
        log(audit, request: request)
        return (record, secret)
    }

    func apiKeys(request: RequestInfo) async throws(ServerError) -> [ApiKeyRecord] {
        try await run(request) { try await self.store.apiKeys() }
    }

    func revokeApiKey(id: ApiKeyID, request: RequestInfo) async throws(ServerError) {
        let audit = event(.apiKeyRevoked, reason: .key(id.rawValue), request: request)
        let plan = WritePlan.revokeApiKey(id: id, at: clock.now(), audit: audit)
        guard try await run(request, { try await self.writer.apply(plan) }).wasApplied else {
            throw ServerError(.notFound, field: "id")
        }
        log(audit, request: request)
    }

    /// The key `presented`, verified, with `scope`, counted once against the key's own budget
    /// (``ApiKeyLimiter``): 429 when it is spent. A missing, unknown or revoked key pays the
    /// sending address's request limit instead (guessing keys is anonymous traffic), and an
    /// address over that limit gets no key looked up.
    func authenticate(apiKey presented: String?, scope: ApiKeyScope, request: RequestInfo) async throws(ServerError) -> ApiKeyRecord {
        var anonymous = request
        anonymous.apiKeyID = nil
        let now = clock.now()
        if let retryAfter = await context.requests.refusal(anonymous.requestSubject, at: now) {
            metrics.rateLimited.increment()
            throw ServerError(.rateLimited, retryAfter: retryAfter)
        }
        let secret = presented.flatMap(ApiKeySecret.init(presented:))
        let record: ApiKeyRecord?
        if let secret { record = try await run(request) { try await self.store.apiKey(secretHash: secret.hash) } } else { record = nil }
        guard let record, record.revokedAt == nil else {
            try await admit(anonymous)
            await audit(.apiKeyRejected, reason: AuditReason(FailureReason.unknownApiKey), request: request)
            throw ServerError.authenticationFailed(.unknownApiKey)
        }
        if let retryAfter = context.apiKeyRequests.admit(record.id, at: now) {
            metrics.rateLimited.increment()
            throw ServerError(.rateLimited, retryAfter: retryAfter)
        }
        guard record.scopes.contains(scope) else {
            var request = request
            request.apiKeyID = record.id
            await audit(.apiKeyRejected, reason: AuditReason(FailureReason.apiKeyScope), request: request)
            throw ServerError(.forbidden, detail: "apiKeyScope")
        }
        return record
    }
}

extension WritePlan {
    /// Revokes an active API key: every instance refuses it from the next request.
    package static func revokeApiKey(id: ApiKeyID, at: Date, audit: AuditEvent) -> WritePlan {
        var plan = WritePlan()
        plan.require(.activeApiKey(id: id))
        plan.add(.revokeApiKey(id: id, at: at))
        plan.audit(audit)
        return plan
    }
}
