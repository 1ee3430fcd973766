import AsyncMail
import AsyncMailServiceLifecycle
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle

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
        var logger = Logger(label: "ChatServer")
        logger.logLevel = environment.get("LOG_LEVEL").flatMap(Logger.Level.init(rawValue:)) ?? .info

        let mailroom = Mailroom()
        let app = makeApplication(mailroom: mailroom, port: port, slowLimit: slowLimit, logger: logger)
        var services: [any Service] = [app]
        // With CHAT_RELAY=postgres, rooms are shared with every instance on the same database.
        // It shuts down after the mailroom has closed, and publishes what was posted before.
        if let relay = try makeRelay(for: mailroom, environment: environment, logger: logger) {
            services.append(relay)
        }
        var configuration = ServiceGroupConfiguration(
            services: services + [MailroomService(mailroom)],  // the mailroom closes first
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // Closing the mailroom ends every connection at once, a stalled one included; these
        // bounds only guard against a handler that ignores it.
        configuration.maximumGracefulShutdownDuration = .seconds(5)
        configuration.maximumCancellationDuration = .seconds(2)
        try await ServiceGroup(configuration: configuration).run()
    }

    static func makeApplication(
        mailroom: Mailroom,
        port: Int,
        slowLimit: Int,
        logger: Logger
    ) -> some ApplicationProtocol {
        let router = Router(context: ChatContext.self)
        router.get("/stats") { _, _ in
            Stats(subscribers: await mailroom.subscriberCount(for: ChatLine.self))
        }
        router.ws("/rooms/{room}") { inbound, outbound, context in
            let room = RoomID(name: context.requestContext.parameters.get("room") ?? "")
            try await serveConnection(
                in: room,
                inbound: inbound,
                outbound: outbound,
                channel: context.requestContext.channel,
                mailroom: mailroom,
                slowLimit: slowLimit
            )
        }
        return Application(
            router: router,
            server: .http1WebSocketUpgrade(
                webSocketRouter: router,
                configuration: .init(ws: .init(closeTimeout: .seconds(2)))
            ),
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            logger: logger
        )
    }
}

/// What `GET /stats` returns.
struct Stats: ResponseEncodable {
    /// Live chat subscriptions: one per connected client.
    let subscribers: Int
}
