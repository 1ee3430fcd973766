import AsyncMail
import Foundation
import Logging
import PostgresNIO
import RelayWire
import ServiceLifecycle
import Synchronization

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
///   (``RelayEvent/rejected(reason:)``); ``Configuration/authenticationKey`` signs the fleet's
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
public final class PostgresRelay: Service, Sendable {
    /// The mailroom whose mail this relay carries.
    public let mailroom: Mailroom
    /// What this relay connects and how.
    public let configuration: Configuration
    /// This relay's identity on the wire; unique per relay instance.
    public let origin: String
    /// The `application_name` of this relay's connections, for `pg_stat_activity`.
    public let applicationName: String

    let registry = WireRegistry()
    /// Signs what this relay publishes, when a key is set.
    let signer: PayloadSigner?
    /// Decides what each received payload means; keeps every origin's numbering.
    let receiver: InboundReceiver
    let connectionConfiguration: PostgresConnection.Configuration
    let table: String
    let logger: Logger
    let gate: TapGate
    let queue: OutboundQueue
    let state = Mutex(State())

    struct State {
        var counters = RelayCounters()
        var listeners: [UInt64: AsyncStream<RelayEvent>.Continuation] = [:]
        var nextListener: UInt64 = 0
        /// Durable mode: the id of the last row read.
        var cursor: Int64?
        /// The number of this origin's last mail.
        var lastSent = 0
        var logThrottle = LogThrottle()
    }

    /// A relay for `mailroom`; nothing connects until ``run()``.
    ///
    /// - Throws: ``RelayConfigurationError`` for a table name that is not a plain SQL identifier.
    public init(
        mailroom: Mailroom,
        connection: PostgresConnection.Configuration,
        configuration: Configuration,
        logger: Logger = Logger(label: "AsyncMailPostgres")
    ) throws(RelayConfigurationError) {
        self.mailroom = mailroom
        self.configuration = configuration
        self.table = try configuration.validatedTable()
        self.origin = UUID().uuidString.lowercased()
        self.signer = configuration.authenticationKey?.signer
        // The ledger's clock ticks once per heartbeat while listening: an origin is forgotten
        // after the retention of listening without mail from it.
        let ticks = configuration.retention / max(configuration.heartbeatInterval, .milliseconds(1))
        self.receiver = InboundReceiver(
            registry: registry,
            signer: signer,
            ownOrigin: origin,
            followsSpillNotices: configuration.mode == .ephemeral,
            forgetAfter: Int(min(max(ticks.rounded(.up), 1), 1e9))
        )
        self.applicationName = "asyncmail-relay-" + origin.prefix(8)
        var connection = connection
        connection.options.additionalStartupParameters.append(("application_name", applicationName))
        self.connectionConfiguration = connection
        self.queue = OutboundQueue(limit: configuration.outboundQueueLimit)
        self.gate = TapGate(backlogLimit: configuration.outboundQueueLimit)
        var logger = logger
        logger[metadataKey: "relay.channel"] = "\(configuration.channel)"
        logger[metadataKey: "relay.origin"] = "\(origin.prefix(8))"
        self.logger = logger
    }

    /// Relays mail of type `M` under `name`, a wire name every process of the fleet registers
    /// for the same type: 1–100 characters of `A-Z a-z 0-9 . _ -`.
    ///
    /// Registering the same type under the same name again does nothing.
    ///
    /// - Throws: ``RelayConfigurationError`` when the name is invalid or registered to another
    ///   type, or the type to another name.
    public func register<M: Mail & Codable>(_ type: M.Type, as name: String) throws(RelayConfigurationError) {
        do { try registry.register(M.self, as: name) } catch { throw Self.configurationError(error) }
    }

    /// Relays mail posted from senders of type `S` (such as a room id), under a wire name.
    ///
    /// Mail posted from a sender of an unregistered type, or from an object, stays local.
    public func register<S: Hashable & Sendable & Codable>(
        sender type: S.Type,
        as name: String
    ) throws(RelayConfigurationError) {
        do { try registry.register(sender: S.self, as: name) } catch { throw Self.configurationError(error) }
    }

    private static func configurationError(_ error: WireRegistry.RegistrationError) -> RelayConfigurationError {
        switch error {
        case .invalidName(let name): .invalidWireName(name)
        case .wireNameTaken(let name, let type): .wireNameTaken(name, by: type)
        case .typeAlreadyRegistered(let type, let name): .typeAlreadyRegistered(type, as: name)
        }
    }

