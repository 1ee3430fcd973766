import AsyncMail
import AsyncMailPostgres
import AsyncMailSQLite
import Hummingbird
import Logging

extension ChatServer {
    /// A relay that shares rooms with other chat servers, as `CHAT_RELAY` says:
    /// - `sqlite`: with every instance on this host that opens the SQLite file `CHAT_RELAY_PATH`
    ///   (created when missing, readable by its owner only): no database server.
    /// - `postgres`: with every instance on the same PostgreSQL channel, across machines; it
    ///   reaches the database through PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE, and uses
    ///   the channel CHAT_RELAY_CHANNEL (default `chat`).
    /// - unset: none; rooms are this instance's own.
    ///
    /// Lines have shared positions (host-wide, fleet-wide): a client that comes back with
    /// `?after=POSITION` resumes on whichever instance the load balancer sends it to, and a new
    /// instance fills its history from the relay's table. The mailroom's history limits must be
    /// set before this is run.
    ///
    /// Each connection is tracked in its room's presence, so `GET /rooms/{room}/presence` counts
    /// every instance's; an instance killed with its connections open leaves every count within
    /// CHAT_PRESENCE_EXPIRY seconds (default 15, at least 5: five heartbeats).
    static func makeRelay(for mailroom: Mailroom, environment: Environment, logger: Logger) throws -> (any MailRelay)? {
        let presence = RelayPresence(expiry: .seconds(environment.get("CHAT_PRESENCE_EXPIRY").flatMap(Int.init) ?? 15))
        switch environment.get("CHAT_RELAY") {
        case nil, "":
            return nil
        case "sqlite":
            guard let path = environment.get("CHAT_RELAY_PATH"), !path.isEmpty else {
                throw RelaySetupError("CHAT_RELAY=sqlite needs CHAT_RELAY_PATH, the database file every instance opens")
            }
            let relay = try SQLiteRelay(
                mailroom: mailroom,
                path: path,
                configuration: .init(presence: presence),
                logger: logger
            )
            try relay.register(ChatLine.self, as: "chat.line", positions: .hostWide)
            try relay.register(sender: RoomID.self, as: "chat.room")
            return relay
        case "postgres":
            var configuration = PostgresRelay.Configuration(
                channel: try RelayChannel(environment.get("CHAT_RELAY_CHANNEL") ?? "chat")
            )
            configuration.presence = presence
            let relay = try PostgresRelay(
                mailroom: mailroom,
                connection: try PostgresRelay.connectionFromEnvironment(),
                configuration: configuration,
                logger: logger
            )
            try relay.register(ChatLine.self, as: "chat.line", positions: .fleetWide)
            try relay.register(sender: RoomID.self, as: "chat.room")
            return relay
        case let other?:
            throw RelaySetupError("CHAT_RELAY=\(other) is not a relay: use sqlite or postgres")
        }
    }

    /// The relay's environment does not say how to set it up.
    struct RelaySetupError: Error, CustomStringConvertible {
        let description: String

        init(_ description: String) {
            self.description = description
        }
    }
}
