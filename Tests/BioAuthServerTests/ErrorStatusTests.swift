@testable import BioAuthHTTP
import BioAuthServer
import Foundation
import HTTPTypes
import Hummingbird
import Testing

/// Issue 46 item 3: each error code declares its HTTP status, so none falls through to a 500, and
/// the codes are the ones `openapi.yaml` promises.
struct ErrorStatusTests {
    static let codes: [ServerError.Code] = [
        .invalidRequest, .authenticationFailed, .forbidden, .approvalRequired, .notFound, .conflict, .gone, .attestationRejected,
        .methodNotAllowed, .payloadTooLarge, .unsupportedMediaType, .rateLimited, .internalError, .unavailable, .invalidDPoPProof,
        .useDPoPNonce,
    ]

    @Test func everyCodeIsAnsweredWithTheStatusItDeclares() throws {
        for code in Self.codes {
            let response = ErrorMapping<BasicBioAuthRequestContext>.response(ServerError(code))
            #expect(Int(response.status.code) == code.status, "\(code)")
            #expect((400...599).contains(code.status) && (code.status >= 500) == [.internalError, .unavailable].contains(code), "\(code)")
        }
        let documented = try #require(OpenAPIDocument.yaml.firstMatch(of: #/error: \{type: string, enum: \[([^\]]+)\]/#)).1
        let names = Set(documented.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        #expect(names == Set(Self.codes.map(\.description)))
    }
}
