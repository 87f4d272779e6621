import BioAuth
import BioAuthAttestation
import BioAuthClient
import BioAuthCore
import BioAuthEmulator
import BioAuthServer
import BioAuthTestServer
import Crypto
import Foundation
import Logging
import Synchronization

/// A transport that remembers what was sent and can rewrite answers: the demo's man in the middle.
final class Wiretap: BioAuthTransport {
    typealias Tamper = @Sendable (TransportRequest, TransportResponse) -> TransportResponse
    let inner: any BioAuthTransport
    private let sent = Mutex<[String: TransportRequest]>([:])
    private let tamperer = Mutex<Tamper?>(nil)

    init(_ inner: any BioAuthTransport) { self.inner = inner }

    var tamper: Tamper? {
        get { tamperer.withLock { $0 } }
        set { tamperer.withLock { $0 = newValue } }
    }

    /// The last request sent to `path`.
    func last(_ path: String) -> TransportRequest? { sent.withLock { $0[path] } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        sent.withLock { $0[request.path] = request }
        let response = try await inner.send(request)
        return tamper?(request, response) ?? response
    }
}
