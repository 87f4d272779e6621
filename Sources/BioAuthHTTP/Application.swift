import BioAuthAttestation
import BioAuthCore
import BioAuthServer
import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// Settings of the HTTP application: where it listens and how it behaves. Which store it runs
/// on is the caller's choice (`bioauth-server` picks SQLite or PostgreSQL), so mounting the routes
/// links no store implementation.
public struct ServerAppConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var server: ServerConfiguration
    public var http: HTTPOptions
    public var logLevel: Logger.Level

    public init(
        host: String = "127.0.0.1", port: Int = 8080, server: ServerConfiguration = ServerConfiguration(),
        http: HTTPOptions = HTTPOptions(), logLevel: Logger.Level = .info
    ) {
        self.host = host
        self.port = port
        self.server = server
        self.http = http
        self.logLevel = logLevel
    }
}

/// A built server: the application to run and the service behind it.
public struct BioAuthServerApp: Sendable {
    public let service: BioAuthService
    public let routes: BioAuthRoutes
    let store: any BioAuthStore
    /// The logger given to ``build(_:store:clock:logger:recoveryChannel:eventSink:delivery:)``, at the configured level.
    public let logger: Logger
    /// Drains the event outbox into the sink given to ``build(_:store:clock:logger:recoveryChannel:eventSink:delivery:)``; nil without one.
    public let delivery: OutboxDelivery?

    /// Wires the service, metrics and routes over `store`. The app owns the store: ``shutdown()`` closes it.
    /// With `eventSink`, only the events it will be given under `delivery` are written to the
    /// outbox (`ServerConfiguration.publishedEvents`); without one, what the configuration says
    /// (every delivered kind by default: a backend may drain the outbox with its own `OutboxDelivery`).
    public static func build(
        _ configuration: ServerAppConfiguration, store: any BioAuthStore, clock: any WallClock = SystemWallClock(),
        logger: Logger = .discarding("bioauth-server"),
        recoveryChannel: (any RecoveryChannel)? = nil, eventSink: (any EventSink)? = nil, delivery policy: DeliveryPolicy = DeliveryPolicy()
    ) -> BioAuthServerApp {
        var logger = logger
        logger.logLevel = configuration.logLevel
        let registry = PrometheusCollectorRegistry()
        var server = configuration.server
        if eventSink != nil { server.publishedEvents.formIntersection(policy.deliveredEvents) }
        let service = BioAuthService(
            store: store, configuration: server, clock: clock, logger: logger, metricsFactory: DescribedMetricsFactory(registry: registry),
            recoveryChannel: recoveryChannel)
        let routes = BioAuthRoutes(service: service, registry: registry, options: configuration.http, logger: logger)
        let delivery = eventSink.map { OutboxDelivery(store: store, sink: $0, policy: policy, clock: clock, logger: logger) }
        return BioAuthServerApp(service: service, routes: routes, store: store, logger: logger, delivery: delivery)
    }

    /// The Hummingbird application; `onRunning` receives the bound port (useful with port 0).
    ///
    /// `services` run in the application's group ahead of BioAuth's background work and the
    /// listener, so they stop after the listener has drained: a store's connection pool
    /// (`PostgresStore`) goes here. `beforeServerStarts` runs once they have started and before
    /// the listener binds (`PostgresStore.prepare()`: the migrations).
    public func application(
        _ configuration: ServerAppConfiguration, logger: Logger? = nil, services: [any Service] = [],
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }, beforeServerStarts: @escaping @Sendable () async throws -> Void = {}
    ) -> some ApplicationProtocol {
        var logger = logger ?? self.logger
        logger.logLevel = configuration.logLevel
        var application = Application(
            router: routes.makeRouter(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "bioauth-server"),
            services: services + [backgroundService(logger: logger)],
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger)
        application.beforeServerStarts(perform: beforeServerStarts)
        return application
    }

    /// The management listener (`/metrics`, `/health/live`, `/health/ready`) on `host:port`, to
    /// run beside ``application(_:logger:services:onRunning:beforeServerStarts:)`` — typically on loopback or a private
    /// network, while the public listener serves no `/metrics` (``HTTPOptions/publicMetrics``).
    public func managementApplication(host: String, port: Int, onRunning: @escaping @Sendable (Int) async -> Void = { _ in })
        -> some ApplicationProtocol
    {
        Application(
            router: routes.makeManagementRouter(),
            configuration: .init(address: .hostname(host, port: port), serverName: "bioauth-server-management"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) }, logger: logger)
    }

    /// BioAuth's background work as one service for swift-service-lifecycle: the sweep (expired
    /// challenges, counters, approvals, requests, audit rows and sessions past retention, once a
    /// minute) and, with an event sink, the outbox delivery. An app that embeds the routes adds it
    /// to its own `ServiceGroup` (or its Hummingbird `Application`'s `services`); it stops on
    /// graceful shutdown.
    public func backgroundService(logger: Logger? = nil) -> some Service {
        BackgroundWork(
            sweeper: Sweeper(service: service, logger: logger ?? self.logger, registry: routes.registry),
            delivery: delivery.map(EventDeliverer.init),
            statusLists: service.configuration.attestation.statusLists.filter { $0.source != nil }.map {
                AttestationStatusRefresher(status: $0, clock: service.clock, logger: logger ?? self.logger, registry: routes.registry)
            })
    }

    /// Closes the store.
    public func shutdown() async throws {
        try await store.close()
    }
}

/// The sweep, the delivery and the status lists' refreshes side by side; one ending ends the others.
struct BackgroundWork: Service {
    let sweeper: Sweeper
    let delivery: EventDeliverer?
    let statusLists: [AttestationStatusRefresher]

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sweeper.run() }
            if let delivery { group.addTask { try await delivery.run() } }
            for refresher in statusLists { group.addTask { try await refresher.run() } }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// Runs the outbox delivery until graceful shutdown.
struct EventDeliverer: Service {
    let delivery: OutboxDelivery

    func run() async throws {
        await cancelWhenGracefulShutdown { await delivery.run() }
    }
}

/// Sweeps expired challenges, old counters and audit rows past retention once a minute until
/// shutdown, and refreshes the outbox's gauges (``measureOutbox()``).
struct Sweeper: Service {
    let service: BioAuthService
    let logger: Logger
    let registry: PrometheusCollectorRegistry

    func run() async throws {
        // Ends at once on graceful shutdown (SIGTERM/SIGINT) instead of finishing its sleep.
        try? await cancelWhenGracefulShutdown {
            await measureOutbox()
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(60))
                do { try await service.sweep() } catch { logger.warning("sweep failed", metadata: ["error": "\(type(of: error))"]) }
                await measureOutbox()
            }
        }
    }

    /// `bioauth_outbox_pending_events`, `bioauth_outbox_oldest_pending_age_seconds` (0 when none
    /// waits) and `bioauth_outbox_dead_letters`: a receiver falling behind, or refusing, shows.
    func measureOutbox() async {
        guard let status = try? await service.outboxStatus() else { return }
        func gauge(_ name: String, _ unit: String, _ help: String) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "bioauth", subsystem: "outbox", metricName: name, unitName: unit, helpText: help))
        }
        gauge("pending", "events", "Events waiting for delivery (dead letters not included)").set(Double(status.pending))
        let age = status.oldestPendingAt.map { max(0, Date().timeIntervalSince($0)) } ?? 0
        gauge("oldest_pending_age", "seconds", "Age of the oldest event waiting for delivery").set(age)
        gauge("dead", "letters", "Events set aside after their last delivery attempt").set(Double(status.deadLetters))
    }
}
