@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Foundation
import Logging
@_spi(AsyncMailRelay) import RelayWire
import ServiceLifecycle

extension SQLiteRelay {
    /// Runs the relay until it is cancelled or its service group shuts down gracefully.
    ///
    /// Mail posted from the moment it starts is taken, within
    /// ``Configuration/outboundQueueLimit``. It opens the file (creating it, mode 0600, when
    /// missing), starts reading after the newest row (so a new process hears what is posted from
    /// then on, and fills the histories of types with host-wide positions from the file), and
    /// binds its wake-up socket. On a graceful shutdown it stops taking new mail, writes what is
    /// queued, then stops reading. Cancelled, what was still queued is reported as a failed
    /// publish. The file and the socket are closed before it returns, in every case.
    ///
    /// A write that fails (another process holds the write lock past
    /// ``Configuration/busyTimeout``, the disk is full) is reported
    /// (`RelayEvent.publishFailed(reason:mails:)`) and the same batch is written again with
    /// backoff; a read that fails is reported (`RelayEvent.disconnected(reason:)`) and read again
    /// after the last row delivered, so nothing is delivered twice.
    ///
    /// - Throws: `RelayFileError` when the file or the folder beside it cannot be used (another
    ///   user may write it, it cannot be created), or when the file is deleted or replaced while
    ///   the relay runs (``RelayFileError/Code/replaced``): the relay stops rather than go on with
    ///   a file no other process writes. `RelayError.tableSetupFailed(table:reason:)` when
    ///   SQLite refuses to set the file up (it is not a database, say).
    public func run() async throws {
        state.withLock { $0.hasStarted = true }
        try await RelayRunner(engine: SQLiteEngine(relay: self)).run()
    }

    /// The file and the socket, open.
    struct Storage: Sendable {
        let database: RelayDatabase
        let wakeUps: WakeUps
        /// With ``Configuration/presence``: the presence tables, on a connection of their own.
        let presence: PresenceTables?

        func close() async {
            await presence?.close()
            await wakeUps.close()
            await database.close()
        }
    }

    /// The name of this relay's wake-up socket: short, for a socket's path is.
    static func socketName(origin: String) -> String {
        String(origin.filter(\.isHexDigit).prefix(16)).padding(toLength: 16, withPad: "0", startingAt: 0)
    }

    /// Opens the file and the socket, starts reading after the newest row, and fills the
    /// histories of types with host-wide positions.
    func open() async throws -> Storage {
        let database: RelayDatabase
        do {
            database = try await RelayDatabase.open(
                path: path,
                busyTimeout: configuration.busyTimeout
            )
        } catch let error as RelayFileError {
            throw error
        } catch {
            throw RelayError.tableSetupFailed(table: path, reason: String(describing: error))
        }
        do {
            // A new relay hears only what is posted from now on; its histories start with
            // what the file kept.
            let newest = try await database.newest()
            let counters = try await database.counters()
            cursor.start(after: newest, channelLast: counters.first { $0.stream.isEmpty }?.last ?? 0)
            try await fillHistories(through: newest, counters: counters, from: database)
            let wakeUps = try await WakeUps.open(beside: path, name: Self.socketName(origin: origin))
            var presence: PresenceTables?
            if configuration.presence != nil {
                do {
                    presence = try await PresenceTables.open(
                        path: path,
                        table: database.table,
                        instance: origin,
                        busyTimeout: configuration.busyTimeout,
                        wakeUps: wakeUps
                    )
                } catch {
                    await wakeUps.close()
                    throw error
                }
            }
            state.withLock { ($0.database, $0.wakeUps) = (database, wakeUps) }
            return Storage(database: database, wakeUps: wakeUps, presence: presence)
        } catch {
            await database.close()
            if error is RelayFileError { throw error }
            throw RelayError.tableSetupFailed(table: path, reason: String(describing: error))
        }
    }

    /// Fills each host-wide type's history with the file's newest rows up to where reading
    /// starts, and moves it on to the file's newest position, so that a position given by
    /// another process resumes here too.
    private func fillHistories(
        through newest: Int64,
        counters: [StoredCounter],
        from database: RelayDatabase
    ) async throws {
        for codec in registry.fleetWideCodecs {
            guard let limits = codec.historyLimits(mailroom), limits.count != 0 || limits.maxAge != nil else {
                continue
            }
            let since = limits.maxAge.map { Self.milliseconds() - Int64($0.components.seconds * 1_000) }
            let rows = try await database.newestRows(
                of: codec.name,
                through: newest,
                count: limits.count,
                since: since,
                maximumBytes: carrier.postLimit
            )
            for row in rows { await carrier.keep(row.stored, with: receiver) }
        }
        carrier.moveOn(to: counters)
    }