    /// What this relay has done so far.
    public var counters: RelayCounters { state.withLock { $0.counters } }

    /// The relay's events from now on, newest kept when the consumer falls 1,000 behind.
    ///
    /// Each call makes its own stream; it ends when the relay's ``run()`` returns or the stream
    /// is dropped.
    public func events() -> AsyncStream<RelayEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: RelayEvent.self,
            bufferingPolicy: .bufferingNewest(1_000)
        )
        let key = state.withLock { state in
            defer { state.nextListener += 1 }
            state.listeners[state.nextListener] = continuation
            return state.nextListener
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: key) }
        }
        return stream
    }

    /// Runs the relay until it is cancelled or its service group shuts down gracefully.
    ///
    /// Mail posted from the moment it starts is taken, within ``Configuration/outboundQueueLimit``,
    /// even while the database is still out of reach. On a graceful shutdown it stops taking new
    /// mail, publishes what is queued, then stops listening. Connections are closed before it
    /// returns, in every case.
    ///
    /// - Throws: ``RelayError/tableSetupFailed(table:reason:)`` when the server refuses to create
    ///   or read the relay's table (for example, the role lacks the right). A server that cannot
    ///   be reached, or a connection lost during set-up, is retried with backoff.
    public func run() async throws {
        let relayID = ObjectIdentifier(self)
        let (registry, gate) = (self.registry, self.gate)
        // Mail this relay posts into the mailroom carries its mark, so it is never sent back out;
        // mail that can never travel is never buffered. The filter runs at post time, in the one
        // order, so the gate counts exactly what the tap will hand over.
        let tap = await mailroom.subscribeToAllMail(where: { posted in
            guard RelayInbound.relay != relayID, registry.canRelay(posted) else { return false }
            return gate.admit(endingPost: posted.isLastInPost)
        })
        gate.open()
        defer {
            for ticket in gate.close() { ticket.resolve(.notRunning) }
            queue.close()
            queue.abandon()
            finishEvents()
        }
        try await withThrowingTaskGroup(of: Void.self) { forwarding in
            // From the first post, so that the outbound bound holds while the table is prepared.
            forwarding.addTask { await self.forward(tap) }
            try await prepareTable()
            await withTaskGroup(of: Void.self) { listening in
                listening.addTask { await self.listen() }
                await withTaskGroup(of: Void.self) { outbound in
                    outbound.addTask { await self.publish() }
                    if case .ephemeral = configuration.mode { outbound.addTask { await self.beat() } }
                    // Until shutdown; then what was posted before it still goes out, and no more.
                    try? await gracefulShutdown()
                    if gate.beginShutdown() { forwarding.cancelAll() }  // all forwarded already
                    _ = try? await forwarding.next()
                    queue.close()
                }
                listening.cancelAll()  // everything queued is out: stop listening
            }
        }
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
    /// - Throws: ``RelayError/notRelayed(mails:)`` when mail posted since the previous flush was
    ///   given up (each also reported as its ``RelayEvent``); ``RelayError/notRunning`` when the
    ///   relay is not running or stops first; `CancellationError` when the caller is cancelled.
    public func flush() async throws {
        let ticket = FlushTicket()
        let (registration, lostBefore) = gate.register(ticket)
        switch registration {
        case .notRunning: throw RelayError.notRunning
        case .queueNow: if !queue.append(.flush(ticket)) { ticket.resolve(.notRunning) }
        case .waiting: break  // the forwarding loop queues it
        }
        let outcome = await withTaskCancellationHandler {
            await ticket.wait()
        } onCancel: {
            ticket.resolve(.cancelled)
        }
        switch outcome {
        case .passed:
            let lost = gate.settleFlush(since: lostBefore)
            if lost > 0 { throw RelayError.notRelayed(mails: lost) }
        case .notRunning: throw RelayError.notRunning
        case .cancelled: throw CancellationError()
        }
    }

    // MARK: Forwarding the tap

    /// Encodes tapped mail of registered types and queues it, a batch as one post, until a
    /// graceful shutdown or cancellation; queues each flush's marker behind the mail posted
    /// before it.
    private func forward(_ tap: AsyncStream<PostedMail>) async {
        let mailLimit = configuration.maximumMailBytes
        let postLimit = max(configuration.maximumPostBytes, mailLimit)
        var pending: OutboundPost?
        var pendingMails = 0  // every mail of the post in progress, sent or not
        var tooLarge = false  // the post in progress outgrew `postLimit`: it stays local, whole
        let encoder = JSONEncoder()  // one for the loop's life: making one per mail costs more than encoding
        for await posted in tap {
            pendingMails += 1
            do {
                if let (encoded, bytes) = try registry.encode(posted, with: encoder) {
                    if bytes + encoded.overheadBytes > mailLimit {
                        gate.lose(1)
                        report(.oversize(type: encoded.type, bytes: bytes)) { $0.oversize.addSaturating(1) }
                    } else if tooLarge || (pending?.mailBytes ?? 0) + bytes + encoded.overheadBytes > postLimit {
                        tooLarge = true
                        pending = nil
                    } else if pending == nil {
                        pending = encoded
                    } else {
                        pending?.append(encoded)
                    }
                }
            } catch {
                gate.lose(1)
                report(.publishFailed(reason: "encoding failed: \(error)", mails: 1)) { $0.publishFailures += 1 }
            }
            if posted.isLastInPost {
                if tooLarge {
                    gate.lose(pendingMails)
                    let type = registry.mailCodec(for: posted.mailType)?.name ?? posted.typeName
                    report(.oversize(type: type, bytes: postLimit)) { $0.oversize.addSaturating(pendingMails) }
                } else if let post = pending {
                    if queue.append(.post(post)) {
                        state.withLock { $0.counters.queued += post.mails.count }
                    } else {
                        gate.lose(post.mails.count)
                        report(.queueOverflow(posts: 1)) { $0.queueOverflow += 1 }
                    }
                }
                pending = nil
                pendingMails = 0
                tooLarge = false
            }
            let progress = gate.forwardedOne()
            if progress.refusedPosts > 0 {
                report(.queueOverflow(posts: progress.refusedPosts)) { $0.queueOverflow += progress.refusedPosts }
            }
            for ticket in progress.matured where !queue.append(.flush(ticket)) { ticket.resolve(.notRunning) }
            if progress.isDone { return }  // shutting down, and all is forwarded
        }
    }

    /// Ephemeral mode: queues a heartbeat every interval until the queue closes.
    private func beat() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: configuration.heartbeatInterval) } catch { return }
            guard queue.append(.heartbeat) else { return }
        }
    }

    /// PostgreSQL rejects a notification payload of 8,000 bytes or more.
    static let notifyLimit = 7_999

    /// Ephemeral mode: how long a spilled post's row is kept for its readers. Notifications
    /// arrive within milliseconds; a listener that falls further behind has the loss reported.
    static let spillRetention = Duration.seconds(300)

    // MARK: Events

    /// Counts, logs and broadcasts an event.
    ///
    /// Every event is counted and broadcast; log lines are throttled per kind of event (see
    /// ``LogThrottle``).
    func report(_ event: RelayEvent, counting: (inout RelayCounters) -> Void) {
        let now = ContinuousClock.now
        let (listeners, leftOut) = state.withLock { state in
            counting(&state.counters)
            return (Array(state.listeners.values), state.logThrottle.admit(event.kind, at: now))
        }
        if let leftOut {
            let also = leftOut > 0 ? " (and \(leftOut) more like it not logged)" : ""
            switch event {
            case .listening: logger.info("relay listening\(also)")
            case .gap, .oversize, .unknownType, .decodeFailed, .queueOverflow, .rejected:
                logger.warning("relay: \(event)\(also)")
            case .disconnected, .publishFailed: logger.error("relay: \(event)\(also)")
            }
        }
        for listener in listeners { listener.yield(event) }
    }

    /// What went wrong, in words an operator can act on: postgres-nio's plain description of an
    /// error is the same generic sentence for every failure, its reflection has the server's
    /// message and code (with bound values still redacted).
    static func reason(_ error: any Error) -> String {
        String(reflecting: error)
    }

    private func finishEvents() {
        let listeners = state.withLock { state in
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish() }
    }

    /// Creates the table (durable mode's rows, ephemeral mode's spilled posts) and its index when
    /// missing, and sets the cursor to the newest row, so that a new relay hears only what is
    /// posted from now on. Retries while the server cannot be reached; throws when the server
    /// refuses (a missing right).
    private func prepareTable() async throws {
        var attempt = 0
        while true {
            let connection: PostgresConnection
            do {
                connection = try await connect()
            } catch {
                try Task.checkCancellation()
                report(.disconnected(reason: Self.reason(error))) { $0.disconnects += 1 }
                attempt += 1
                guard await backoff(attempt: attempt) else { throw CancellationError() }
                continue
            }
            do {
                // Bounded: a call in flight when the server drops the connection can hang.
                try await withDeadline(
                    callDeadline,
                    for: "the table set-up",
                    closing: connection,
                    marking: Unanswered()
                ) {
                    try await self.setUpTable(on: connection)
                }
                await close(connection)
                return
            } catch {
                await close(connection)
                // Only a refusal by the server (a missing right, say) is final; a connection lost
                // mid-way is retried like one that could not be made.
                guard Self.isRefusedByServer(error) else {
                    try Task.checkCancellation()
                    report(.disconnected(reason: Self.reason(error))) { $0.disconnects += 1 }
                    attempt += 1
                    guard await backoff(attempt: attempt) else { throw CancellationError() }
                    continue
                }
                throw RelayError.tableSetupFailed(table: table, reason: Self.reason(error))
            }
        }
    }

    /// Creates the table when missing, and sets the cursor to the channel's newest row.
    private func setUpTable(on connection: PostgresConnection) async throws {
        try await connection.withTransaction(logger: logger) { connection in
            // Two relays creating the table at once would collide on its type's name.
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext('asyncmail-relay-setup'))",
                logger: logger
            )
            // `CREATE … IF NOT EXISTS` needs the right to create even when the table
            // exists, so a role given a table made beforehand would be refused.
            var exists = false
            let found = try await connection.query("SELECT to_regclass(\(table)) IS NOT NULL", logger: logger)
            for try await value in found.decode(Bool.self) { exists = value }
            guard !exists else { return }
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                    id bigserial PRIMARY KEY,
                    channel text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    payload text NOT NULL
                )
                """,
                logger: logger
            )
            try await connection.query(
                "CREATE INDEX IF NOT EXISTS \(unescaped: table)_channel_id ON \(unescaped: table) (channel, id)",
                logger: logger
            )
        }
        await preferLZ4(on: connection)
        let rows = try await connection.query(
            "SELECT coalesce(max(id), 0) FROM \(unescaped: table) WHERE channel = \(configuration.channel.name)",
            logger: logger
        )
        var newest: Int64 = 0
        for try await id in rows.decode(Int64.self) { newest = id }
        state.withLock { $0.cursor = newest }
    }

    /// Whether the server refused `error`'s statement for good: an access rule (SQLSTATE class
    /// 42, such as a missing right) or a missing schema (3F). A connection that broke, timed out
    /// or was terminated (57P01, say) is worth retrying.
    static func isRefusedByServer(_ error: any Error) -> Bool {
        if let error = error as? PSQLError {
            guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
            return state.hasPrefix("42") || state.hasPrefix("3F")
        }
        if let error = error as? PostgresTransactionError {
            return [error.beginError, error.closureError, error.commitError].contains { inner in
                inner.map(isRefusedByServer) ?? false
            }
        }
        return false
    }

    /// Compresses payloads with lz4 rather than PostgreSQL's default, pglz: a post of more than
    /// about 2 KB is compressed on insert, and pglz costs the server several times more. Only a
    /// server built with lz4 (PostgreSQL 14 or later) has it, and only the table's owner may
    /// change it: otherwise the payloads keep their compression, which is logged.
    private func preferLZ4(on connection: PostgresConnection) async {
        do {
            let rows = try await connection.query(
                """
                SELECT attcompression::text FROM pg_attribute
                WHERE attrelid = to_regclass(\(table)) AND attname = 'payload'
                """,
                logger: logger
            )
            var method = ""
            for try await value in rows.decode(String.self) { method = value }
            guard method != "l" else { return }
            try await connection.query(
                "ALTER TABLE \(unescaped: table) ALTER COLUMN payload SET COMPRESSION lz4",
                logger: logger
            )
        } catch {
            logger.notice("relay table payloads keep their compression: \(Self.reason(error))")
        }
    }
}

/// Marks posts a relay makes into its own mailroom, so that its tap leaves them out.
enum RelayInbound {
    @TaskLocal static var relay: ObjectIdentifier?
}
