import BioAuth
import BioAuthCore
import Foundation
import Synchronization

/// Signs the DPoP proofs (RFC 9449) ``ServerAPI`` sends with the device's proof key
/// (`DeviceProofKey`: no prompt), and remembers the nonce the server last asked for.
public final class DPoPProver: Sendable {
    public let key: DeviceProofKey
    let clock: any WallClock
    private let latestNonce = Mutex<String?>(nil)

    public init(key: DeviceProofKey, clock: any WallClock = SystemWallClock()) {
        self.key = key
        self.clock = clock
    }

    /// The signing of one request's proof, with `ath` for `accessToken`; nil while the device
    /// has no proof key (its requests then go without DPoP).
    func signing(method: String, accessToken: String?) -> DPoPSigning? {
        guard key.hasKey else { return nil }
        let nonce = latestNonce.withLock { $0 }
        // The key is read again when the proof is signed, not captured now: a signing kept and
        // used after the key was replaced (a re-enrolment) still names the key that signs.
        return DPoPSigning { [key, clock] url in
            try key.proof(method: method, url: url, at: clock.now(), accessToken: accessToken, nonce: nonce)
        }
    }

    /// The nonce the server asked for (`DPoP-Nonce`), for the next proofs.
    func remember(nonce: String) { latestNonce.withLock { $0 = nonce } }
}

extension ServerAPI {
    /// Sends a request that carries a DPoP proof when the prover has a key — always at the token
    /// endpoints (`atTokenEndpoint`), and with a DPoP-bound token — retrying once with the
    /// server's nonce when it answers `use_dpop_nonce`.
    func send(_ request: TransportRequest, atTokenEndpoint: Bool) async throws -> TransportResponse {
        let bound = request.bearerToken?.isDPoPBound == true
        guard let dpop, atTokenEndpoint || bound else { return try await transport.send(request) }
        var signed = request
        signed.dpop = dpop.signing(method: request.method.rawValue, accessToken: bound ? request.bearerToken?.value : nil)
        let response = try await transport.send(signed)
        guard response.status == 400 || response.status == 401, let nonce = response.dpopNonce, signed.dpop != nil,
            (try? JSONDecoder().decode(Wire.ErrorBody.self, from: response.body))?.error == "use_dpop_nonce"
        else { return response }
        dpop.remember(nonce: nonce)
        signed.dpop = dpop.signing(method: request.method.rawValue, accessToken: bound ? request.bearerToken?.value : nil)
        return try await transport.send(signed)
    }
}