    /// Reads rows as they are committed and delivers them, until cancelled; after a failed read,
    /// reads again after the last row delivered.
    ///
    /// - Throws: ``RelayFileError`` once the file was deleted or replaced.
    func read(_ storage: Storage) async throws {
        let feed = RowFeed(
            database: storage.database,
            wakeUps: storage.wakeUps,
            batch: 500,
            maximumBytes: carrier.postLimit,
            safetyNet: configuration.checkInterval
        )
        var attempt = 0
        var checks = 0
        var rejectedWakeUps = 0
        while !Task.isCancelled {
            reporter.report(.listening) { _ in }
            do {
                try await feed.read(after: cursor.cursor) {
                    self.receiver.tick()  // reading time: origins unheard for the retention are forgotten
                    let rejected = storage.wakeUps.rejected
                    if rejected > rejectedWakeUps {
                        let new = rejected - rejectedWakeUps
                        rejectedWakeUps = rejected
                        self.reporter.report(
                            .rejected(
                                reason: "\(counting(new, "datagram")) on the wake-up socket not what a relay sends"
                            )
                        ) { $0.rejected.addSaturating(new) }
                    }
                    checks += 1
                    // The retention runs on the writer's connection, between the publisher's
                    // transactions: a heartbeat in its queue asks for it.
                    if checks % 60 == 0 { _ = self.carrier.queue.append(.heartbeat) }
                } deliver: { rows in
                    for row in rows { await self.deliver(row) }
                    attempt = 0
                }
                return  // cancelled
            } catch let error as RelayFileError {
                throw error
            } catch {
                if Task.isCancelled { return }
                reporter.report(.disconnected(reason: String(describing: error))) { $0.disconnects += 1 }
                attempt += 1
                guard await backoff(attempt: attempt) else { return }
            }
        }
    }

    /// Delivers one row, or rejects it; then moves the cursor past it, reporting the mails the
    /// retention deleted before this relay read them.
    private func deliver(_ row: RelayDatabase.Row) async {
        var genuine = true
        switch row.content {
        case .text(let payload):
            // A row's numbers count only once its payload is found genuine (signed, where the
            // processes share a key): a row forged with a far number would report a false loss.
            genuine = await carrier.receive(row.stored, payload: payload, with: receiver)
        case .oversize(let bytes):
            carrier.rejectOversize(row: row.id, bytes: bytes)
        case .malformed(let type):
            genuine = false
            reporter.report(.rejected(reason: "row \(row.id) holds a \(type), not a relay's text")) { $0.rejected += 1 }
        }
        let missed = cursor.pass(row.stored, genuine: genuine)
        if missed > 0 { reporter.report(.expired(mails: missed)) { $0.missing.addSaturating(missed) } }
    }

    /// Deletes rows older than the retention; a failure is logged, and the next runs again.
    func expire(_ database: RelayDatabase) async {
        let cutoff = Self.milliseconds() - Int64(configuration.retention.components.seconds * 1_000)
        do {
            _ = try await database.deleteExpired(before: cutoff)
        } catch {
            logger.warning("relay: the retention clean-up failed, and runs again later: \(error)")
        }
    }

    /// Numbers `posts` for this origin, once: one signed row per post.
    func batch(of posts: [OutboundPost]) -> [RelayDatabase.NewRow] {
        let mails = posts.reduce(0) { $0 + $1.mailCount }
        var last = state.withLock { state in
            defer { state.lastNumber += mails }
            return state.lastNumber
        }
        return posts.map { post in
            let payload = post.payload(origin: origin, firstNumber: last + 1)
            last += post.mailCount
            let hostWide = registry.mailCodec(named: post.type)?.isFleetWide ?? false
            return RelayDatabase.NewRow(
                payload: signer?.sign(payload) ?? payload,
                mails: Int64(post.mailCount),
                stream: hostWide
                    ? RoomStream.key(type: post.type, senderType: post.senderType, sender: post.sender) : nil
            )
        }
    }

    /// Waits before attempt `attempt`: doubling from the backoff's lower bound to its upper,
    /// with jitter. False when cancelled.
    func backoff(attempt: Int) async -> Bool {
        await AsyncMailRelay.backoff(attempt: attempt, within: configuration.retryBackoff)
    }

    /// Now, in milliseconds since 1970: the file's clock, which every process on the host shares.
    static func milliseconds() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1_000)
    }
}
