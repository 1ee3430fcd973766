@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Foundation
import Logging
@_spi(AsyncMailRelay) import RelayWire
import ServiceLifecycle

/// Carries a mailroom's mail to every other process on this host whose relay opens the same
/// SQLite file, and posts theirs into it: no server, no daemon, no broker.
///
/// It keeps the PostgreSQL relay's promises, with the same wire format and the same events:
/// - Registration: every relayed mail type and sender type gets a stable wire name
///   (``register(_:as:)``, ``register(sender:as:)``). Unregistered types, and mail posted from an
///   object or actor, stay local.
/// - No echo: mail the relay receives is posted into the local mailroom and never written
///   again, and a process never receives its own mail back.
/// - Order: every process sees the file's mail in one order, the order rows were committed; each
///   origin's mail in the order it was posted. A `post(contentsOf:)` batch arrives as one batch.
/// - Nothing lost: every post is a row, and each reader reads every row past its cursor, so a
///   reader whose reads failed for a while (the disk, a lock) catches up from its last row; what
///   the retention deleted before it read it is reported with its exact count
///   (`RelayEvent.expired(mails:)`). A relay that starts hears what is posted from then on; a
///   client that comes back with a position of a type with ``Positions/hostWide`` positions
///   resumes in any process, from the file.
/// - Wake-ups, not polling: a writer nudges every other process through a Unix datagram socket
///   beside the file after each commit, so a reader reads new rows at once; a check every
///   ``Configuration/checkInterval`` finds rows whose wake-up was lost. The thread that receives
///   the wake-ups reads the rows and posts them into the mailroom itself, so the mailroom's
///   filters for relayed mail run there: one that blocks delays every row after it.
/// - Untrusted input: the file is created readable and writable by its owner only (0600), the
///   folder of sockets beside it (`<file>.wake`) 0700, and a relay refuses to open either when
///   others may write to it. Whatever a row holds is checked before it is used, and what is not
///   what a relay writes is dropped, counted and reported (`RelayEvent.rejected(reason:)`).
/// - Publication: ``flush()`` returns once everything posted before it is committed to the file:
///   a process killed after that loses none of it.
/// - Lifecycle: a swift-service-lifecycle `Service`. ``run()`` runs until cancelled or gracefully
///   shut down, and writes what is queued before returning from a graceful shutdown.
///
/// ```swift
/// let relay = try SQLiteRelay(mailroom: mailroom, path: "/var/run/myapp/mail.sqlite")
/// try relay.register(ChatLine.self, as: "chat.line")
/// try relay.register(sender: RoomID.self, as: "room")
/// // in a ServiceGroup beside the server, or:
/// try await relay.run()
/// ```
public final class SQLiteRelay: MailRelay {
    /// The mailroom whose mail this relay carries.
    public let mailroom: Mailroom
    /// The database file every process of the host opens.
    public let path: String
    /// How this relay uses the file.
    public let configuration: Configuration
    /// This relay's identity on the wire; unique per relay instance.
    public let origin: String

    /// The half every engine shares: forwarding, the outbound queue, delivery.
    let carrier: MailCarrier
    /// Counters, events, logs and metrics.
    let reporter: RelayReporter
    /// Decides what each row read means; keeps every origin's numbering.
    let receiver: InboundReceiver
    /// Signs what this relay writes, when a key is set.
    let signer: PayloadSigner?
    /// How far this relay has read the file.
    let cursor = RowCursor()
    /// Who is in each topic, this process's entries and the others' (``Configuration/presence``),
    /// and the loop that keeps it.
    let presence: PresenceKeeper
    let state = Guarded(State())

    struct State {
        /// Set by ``run()``: from then on no type can be given host-wide positions.
        var hasStarted = false
        /// The number of this origin's last mail.
        var lastNumber = 0
        /// The file, while the relay runs: for the test-only hooks (`SQLiteRelay+Testing.swift`).
        var database: RelayDatabase?
        var wakeUps: WakeUps?
    }

    var logger: Logger { reporter.logger }
    var registry: WireRegistry { carrier.registry }

