@_spi(AsyncMailInternal) import AsyncMail
import AsyncMailPostgres
import AsyncMailSQLite
import AsyncMailTesting
@_exported import ContractMail
import Foundation
import Logging
import PostgresNIO
@_exported import RelayTesting
import SQLiteNIO
import Testing

/// Never registered: stays local.
struct LocalNote: Mail, Codable {
    let text: String
}

/// An object sender: identity means nothing in another process, so its mail stays local.
final class Speaker: Sendable {}

/// Whatever a relay needs set besides its engine's own settings.
struct Settings: Sendable {
    var key: RelayKey?
    /// Register `ChatLine` with the engine's shared positions (fleet-wide, host-wide).
    var sharedPositions = false
    var retention: Duration = .seconds(24 * 3600)
    var presence: RelayPresence?
    var heartbeat: Duration = .milliseconds(200)
    /// The outbound queue's limit, in mails.
    var queueLimit = 10_000
    /// What an asynchronous post does while that queue is full.
    var backpressure: OutboundBackpressure = .wait(atMost: .seconds(30))
}

/// One engine the contract runs against: how to make a place relays meet (a PostgreSQL channel,
/// an SQLite file), and a relay there.
struct Engine: Sendable, CustomTestStringConvertible {
    let name: String
    /// A place no other test uses; `remove` cleans it up.
    let makePlace: @Sendable (_ test: String) throws -> Place
    /// A relay for `mailroom` at `place`, with the contract's registrations.
    let makeRelay: @Sendable (_ mailroom: Mailroom, _ place: Place, _ settings: Settings) throws -> any MailRelay
    /// Moves `place`'s numbers on by `mails`, in the whole table and in every room of `ChatLine`,
    /// as if that many were written and the retention deleted them before any relay read them.
    let loseUnread: @Sendable (_ place: Place, _ mails: Int) async throws -> Void

    var testDescription: String { name }

    static let all: [Engine] = [.sqlite, .postgres]

    static let logger: Logger = {
        var logger = Logger(label: "relay-contract", factory: StreamLogHandler.standardError(label:))
        logger.logLevel =
            ProcessInfo.processInfo.environment["RELAY_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }()

    static let sqlite = Engine(name: "SQLite") { test in
        let folder = "/tmp/am-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        return Place(name: folder + "/relay.sqlite", environment: ["RELAY_ENGINE": "sqlite"]) {
            try? FileManager.default.removeItem(atPath: folder)
        }
    } makeRelay: { mailroom, place, settings in
        let relay = try SQLiteRelay(
            mailroom: mailroom,
            path: place.name,
            configuration: .init(
                retention: settings.retention,
                outboundQueueLimit: settings.queueLimit,
                backpressure: settings.backpressure,
                checkInterval: .milliseconds(200),
                retryBackoff: .milliseconds(20) ... .milliseconds(500),
                authenticationKey: settings.key,
                presence: settings.presence,
                heartbeatInterval: settings.heartbeat
            ),
            logger: logger
        )
        try relay.register(ChatLine.self, as: "chat.line", positions: settings.sharedPositions ? .hostWide : .local)
        try relay.register(sender: RoomID.self, as: "room")
        return relay
    } loseUnread: { place, mails in
        let connection = try await SQLiteConnection.open(storage: .file(path: place.name), logger: logger)
        do {
            _ = try await connection.query("PRAGMA busy_timeout = 5000")
            _ = try await connection.query(
                "UPDATE asyncmail_relay_counters SET last = last + ? WHERE stream = '' OR stream LIKE 'chat.line/%'",
                [.integer(mails)]
            )
        } catch {
            try? await connection.close().get()
            throw error
        }
        try await connection.close().get()
    }

    static let postgres = Engine(name: "PostgreSQL") { test in
        let letters = test.lowercased().filter(\.isLetter).prefix(30)
        return Place(
            name: "c_\(letters)_\(UInt32.random(in: 0...UInt32.max))",
            environment: ["RELAY_ENGINE": "postgres"]
        ) {}
    } makeRelay: { mailroom, place, settings in
        let relay = try PostgresRelay(
            mailroom: mailroom,
            connection: try PostgresRelay.connectionFromEnvironment(),
            configuration: .init(
                channel: try RelayChannel(place.name),
                mode: .durable(retention: settings.retention),
                outboundQueueLimit: settings.queueLimit,
                backpressure: settings.backpressure,
                heartbeatInterval: settings.heartbeat,
                retryBackoff: .milliseconds(20) ... .milliseconds(500),
                authenticationKey: settings.key,
                presence: settings.presence
            ),
            logger: logger
        )
        try relay.register(ChatLine.self, as: "chat.line", positions: settings.sharedPositions ? .fleetWide : .local)
        try relay.register(sender: RoomID.self, as: "room")
        return relay
    } loseUnread: { place, mails in
        let connection = try await PostgresConnection.connect(
            configuration: try PostgresRelay.connectionFromEnvironment(),
            id: 1,
            logger: logger
        )
        do {
            try await connection.query(
                """
                UPDATE asyncmail_relay_counters SET last = last + \(mails)
                WHERE relay_table = 'asyncmail_relay' AND channel = \(place.name)
                    AND (stream = '' OR stream LIKE 'chat.line/%')
                """,
                logger: logger
            )
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}

/// Where one test's relays meet.
final class Place: Sendable {
    /// The SQLite file's path, or the PostgreSQL channel's name.
    let name: String
    /// What a peer process needs to meet there: `RELAY_ENGINE`, and `RELAY_PLACE` is added.
    let environment: [String: String]
    private let cleanUp: @Sendable () -> Void

    init(name: String, environment: [String: String], cleanUp: @escaping @Sendable () -> Void) {
        self.name = name
        self.environment = environment.merging(["RELAY_PLACE": name]) { _, new in new }
        self.cleanUp = cleanUp
    }

    deinit { cleanUp() }
}
