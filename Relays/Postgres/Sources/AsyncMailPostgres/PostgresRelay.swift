@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Foundation
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire
import ServiceLifecycle

/// Carries a mailroom's mail to every other process whose relay uses the same PostgreSQL channel,
/// and posts theirs into it.
///
/// Mail of a registered type, posted in any process, reaches the matching subscriptions in every
/// other process of the fleet, with its `Hashable` value sender (a room id) intact:
/// `subscribe(to: ChatLine.self, from: .only(RoomID("lobby")))` hears the whole fleet's lobby.
///
/// - Registration: every relayed mail type and sender type gets a stable wire name
///   (``register(_:as:)``, ``register(sender:as:)``), so renaming a Swift type never breaks a
///   running fleet. Unregistered types, and mail posted from an object or actor (whose identity
///   means nothing in another process), stay local.
/// - No echo: mail the relay receives is posted into the local mailroom and never published
///   again, and a process never receives its own mail back.
/// - Order: each origin's mail arrives everywhere in the order it was posted, and every receiver
///   sees remote mail in one order, the database's commit order. A `post(contentsOf:)` batch
///   arrives as one batch; so do posts of one type from one sender that waited together for the
///   publisher, which keeps their order and saves one write each.
/// - Modes: ``Mode/durable(retention:)`` loses nothing across reconnects and restarts;
///   ``Mode/ephemeral`` is at most once, with every loss reported. See *Across Processes and Machines*.
/// - Untrusted input: whatever arrives from the database is checked before it is used, and
///   what is not what a relay sends is dropped, counted and reported
///   (`RelayEvent.rejected(reason:)`); ``Configuration/authenticationKey`` signs the fleet's
///   payloads so that nothing else is delivered.
/// - Publication: ``flush()`` returns once everything posted before it is committed (durable)
///   or sent (ephemeral); until then, a process that dies loses what it had not published.
/// - Lifecycle: a swift-service-lifecycle `Service`. ``run()`` runs until cancelled or gracefully
///   shut down, publishes what is queued before returning from a graceful shutdown, and closes
///   every connection it opened. The listener has a connection of its own.
///
/// ```swift
/// let relay = try PostgresRelay(
///     mailroom: mailroom,
///     connection: .init(host: "127.0.0.1", username: "app", password: nil, database: "app", tls: .disable),
///     configuration: .init(channel: try RelayChannel("chat")),
///     logger: logger
/// )
/// try relay.register(ChatLine.self, as: "chat.line")
/// try relay.register(sender: RoomID.self, as: "room")
/// // in a ServiceGroup beside the server, or:
/// try await relay.run()
/// ```
public final class PostgresRelay: MailRelay {
    /// The mailroom whose mail this relay carries.
    public let mailroom: Mailroom
    /// What this relay connects and how.
    public let configuration: Configuration
    /// This relay's identity on the wire; unique per relay instance.
    public let origin: String
    /// The `application_name` of this relay's connections, for `pg_stat_activity`.
    public let applicationName: String

    /// The half every engine shares: forwarding, the outbound queue, delivery.
    let carrier: MailCarrier
    var registry: WireRegistry { carrier.registry }
    var gate: TapGate { carrier.gate }
    var queue: OutboundQueue { carrier.queue }
    /// Counters, events, logs and metrics.
    let reporter: RelayReporter
    var logger: Logger { reporter.logger }
    /// Signs what this relay publishes, when a key is set.
    let signer: PayloadSigner?
    /// Decides what each received payload means; keeps every origin's numbering.
    let receiver: InboundReceiver
    let connectionConfiguration: PostgresConnection.Configuration
    /// The table both modes use.
    let table: RelayTable
    /// The mode's half of the relay: its SQL, its numbering and its state.
    let mode: RelayMode
    let state = Guarded(State())
    /// Who is in each topic, this instance's entries and the others' (``Configuration/presence``),
    /// and the loop that keeps it.
    let presence: PresenceKeeper
    let presenceTable: PresenceTable

    struct State {
        /// Set by ``run()``: from then on no type can be given fleet-wide positions.
        var hasStarted = false
    }

