import BioAuthCore
import BioAuthServer
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus

/// The operator's routes: health probes and, on the management listener, the metrics.
extension BioAuthRoutes {
    /// Kubernetes-style probes — live while the process serves HTTP, ready while the store
    /// answers — and, when `metrics`, the Prometheus exposition.
    func addOperatorRoutes(to router: some RouterMethods<BasicBioAuthRequestContext>, metrics: Bool) {
        router.get("/health/live") { _, _ in try json(["status": "ok"]) }
        router.get("/health/ready") { _, _ in
            guard await service.isReady() else { return try json(["status": "unavailable"], status: .serviceUnavailable) }
            let notes = service.readinessNotes()
            return try json(Readiness(status: "ready", notes: notes.isEmpty ? nil : notes))
        }
        guard metrics else {
            router.get("/metrics") { _, _ -> Response in
                throw ServerError(.notFound, detail: "metrics are served on the management listener")
            }
            return
        }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }
}

/// `GET /health/ready` of a ready instance, with what it cannot do now (absent when nothing).
struct Readiness: Encodable {
    let status: String
    let notes: [String]?
}
