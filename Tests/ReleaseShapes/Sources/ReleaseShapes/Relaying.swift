import AsyncMail
import AsyncMailPostgres
import AsyncMailRelay
import AsyncMailSQLite

// The relays' throwing calls as a server sets them up: synchronous set-up that throws
// `RelayConfigurationError`, then an asynchronous call, in one `do`, after an earlier await.

/// Sets a relay up and flushes it before it runs: flush throws `RelayError.notRunning`.
func setUp(_ relay: some MailRelay, mailroom: Mailroom) async throws -> RelayError.Code? {
    await mailroom.retainHistory(ChatLine.self, count: 10)
    do {
        try relay.register(ChatLine.self, as: "chat.line")
        try relay.register(sender: RoomID.self, as: "room")
        try await relay.flush()
        return nil
    } catch let error as RelayConfigurationError {
        throw error
    } catch let error as RelayError {
        return error.code
    }
}

/// Both engines: nothing connects or opens before `run()`.
func relayShapes() async throws -> [RelayError.Code?] {
    let sqlite = try SQLiteRelay(mailroom: Mailroom(), path: "/tmp/asyncmail-release-shapes.sqlite")
    let postgres = try PostgresRelay(
        mailroom: Mailroom(),
        connection: PostgresRelay.connectionFromEnvironment([:]),
        configuration: .init(channel: try RelayChannel("release_shapes"))
    )
    return [try await setUp(sqlite, mailroom: sqlite.mailroom), try await setUp(postgres, mailroom: postgres.mailroom)]
}
