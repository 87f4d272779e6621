import BioAuthCore
import BioAuthServer
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// What the routes read from a request: its `RequestInfo` (client address, DPoP), the session
/// its token names, and path ids.
extension BioAuthRoutes {
    func info(_ request: Request, _ context: some BioAuthRequestContext) -> RequestInfo {
        // Every X-Forwarded-For line, in order: a proxy may add its own line instead of appending.
        let forwarded = request.headers[values: .init("X-Forwarded-For")!]
        let address = ClientAddressResolver(trustedProxies: options.trustedProxies)
            .subjects(peer: context.remoteAddress?.ipAddress, forwardedFor: forwarded.isEmpty ? nil : forwarded.joined(separator: ","))
        return RequestInfo(
            clientAddress: address.client, requestSubject: address.requests, requestID: context.bioAuth.requestID,
            apiKeyID: context.bioAuth.apiKey?.id, logger: context.logger, dpop: dpop(request))
    }

    /// The request's `DPoP` header with the method and URL a proof must name (RFC 9449 §4.3):
    /// nil when it carries neither that header nor an `Authorization: DPoP` token.
    func dpop(_ request: Request) -> DPoPPresentation? {
        let proofs = request.headers[values: HTTPField.Name("DPoP")!]
        let scheme = request.headers[.authorization].map { $0.count > 5 && $0.prefix(5).lowercased() == "dpop " } ?? false
        guard !proofs.isEmpty || scheme else { return nil }
        // More than one DPoP header is refused (§4.3 step 1): an empty proof fails to parse.
        let url = service.configuration.dpop.expectedURL(host: request.head.authority, path: request.uri.path)
        return DPoPPresentation(proof: proofs.count == 1 ? proofs[0] : "", method: request.method.rawValue, url: url, dpopScheme: scheme)
    }

    /// The session a request's bearer token names (401 otherwise, audited by the service).
    func authenticate(_ request: Request, _ context: some BioAuthRequestContext) async throws -> (SessionRecord, RequestInfo) {
        let info = info(request, context)
        return (try await service.authenticate(token: bearerToken(request), request: info), info)
    }

    /// The token of an `Authorization: Bearer` header. The scheme is case-insensitive (RFC 9110
    /// §11.1); the token is not.
    func bearerToken(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        if header.count > 7, header.prefix(7).lowercased() == "bearer " { return String(header.dropFirst(7)) }
        // A DPoP-bound session's token (RFC 9449 §7.1); the service checks the proof that comes with it.
        if header.count > 5, header.prefix(5).lowercased() == "dpop " { return String(header.dropFirst(5)) }
        return nil
    }
}

/// The path parameter `name` as an id, percent-decoded (a user id's `@` arrives as `%40`); ""
/// when absent or not decodable, which validation refuses.
func pathID<Record>(_ context: some RequestContext, _ name: String = "id") -> RecordID<Record> {
    RecordID(context.parameters.get(name)?.removingPercentEncoding ?? "")
}