    /// A relay for `mailroom`; nothing connects until ``run()``.
    ///
    /// - Throws: `RelayConfigurationError` for a table name that is not a plain SQL identifier.
    public init(
        mailroom: Mailroom,
        connection: PostgresConnection.Configuration,
        configuration: Configuration,
        logger: Logger = Logger(label: "AsyncMailPostgres")
    ) throws(RelayConfigurationError) {
        self.mailroom = mailroom
        self.configuration = configuration
        let tableName = try configuration.validatedTable()
        try configuration.validatedPresence()
        let parts = RelayParts(
            mailroom: mailroom,
            settings: configuration,
            system: "asyncmail-postgres",
            destination: configuration.channel.name,
            logger: logger,
            logged: ("relay.channel", "\(configuration.channel)"),
            scope: configuration.channel.name,
            // The ledger's clock ticks once per heartbeat while listening.
            tick: configuration.heartbeatInterval,
            followsSpillNotices: configuration.mode == .ephemeral
        )
        (origin, signer, reporter, carrier, presence, receiver) = (
            parts.origin, parts.signer, parts.reporter, parts.carrier, parts.presence, parts.receiver
        )
        self.applicationName = "asyncmail-relay-" + origin.prefix(8)
        var connection = connection
        connection.options.additionalStartupParameters.append(("application_name", applicationName))
        self.connectionConfiguration = connection
        self.table = RelayTable(name: tableName, channel: configuration.channel.name, logger: logger)
        self.presenceTable = PresenceTable(channel: configuration.channel.name, instance: origin, logger: logger)
        switch configuration.mode {
        case .durable: self.mode = .durable(DurableMode(table: table))
        case .ephemeral: self.mode = .ephemeral(EphemeralMode(table: table))
        }
    }

    /// Relays mail of type `M` under `name`, a wire name every process of the fleet registers
    /// for the same type: 1–100 characters of `A-Z a-z 0-9 . _ -`.
    ///
    /// Registering the same type under the same name again does nothing.
    ///
    /// - Throws: `RelayConfigurationError` when the name is invalid or registered to another
    ///   type, or the type to another name.
    public func register<M: Mail & Codable>(_ type: M.Type, as name: String) throws(RelayConfigurationError) {
        do { try registry.register(M.self, as: name) } catch { throw RelayConfigurationError(error) }
    }

    /// Relays mail posted from senders of type `S` (such as a room id), under a wire name.
    ///
    /// Mail posted from a sender of an unregistered type, or from an object, stays local.
    public func register<S: Hashable & Sendable & Codable>(
        sender type: S.Type,
        as name: String
    ) throws(RelayConfigurationError) {
        do { try registry.register(sender: S.self, as: name) } catch { throw RelayConfigurationError(error) }
    }

    /// Runs the relay until it is cancelled or its service group shuts down gracefully.
    ///
    /// Mail posted from the moment it starts is taken, within ``Configuration/outboundQueueLimit``,
    /// even while the database is still out of reach. On a graceful shutdown it stops taking new
    /// mail, publishes what is queued, then stops listening. Cancelled, it starts no new
    /// statement, but waits for the answer to a publish already sent (within the deadline every
    /// call has: ten heartbeats, at least 5 s), so that ``counters`` and ``flush()`` say whether
    /// that mail was published; what was still queued is reported as a failed publish.
    /// Connections are closed before it returns, in every case.
    ///
    /// - Throws: `RelayError.tableSetupFailed(table:reason:)` when the server refuses to create
    ///   or read the relay's table (for example, the role lacks the right). A server that cannot
    ///   be reached, or a connection lost during set-up, is retried with backoff.
    public func run() async throws {
        state.withLock { $0.hasStarted = true }
        try await RelayRunner(engine: PostgresEngine(relay: self)).run()
    }

    /// Returns once everything posted to the mailroom before it has been published: committed
    /// to the table (durable mode) or sent as notifications (ephemeral mode).
    ///
    /// `post` returns before its mail reaches the database, so a process that dies can lose what
    /// it posted last. Call this where that matters, such as before acknowledging work to a
    /// client or before exiting: once it returns, a `SIGKILL` loses none of that mail. While the
    /// database is unreachable it waits (durable mode retries the same batch).
    ///
    /// ```swift
    /// await mailroom.post(OrderPlaced(id: 42))
    /// try await relay.flush()  // the order is in the database
    /// ```
    ///
    /// - Throws: `RelayError.notRelayed(mails:)` when mail posted since the previous flush was
    ///   given up (each also reported as its `RelayEvent`); `RelayError.notRunning` when the
    ///   relay is not running or stops first; `CancellationError` when the caller is cancelled.
    public func flush() async throws {
        try await carrier.flush()
    }
}

/// The mode's half of a relay, which owns the mode's SQL, numbering and state: what differs
/// between the modes is a `switch` over this, in publishing, listening and `run()`.
enum RelayMode: Sendable {
    case durable(DurableMode)
    case ephemeral(EphemeralMode)
}
