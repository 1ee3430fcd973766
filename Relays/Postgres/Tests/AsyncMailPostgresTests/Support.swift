@_spi(AsyncMailInternal) import AsyncMail
import AsyncMailPostgres
@_exported import AsyncMailTesting
import Foundation
import Logging
import PostgresNIO
@_exported import RelayTesting
import Synchronization
import Testing

struct ChatLine: Mail, Codable, Equatable {
    let text: String
}

struct RoomID: Hashable, Sendable, Codable {
    let name: String
}

/// Never registered: stays local.
struct LocalNote: Mail, Codable {
    let text: String
}

/// An object sender: identity means nothing in another process, so its mail stays local.
final class Speaker: Sendable {}

/// The PostgreSQL the tests use, from libpq's standard variables.
enum Database {
    static let environment = ProcessInfo.processInfo.environment

    /// A bad `PGPORT` stops the run at once: every test would fail on it anyway.
    static let configuration: PostgresConnection.Configuration = {
        do { return try PostgresRelay.connectionFromEnvironment() } catch { fatalError("\(error)") }
    }()

    /// `Scripts/postgres.sh` when the tests may stop and restart the server (CI sets it).
    static var control: String? { environment["ASYNCMAIL_PG_CONTROL"] }

    static let logger: Logger = {
        var logger = Logger(label: "relay-tests", factory: StreamLogHandler.standardError(label:))
        logger.logLevel = environment["RELAY_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }()

    /// Runs one statement on a connection of its own.
    static func execute(_ query: PostgresQuery) async throws {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 99, logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.query(query, logger: logger)
    }

    /// Runs one query on a connection of its own and returns the first column of every row.
    static func values<Value: PostgresDecodable & Sendable>(
        _ query: PostgresQuery,
        as type: Value.Type
    ) async throws -> [Value] {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 98, logger: logger)
        defer { Task { try? await connection.close() } }
        var values: [Value] = []
        for try await value in try await connection.query(query, logger: logger).decode(Value.self) {
            values.append(value)
        }
        return values
    }

    /// How many server processes serve connections named `applicationName`.
    static func backends(named applicationName: String) async throws -> Int {
        try await pids(named: applicationName).count
    }

    /// The server processes that serve connections named `applicationName`.
    static func pids(named applicationName: String) async throws -> [Int32] {
        try await values("SELECT pid FROM pg_stat_activity WHERE application_name = \(applicationName)", as: Int32.self)
    }

    /// How many sessions wait for an advisory lock.
    static func advisoryLockWaiters() async throws -> Int {
        try await values("SELECT locktype FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", as: String.self)
            .count
    }

    /// The payloads the durable table holds for `channel`, oldest first.
    static func payloads(on channel: RelayChannel) async throws -> [String] {
        try await values(
            "SELECT payload FROM asyncmail_relay WHERE channel = \(channel.name) ORDER BY id",
            as: String.self
        )
    }

    /// Sends one raw notification on `channel`, as a relay of another process might.
    static func notify(on channel: RelayChannel, _ payload: String) async throws {
        try await execute("SELECT pg_notify(\(channel.name), \(payload))")
    }

    /// Closes the server side of every connection named `applicationName`.
    static func terminate(_ applicationName: String) async throws {
        try await execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(applicationName)"
        )
    }

    /// Runs `Scripts/postgres.sh ARGUMENT` on a thread of its own.
    ///
    /// Not `Process`: its exit is not noticed while the server that `start` or `restart` leaves
    /// running still holds a descriptor it inherited. `system` waits for the script itself.
    static func control(_ argument: String) async throws {
        let command = "'\(control!)' \(argument) >/dev/null 2>&1"
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: system(command)) }
        }
        #expect(status == 0, "postgres.sh \(argument) failed")
    }
}

/// A unique channel per test, so tests never hear each other.
func freshChannel(_ function: String = #function) throws -> RelayChannel {
    let letters = function.lowercased().filter { $0.isLetter }.prefix(30)
    return try RelayChannel("t_\(letters)_\(UInt32.random(in: 0...UInt32.max))")
}

/// A relay for `mailroom` with the tests' registrations.
func makeRelay(
    _ mailroom: Mailroom,
    on channel: RelayChannel,
    mode: PostgresRelay.Mode = .durable(),
    connection: PostgresConnection.Configuration = Database.configuration,
    configure: (inout PostgresRelay.Configuration) -> Void = { _ in }
) throws -> PostgresRelay {
    var configuration = PostgresRelay.Configuration(
        channel: channel,
        mode: mode,
        heartbeatInterval: .milliseconds(200),
        retryBackoff: .milliseconds(20) ... .milliseconds(500)
    )
    configure(&configuration)
    let relay = try PostgresRelay(
        mailroom: mailroom,
        connection: connection,
        configuration: configuration,
        logger: Database.logger
    )
    try relay.register(ChatLine.self, as: "chat.line")
    try relay.register(sender: RoomID.self, as: "room")
    return relay
}

/// A value shared between tasks, behind a lock that ThreadSanitizer sees (a bare `Mutex` is a
/// futex it does not: every access under one would be reported).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Guarded<Value>

    init(_ value: Value) {
        mutex = Guarded(value)
    }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { value in body(&value) }
    }
}

/// Records every event of a relay.
final class EventLog: Sendable {
    let events = Locked<[RelayEvent]>([])
    let watcher: Task<Void, Never>

    init(_ relay: PostgresRelay) {
        let stream = relay.events()
        let events = self.events
        watcher = Task {
            for await event in stream { events.withLock { $0.append(event) } }
        }
    }

    var all: [RelayEvent] { events.withLock { $0 } }

    func count(where matches: (RelayEvent) -> Bool) -> Int { all.filter(matches).count }
}

/// Waits for `count` events that match from `events`; fails loudly after `limit`.
func awaitEvents(
    _ count: Int,
    from events: AsyncStream<RelayEvent>,
    within limit: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation,
    matching: @escaping @Sendable (RelayEvent) -> Bool
) async throws {
    try await withTimeout(limit, sourceLocation: sourceLocation) {
        var seen = 0
        for await event in events where matching(event) {
            seen += 1
            if seen == count { return }
        }
        Issue.record("the relay's events ended after \(seen) of \(count)", sourceLocation: sourceLocation)
    }
}

/// Collects the first `count` elements of a stream, with a loud timeout.
func first<Element: Sendable>(
    _ count: Int,
    of stream: AsyncStream<Element>,
    within limit: Duration = .seconds(60),
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Element] {
    try await stream.first(count, within: limit, sourceLocation: sourceLocation)
}
