import BioAuthCore
import Foundation

/// A signing key as an operator sees it (`bioauth-server keys list`): never the key itself.
public struct SigningKeyStatus: Sendable, Hashable {
    public enum State: String, Sendable, Hashable {
        /// Signs new access tokens now.
        case signing
        /// Published and not signing: a newer key waiting out its pre-publication, or an older
        /// one whose tokens may still live.
        case published
        /// Past its publication window: the next sweep deletes it.
        case expired
        /// Stored in a form this deployment cannot open (``SigningKeyUnavailable``): never used
        /// or published. Retire it.
        case unusable
    }
    public var id: String
    public var createdAt: Date
    public var state: State
    /// How it is stored (``StoredSigningKey/Form``).
    public var form: StoredSigningKey.Form
}

/// The operator's commands on signing keys (`bioauth-server keys`): list, rotate now, retire one
/// (emergency revocation of a leaked key). The sweep retires keys past their publication window.
struct SigningKeys: Flow {
    let context: FlowContext

    func list(request: RequestInfo) async throws(ServerError) -> [SigningKeyStatus] {
        let records = try await run(request) { try await self.store.signingKeys() }
        let now = clock.now(), policy = configuration.tokens
        var usable: [SigningKeyRecord] = []
        for record in records where (try? await policy.signingKeys.sealer.open(record.storedKey, keyID: record.id)) != nil {
            usable.append(record)
        }
        let signer = usable.isEmpty ? nil : AccessTokenIssuer.signingKey(of: usable, at: now, prePublication: policy.prePublication)
        let published = Set(usable.isEmpty ? [] : AccessTokenIssuer.publishable(usable, at: now, policy: policy).map(\.id))
        return records.map { record in
            let state: SigningKeyStatus.State =
                if !usable.contains(record) { .unusable } else if record.id == signer?.id { .signing } else if published.contains(record.id)
                { .published } else {
                    .expired
                }
            return SigningKeyStatus(id: record.id, createdAt: record.createdAt, state: state, form: StoredSigningKey(record.storedKey).form)
        }
    }

    /// Adds a new key now, sealed by the deployment's protection: every instance publishes it at
    /// its next reload (within a minute) and signs with it once it is two minutes old.
    func rotate(request: RequestInfo) async throws(ServerError) -> SigningKeyRecord {
        let now = clock.now()
        let protection = configuration.tokens.signingKeys
        let key = try await run(request) { try await SigningKeyRecord.generate(at: now, protection: protection) }
        let audit = event(.signingKeyAdded, reason: .key(key.id), request: request)
        _ = try await run(request) { try await self.writer.apply(.addSigningKey(key, audit: audit)) }
        log(audit, request: request)
        return key
    }

    /// Deletes one key (404 for an unknown id): no instance signs with or publishes it after its
    /// next reload, and tokens it signed stop verifying. With no key left, the next token
    /// creates one.
    func retire(id: String, request: RequestInfo) async throws(ServerError) {
        guard try await run(request, { try await self.store.signingKeys() }).contains(where: { $0.id == id }) else {
            throw ServerError(.notFound, field: "id")
        }
        let audit = event(.signingKeyRetired, reason: .key(id), request: request)
        _ = try await run(request) { try await self.writer.apply(.retireSigningKeys([id], audit: [audit])) }
        log(audit, request: request)
    }

    /// Retires every key past its publication window (the signing key never); their number.
    func sweep() async throws -> Int {
        let keys = try await store.signingKeys()
        guard !keys.isEmpty else { return 0 }
        let now = clock.now()
        let kept = Set(AccessTokenIssuer.publishable(keys, at: now, policy: configuration.tokens).map(\.id))
        let expired = keys.map(\.id).filter { !kept.contains($0) }
        guard !expired.isEmpty else { return 0 }
        let audit = expired.map { AuditEvent(at: now, kind: .signingKeyRetired, reason: .key($0), clientAddress: "sweep") }
        _ = try await writer.apply(.retireSigningKeys(expired, audit: audit))
        return expired.count
    }
}
