import AsyncMail
import AsyncMailObservability
import AsyncMailPostgres
import AsyncMailServiceLifecycle
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import InMemoryTracing
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle
import Tracing

/// A WebSocket chat server: every text frame sent to `/rooms/{room}` reaches every connection in
/// that room, the sender's own included, in one order that the whole room shares.
@main
struct ChatServer {
    static func main() async throws {
        let environment = Environment()
        let port = environment.get("PORT").flatMap(Int.init) ?? 8080
        // A client reading normally absorbs a burst of 1,000 lines with room to spare; one that
        // stopped reading costs at most this many lines before it is dropped.
        let slowLimit = environment.get("SLOW_LIMIT").flatMap(Int.init) ?? 4_096
        // How long a graceful shutdown may take before the group cancels what is left, in seconds.
        let shutdownLimit = environment.get("SHUTDOWN_LIMIT").flatMap(Int.init) ?? 5
        // How often an idle connection is pinged, in seconds; 0 turns pings off. Each connection's
        // ping waits in a `Task.sleep`, which Swift 6.3 keeps for its whole period even once the
        // connection has closed and cancelled it (swiftlang/swift#60441): a shorter period holds
        // less memory per recently closed connection (README: "Memory per connection").
        let pingPeriod = environment.get("CHAT_PING_PERIOD").flatMap(Int64.init) ?? 10
        var logger = Logger(label: "ChatServer")
        logger.logLevel = environment.get("LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? .info

        // Metrics for `GET /metrics`, in Prometheus's text format: the mailroom's and the relay's.
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))
        // With CHAT_TRACING=memory, spans are kept in memory and listed at `GET /traces`, which the
        // example's test reads; in production, bootstrap your tracer (swift-otel's, say) here.
        var tracer: InMemoryTracer?
        if environment.get("CHAT_TRACING") == "memory" {
            tracer = InMemoryTracer()
            InstrumentationSystem.bootstrap(tracer!)
        }
        // Each line's trace context travels with it: to every connection's socket write, and
        // through the relay to other instances.
        let mailroom = Mailroom(instrumentation: MailroomObservability())
        // The newest lines, with positions, for clients that come back with `?after=POSITION`.
        let history = environment.get("CHAT_HISTORY").flatMap(Int.init) ?? 1_000
        if history > 0 { await mailroom.retainHistory(ChatLine.self, count: history) }
        // With CHAT_RELAY=sqlite (one host) or postgres (many), rooms are shared with every
        // instance on the same database.
        let relay = try makeRelay(for: mailroom, environment: environment, logger: logger)
        let app = makeApplication(
            mailroom: mailroom,
            relay: relay,
            port: port,
            slowLimit: slowLimit,
            pingPeriod: pingPeriod,
            metrics: metrics,
            tracer: tracer,
            logger: logger
        )
        var services: [any Service] = [app]
        // The relay shuts down after the mailroom has closed, and publishes what was posted before.
        if let relay { services.append(relay) }
        var configuration = ServiceGroupConfiguration(
            services: services + [MailroomService(mailroom)],  // the mailroom closes first
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // Closing the mailroom ends every connection at once, a stalled one included; these
        // bounds only guard against a handler that ignores it.
        configuration.maximumGracefulShutdownDuration = .seconds(shutdownLimit)
        configuration.maximumCancellationDuration = .seconds(2)
        try await ServiceGroup(configuration: configuration).run()
    }

