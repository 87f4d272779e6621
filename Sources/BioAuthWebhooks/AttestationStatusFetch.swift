import AsyncHTTPClient
import BioAuthAttestation
import Foundation
import NIOCore
import NIOHTTP1

/// The server's other outbound HTTP: fetching the attestation status list
/// (`bioauth-server --android-attestation-status https://…`, `bioauth attestation status update`).
/// A 30 s bound, 200 only, at most `AttestationStatusSource.maximumSize` bytes.
public let attestationStatusFetch: AttestationStatusFetch = { url in
    var request = HTTPClientRequest(url: url.absoluteString)
    request.headers.add(name: "Accept", value: "application/json")
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
    guard response.status == .ok else { throw AttestationStatusListError("\(url.absoluteString) answered \(response.status.code)") }
    return Data(try await response.body.collect(upTo: AttestationStatusSource.maximumSize).readableBytesView)
}
