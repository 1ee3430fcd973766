import AsyncMail
import AsyncMailPostgres
import Testing

@Suite("Configuration is validated before anything touches the database")
struct ValidationTests {
    @Test(
        "channel names PostgreSQL would truncate, fold or reject are thrown out",
        arguments: ["", String(repeating: "a", count: 64), "Chat", "1room", "a-b", "room one", "café"]
    )
    func invalidChannelNames(_ name: String) {
        #expect(throws: RelayConfigurationError.self) { try RelayChannel(name) }
    }

    @Test("valid channel names", arguments: ["chat", "_x", "room_1", String(repeating: "a", count: 63)])
    func validChannelNames(_ name: String) throws {
        #expect(try RelayChannel(name).name == name)
    }

    @Test("the reason is in the error")
    func reasonIsGiven() {
        #expect(
            throws: RelayConfigurationError.invalidChannelName(
                "Chat",
                reason: "it must start with a lower-case letter or _"
            )
        ) {
            try RelayChannel("Chat")
        }
        let long = String(repeating: "x", count: 70)
        #expect(
            throws: RelayConfigurationError.invalidChannelName(long, reason: "it is 70 bytes; PostgreSQL allows 63")
        ) {
            try RelayChannel(long)
        }
    }

    @Test("wire names are checked, and one name means one type")
    func wireNames() throws {
        let relay = try makeRelay(Mailroom(), on: RelayChannel("validation"))
        #expect(throws: RelayConfigurationError.invalidWireName("has space")) {
            try relay.register(LocalNote.self, as: "has space")
        }
        #expect(throws: RelayConfigurationError.invalidWireName("")) { try relay.register(LocalNote.self, as: "") }
        // "chat.line" is ChatLine's already.
        #expect(throws: RelayConfigurationError.self) { try relay.register(LocalNote.self, as: "chat.line") }
        #expect(throws: RelayConfigurationError.self) { try relay.register(ChatLine.self, as: "chat.line.v2") }
        try relay.register(ChatLine.self, as: "chat.line")  // the same again is fine
    }

    @Test("fleet-wide positions: durable mode only, one kind per type, and registered before run()")
    func fleetWidePositions() throws {
        let ephemeral = try makeRelay(Mailroom(), on: RelayChannel("validation"), mode: .ephemeral)
        #expect(throws: RelayConfigurationError.self) {
            try ephemeral.register(LocalNote.self, as: "note", positions: .fleetWide)
        }
        let durable = try makeRelay(Mailroom(), on: RelayChannel("validation"))
        try durable.register(LocalNote.self, as: "note", positions: .fleetWide)
        try durable.register(LocalNote.self, as: "note", positions: .fleetWide)  // the same again is fine
        do {
            try durable.register(ChatLine.self, as: "chat.line", positions: .fleetWide)
            Issue.record("registered .local before: one kind per type")
        } catch {
            #expect(error.code == .positionsUnavailable)
            #expect(error.description.contains("register it once"), "\(error)")
        }
        #expect("\(PostgresRelay.Positions.fleetWide)" == "fleetWide")
    }

    @Test("the article's registration: a history, then fleet-wide positions for the type")
    func articleRegistration() async throws {
        let mailroom = Mailroom()
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: Database.configuration,
            configuration: .init(channel: RelayChannel("article"))
        )
        await mailroom.retainHistory(ChatLine.self, count: 1_000)
        try relay.register(ChatLine.self, as: "chat.line", positions: .fleetWide)
        #expect(throws: RelayConfigurationError.self, "one wire name, one type") {
            try relay.register(FleetLine.self, as: "chat.line", positions: .fleetWide)
        }
    }

    @Test(
        "a table name is held to the channel's rule, and the error says which part it breaks",
        arguments: [
            ("relay; drop table x", "only lower-case a-z, 0-9 and _ are allowed"),
            ("", "it is empty"),
            ("1relay", "it must start with a lower-case letter or _"),
            ("Relay", "it must start with a lower-case letter or _"),
            (String(repeating: "r", count: 64), "it is 64 bytes; PostgreSQL allows 63"),
        ]
    )
    func tableName(_ table: String, reason: String) throws {
        #expect(throws: RelayConfigurationError.invalidTableName(table, reason: reason)) {
            try makeRelay(Mailroom(), on: RelayChannel("validation")) { $0.table = table }
        }
    }

    @Test("the connection comes from libpq's variables, with psql's defaults")
    func connectionFromEnvironment() throws {
        let defaults = try PostgresRelay.connectionFromEnvironment([:])
        #expect(defaults.host == "127.0.0.1")
        #expect(defaults.port == 5432)
        #expect(defaults.username == "postgres")
        #expect(defaults.password == nil)
        #expect(defaults.database == nil)
        let given = try PostgresRelay.connectionFromEnvironment([
            "PGHOST": "db.internal", "PGPORT": "6543", "PGUSER": "relay", "PGPASSWORD": "secret", "PGDATABASE": "chat",
        ])
        #expect(given.host == "db.internal")
        #expect(given.port == 6543)
        #expect(given.username == "relay")
        #expect(given.password == "secret")
        #expect(given.database == "chat")
    }

    @Test(
        "a PGPORT that is not a port number is an error, not the default",
        arguments: ["", "abc", "0", "65536", "-1"]
    )
    func invalidPort(_ port: String) {
        #expect(throws: RelayConfigurationError.invalidEnvironmentVariable("PGPORT", value: port)) {
            try PostgresRelay.connectionFromEnvironment(["PGPORT": port])
        }
    }
}