    static func makeApplication(
        mailroom: Mailroom,
        relay: (any MailRelay)?,
        port: Int,
        slowLimit: Int,
        pingPeriod: Int64 = 10,
        metrics: PrometheusCollectorRegistry,
        tracer: InMemoryTracer?,
        logger: Logger
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/stats") { _, _ in
            Stats(subscribers: await mailroom.subscriberCount(ChatLine.self))
        }
        // Connections in a room: across the fleet with the relay, on this instance without it.
        router.get("/rooms/{room}/presence") { _, context in
            let room = RoomID(name: context.parameters.get("room") ?? "")
            if let relay { return Presence(connections: relay.presence(in: room.name).count) }
            return Presence(connections: await mailroom.subscriberCount(ChatLine.self, from: .only(room)))
        }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer()))
            )
        }
        if let tracer {
            router.get("/traces") { _, _ in
                Traces(spans: tracer.finishedSpans.map(Traces.Span.init), active: tracer.activeSpans.count)
            }
        }
        // `/rooms/{room}` upgrades to a WebSocket here, not through the router (`router.ws`):
        // HummingbirdWebSocket 2.8.1's router upgrade keeps every connection's request context
        // (and what it holds) for good, a reference cycle (README: "Memory per connection").
        return Application(
            router: router,
            server: .http1WebSocketUpgrade(
                configuration: .init(
                    ws: .init(
                        autoPing: pingPeriod > 0 ? .enabled(timePeriod: .seconds(pingPeriod)) : .disabled,
                        closeTimeout: .seconds(2)
                    )
                )
            ) {
                request,
                channel,
                logger in
                let uri = URI(request.path ?? "")
                guard let room = Self.room(in: uri.path) else { return .dontUpgrade }  // the router answers
                let after = uri.queryParameters["after"].map { Substring($0) }
                // `?slow=drop`: kept and told what it lost when slow; anything else, ended.
                let dropsWhenSlow = uri.queryParameters["slow"] == "drop"
                return .upgrade([:]) { inbound, outbound, _ in
                    try await serve(
                        in: room,
                        after: after,
                        dropsWhenSlow: dropsWhenSlow,
                        inbound: inbound,
                        outbound: outbound,
                        channel: channel,
                        mailroom: mailroom,
                        relay: relay,
                        slowLimit: slowLimit,
                        logger: logger
                    )
                }
            },
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            logger: logger
        )
    }

    /// The room of a WebSocket path, `/rooms/{room}`, percent-decoded; nil for any other path.
    static func room(in path: String) -> RoomID? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, parts[1] == "rooms", !parts[2].isEmpty,
            let name = String(parts[2]).removingPercentEncoding
        else { return nil }
        return RoomID(name: name)
    }

    /// Serves one WebSocket connection in `room`: with positions when it asked for them
    /// (`?after=`), dropping and telling its losses when it asked to keep up (`?slow=drop`,
    /// without `?after=`), plain text otherwise; in the room's presence while connected.
    static func serve(
        in room: RoomID,
        after: Substring?,
        dropsWhenSlow: Bool,
        inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter,
        channel: any Channel,
        mailroom: Mailroom,
        relay: (any MailRelay)?,
        slowLimit: Int,
        logger: Logger
    ) async throws {
        // In the room's presence while connected; a room name presence cannot take (empty,
        // or over 256 bytes) is served all the same, and only left out of the count.
        let presence = UUID().uuidString
        do {
            try relay?.track(presence, in: room.name, meta: [:])
        } catch {
            logger.warning("connection not counted in \(room.name)'s presence: \(error)")
        }
        defer { relay?.untrack(presence, in: room.name) }
        if let after {
            try await serveResumingConnection(
                in: room,
                after: after,
                inbound: inbound,
                outbound: outbound,
                channel: channel,
                mailroom: mailroom,
                slowLimit: slowLimit
            )
        } else if dropsWhenSlow {
            try await serveDroppingConnection(
                in: room,
                inbound: inbound,
                outbound: outbound,
                channel: channel,
                mailroom: mailroom,
                slowLimit: slowLimit
            )
        } else {
            try await serveConnection(
                in: room,
                inbound: inbound,
                outbound: outbound,
                channel: channel,
                mailroom: mailroom,
                slowLimit: slowLimit
            )
        }
    }
}

/// What `GET /traces` returns, with CHAT_TRACING=memory: every span this instance finished.
struct Traces: ResponseEncodable {
    struct Span: Encodable {
        let name: String
        let traceID: String
        let spanID: String
        let parentSpanID: String?

        init(_ span: FinishedInMemorySpan) {
            name = span.operationName
            traceID = span.traceID
            spanID = span.spanID
            parentSpanID = span.parentSpanID
        }
    }

    /// The spans that have ended.
    let spans: [Span]
    /// How many spans have begun and not yet ended. What is recorded inside a span (a post's
    /// metrics, inside its frame's or the relay's consumer span) is all in once this is 0.
    let active: Int
}

/// What `GET /rooms/{room}/presence` returns.
struct Presence: ResponseEncodable {
    /// The room's connections: on every instance sharing the relay, or on this one without it.
    let connections: Int
}

/// What `GET /stats` returns.
struct Stats: ResponseEncodable {
    /// Live chat subscriptions: one per connected client.
    let subscribers: Int
}
