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
    static func makeRelay(for mailroom: Mailroom, environment: Environment, logger: Logger) throws -> PostgresRelay? {
        guard environment.get("CHAT_RELAY") == "postgres" else { return nil }
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: try PostgresRelay.connectionFromEnvironment(),
            configuration: .init(channel: try RelayChannel(environment.get("CHAT_RELAY_CHANNEL") ?? "chat")),
            logger: logger
        )
        try relay.register(ChatLine.self, as: "chat.line", positions: .fleetWide)
        try relay.register(sender: RoomID.self, as: "chat.room")
        return relay
    }
}
