import BioAuthAttestation
import BioAuthCore
import Foundation
import Logging
import Prometheus
import ServiceLifecycle

/// Keeps an ``AttestationStatus`` current until graceful shutdown: reads its source at start (unless
/// a list is in force already), then hourly (five minutes after a failed read), and sets
/// `bioauth_attestation_status_age_seconds` each minute, so an alert fires well before the list's
/// age refuses Android enrolments.
struct AttestationStatusRefresher: Service {
    let status: AttestationStatus
    let clock: any WallClock
    let logger: Logger
    let age: Prometheus.Gauge
    let failures: Prometheus.Counter

    init(status: AttestationStatus, clock: any WallClock, logger: Logger, registry: PrometheusCollectorRegistry) {
        self.status = status
        self.clock = clock
        self.logger = logger
        age = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "bioauth", subsystem: "attestation_status", metricName: "age", unitName: "seconds",
                helpText: "Age of the attestation status list in force (+Inf while none is loaded)"))
        failures = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "bioauth", subsystem: "attestation_status", metricName: "refresh_failures", unitName: "total",
                helpText: "Reads of the attestation status list's source that failed"))
    }

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            // A list read just before the start waits its interval; otherwise read at once.
            var due = ContinuousClock.now + (status.loaded == nil ? .zero : AttestationStatus.refreshInterval)
            var lastNote: String?
            while !Task.isCancelled {
                if ContinuousClock.now >= due {
                    due = .now + (await refresh() ? AttestationStatus.refreshInterval : AttestationStatus.retryInterval)
                }
                measure()
                // Once per change of the note (its hours tick), not each minute.
                let note = status.note(at: clock.now())
                if let note, note != lastNote { logger.warning("\(note)") }
                lastNote = note
                try await Task.sleep(for: .seconds(60))
            }
        }
    }

    /// Reads the source once; false (counted and logged) when the read failed.
    func refresh() async -> Bool {
        do {
            let loaded = try await status.refresh(now: clock.now())
            logger.info(
                "attestation status list read",
                metadata: ["source": "\(status.source?.description ?? "")", "entries": "\(loaded.list.entries.count)"])
            return true
        } catch {
            failures.increment()
            logger.warning(
                "attestation status list not read", metadata: ["source": "\(status.source?.description ?? "")", "why": "\(error)"])
            return false
        }
    }

    /// `bioauth_attestation_status_age_seconds`: +Inf while no list is loaded.
    func measure() {
        age.set(status.age(at: clock.now()) ?? .infinity)
    }
}
