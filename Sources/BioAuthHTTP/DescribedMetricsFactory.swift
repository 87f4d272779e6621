import CoreMetrics
import Prometheus

/// swift-prometheus' metrics factory with `# HELP` for BioAuth's counters: the factory alone
/// registers every metric without help text. Every other metric goes through it unchanged.
public struct DescribedMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    let base: PrometheusMetricsFactory

    /// The help of each counter ``BioAuthService`` counts, by its full name.
    static let help: [String: String] = [
        "bioauth_challenges_issued_total": "Challenges issued (enrolment, login, step-up)",
        "bioauth_logins_total": "Device logins",
        "bioauth_verification_failures_total": "Refused signatures and challenges",
        "bioauth_enrolments_total": "Devices enrolled or re-keyed",
        "bioauth_step_up_approvals_total": "Step-up approvals issued",
        "bioauth_lockouts_total": "Failure limits reached",
        "bioauth_rate_limited_total": "Requests refused by the per-client limit",
        "bioauth_password_requests_shed_total": "Password requests answered 503 because the hashing queue was full",
    ]

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        base = PrometheusMetricsFactory(registry: registry)
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let help = Self.help[label], label.hasSuffix("_total") else { return base.makeCounter(label: label, dimensions: dimensions) }
        let descriptor = MetricNameDescriptor(metricName: String(label.dropLast("_total".count)), unitName: "total", helpText: help)
        return registry.makeCounter(descriptor: descriptor, labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        base.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }
    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        base.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }
    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        base.makeMeter(label: label, dimensions: dimensions)
    }
    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        base.makeTimer(label: label, dimensions: dimensions)
    }
    public func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { base.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}
