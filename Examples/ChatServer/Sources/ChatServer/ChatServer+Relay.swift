import AsyncMail
import AsyncMailPostgres
import Hummingbird
import Logging

extension ChatServer {
    /// A relay that shares rooms with every chat server on the same PostgreSQL channel, when
    /// `CHAT_RELAY=postgres`; it reaches the database through PGHOST, PGPORT, PGUSER, PGPASSWORD
    /// and PGDATABASE, and uses the channel CHAT_RELAY_CHANNEL (default `chat`).
    ///
    /// Lines have fleet-wide positions: a client that comes back with `?after=POSITION` resumes
    /// on whichever instance the load balancer sends it to, and a new instance fills its history
    /// from the relay's table. The mailroom's history limits must be set before this is run.
    ///
    /// Each connection is tracked in its room's presence, so `GET /rooms/{room}/presence` counts
    /// the whole fleet's; an instance killed with its connections open leaves every count within
    /// CHAT_PRESENCE_EXPIRY seconds (default 15, at least 5: five heartbeats).
    static func makeRelay(for mailroom: Mailroom, environment: Environment, logger: Logger) throws -> PostgresRelay? {
        guard environment.get("CHAT_RELAY") == "postgres" else { return nil }
        var configuration = PostgresRelay.Configuration(
            channel: try RelayChannel(environment.get("CHAT_RELAY_CHANNEL") ?? "chat")
        )
        let expiry = environment.get("CHAT_PRESENCE_EXPIRY").flatMap(Int.init) ?? 15
        configuration.presence = .init(expiry: .seconds(expiry))
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: try PostgresRelay.connectionFromEnvironment(),
            configuration: configuration,
            logger: logger
        )
        try relay.register(ChatLine.self, as: "chat.line", positions: .fleetWide)
        try relay.register(sender: RoomID.self, as: "chat.room")
        return relay
    }
}