    /// A relay for `mailroom` on the database at `path`; nothing is opened until ``run()``.
    ///
    /// - Throws: `RelayConfigurationError.invalidDatabasePath(_:reason:)` for an empty path, or
    ///   one too long for the wake-up sockets beside it (a Unix socket's path holds about 100
    ///   bytes); `RelayConfigurationError.presenceUnavailable(reason:)` for a presence expiry
    ///   under five heartbeats, or a `maximumEntries` under 1.
    public init(
        mailroom: Mailroom,
        path: String,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "AsyncMailSQLite")
    ) throws(RelayConfigurationError) {
        guard !path.isEmpty else { throw .invalidDatabasePath(path, reason: "it is empty") }
        guard WakeUps.socketPath(beside: path, name: Self.socketName(origin: "")).utf8.count < 104 else {
            throw .invalidDatabasePath(
                path,
                reason: "a wake-up socket beside it would need a path of over 103 bytes; use a shorter one"
            )
        }
        try configuration.presence?.validated(heartbeat: configuration.heartbeatInterval)
        self.mailroom = mailroom
        self.path = path
        self.configuration = configuration
        let parts = RelayParts(
            mailroom: mailroom,
            settings: configuration,
            system: "asyncmail-sqlite",
            destination: String(path.split(separator: "/").last ?? Substring(path)),
            logger: logger,
            logged: ("relay.database", path),
            scope: RelayDatabase.table,
            // The ledger's clock ticks once per check while reading.
            tick: configuration.checkInterval
        )
        (origin, signer, reporter, carrier, presence, receiver) = (
            parts.origin, parts.signer, parts.reporter, parts.carrier, parts.presence, parts.receiver
        )
    }

    /// Relays mail of type `M` under `name`, a wire name every process registers for the same
    /// type: 1–100 characters of `A-Z a-z 0-9 . _ -`.
    ///
    /// Registering the same type under the same name again does nothing.
    ///
    /// - Throws: ``RelayConfigurationError`` when the name is invalid or registered to another
    ///   type, or the type to another name.
    public func register<M: Mail & Codable>(_ type: M.Type, as name: String) throws(RelayConfigurationError) {
        try register(M.self, as: name, positions: .local)
    }

    /// Relays mail of type `M` under `name`, with the positions `positions` asks for.
    ///
    /// With ``Positions/hostWide`` every post of the type goes through the file first: the file
    /// numbers it (per room, the order every subscriber shares), and every process, this one
    /// too, delivers it as it reads the row, with that number as its position. So a position
    /// given to a client by one process resumes in any other, with no gap and no duplicate,
    /// within the retention; a process that starts fills the type's history from the file (the
    /// mailroom's `retainHistory` limits, set before ``run()``); and rows the retention deleted
    /// before a process read them are given to resuming clients as an exact count.
    ///
    /// What that costs: a post reaches local subscribers after a commit and a read (well under
    /// a millisecond on a local disk), not at once. A post the relay cannot take while it runs
    /// (its queue is full, the relay is shutting down, or the sender is not relayed) reaches
    /// only the subscriptions without positions, and is reported as usual. Before ``run()`` and
    /// after it returns, posts get positions of the mailroom's own.
    ///
    /// ```swift
    /// await mailroom.retainHistory(ChatLine.self, count: 1_000)
    /// try relay.register(ChatLine.self, as: "chat.line", positions: .hostWide)
    /// ```
    ///
    /// - Throws: ``RelayConfigurationError`` as ``register(_:as:)`` does; and
    ///   `RelayConfigurationError.Code.positionsUnavailable` once the relay runs, or for a type
    ///   registered before with the other positions.
    public func register<M: Mail & Codable>(
        _ type: M.Type,
        as name: String,
        positions: Positions
    ) throws(RelayConfigurationError) {
        let hostWide = positions == .hostWide
        if hostWide, state.withLock({ $0.hasStarted }) {
            throw .positionsUnavailable(String(reflecting: M.self), reason: "register it before run()")
        }
        do { try registry.register(M.self, as: name, fleetWide: hostWide) } catch {
            throw RelayConfigurationError(error)
        }
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

    /// What this relay has done so far.
    public var counters: RelayCounters { reporter.counters }

    /// The relay's events from now on, newest kept when the consumer falls 1,000 behind.
    ///
    /// Each call makes its own stream; it ends when the relay's ``run()`` returns or the stream
    /// is dropped.
    public func events() -> AsyncStream<RelayEvent> {
        reporter.events()
    }

    /// Returns once everything posted to the mailroom before it has been committed to the file.
    ///
    /// `post` returns before its mail reaches the file, so a process that dies can lose what it
    /// posted last. Call this where that matters, such as before acknowledging work to a client
    /// or before exiting: once it returns, a `SIGKILL` loses none of that mail. While the file
    /// cannot be written (another process holds its lock, the disk is full) it waits, and the
    /// relay writes the same batch again.
    ///
    /// ```swift
    /// await mailroom.post(OrderPlaced(id: 42))
    /// try await relay.flush()  // the order is in the file
    /// ```
    ///
    /// - Throws: `RelayError.notRelayed(mails:)` when mail posted since the previous flush was
    ///   given up (each also reported as its `RelayEvent`); `RelayError.notRunning` when the
    ///   relay is not running or stops first; `CancellationError` when the caller is cancelled.
    public func flush() async throws {
        try await carrier.flush()
    }
}
