@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
@_spi(AsyncMailRelay) import RelayWire

/// What the SQLite relay writes and reads; `RelayRunner` runs it (see `RelayEngine`).
///
/// Opening opens the file and the wake-up socket; the readers are the row feed, the WAL
/// checkpoints and the presence loop; a batch is one transaction on the writer's connection,
/// numbered once for this origin and written again as it was after a failure (which wrote
/// nothing), so a receiver finds no gap in the origin's numbers.
struct SQLiteEngine: RelayEngine {
    let relay: SQLiteRelay

    /// A batch, prepared once for every attempt at it.
    struct Batch {
        let items: [OutboundQueue.Item]
        /// Its posts: its span's links and its durations.
        let posts: [OutboundPost]
        /// One signed row per post.
        let rows: [RelayDatabase.NewRow]
        /// Whether it holds a heartbeat, which asks for the retention clean-up.
        let expires: Bool
    }

    var carrier: MailCarrier { relay.carrier }
    var presence: PresenceKeeper { relay.presence }
    var failurePolicy: PublisherMachine.FailurePolicy { .retry }

    func open() async throws -> SQLiteRelay.Storage {
        try await relay.open()
    }

    func readers(of storage: SQLiteRelay.Storage) -> [@Sendable () async throws -> Void] {
        var readers: [@Sendable () async throws -> Void] = [
            // On the thread that receives the wake-ups: see `WakeUps.Listener`.
            { try await withTaskExecutorPreference(storage.wakeUps.executor) { try await relay.read(storage) } },
            { await storage.database.keepCheckpointing(logger: relay.logger) },
        ]
        if let tables = storage.presence {
            readers.append { await relay.keepPresence(tables, storage.wakeUps) }
        }
        return readers
    }

    func prepare(_ items: [OutboundQueue.Item]) -> Batch {
        let posts = OutboundQueue.posts(in: items)
        let expires = items.contains { if case .heartbeat = $0 { true } else { false } }
        return Batch(items: items, posts: posts, rows: relay.batch(of: posts), expires: expires)
    }

    func append(_ batch: Batch, isRetry: Bool, to storage: SQLiteRelay.Storage) async throws {
        let database = storage.database
        _ = try await carrier.publishing(batch.posts) {
            try await database.publish(batch.rows, at: SQLiteRelay.milliseconds())
        }
        let mails = OutboundQueue.mailCount(of: batch.items)
        if mails > 0 { carrier.reporter.count { $0.published += mails } }
        if !batch.rows.isEmpty {
            storage.wakeUps.nudge()
            if batch.rows.contains(where: { $0.stream != nil }) { storage.wakeUps.wakeHere() }
        }
        if batch.expires { await relay.expire(database) }
    }

    func appendFailed(_ error: any Error, on storage: SQLiteRelay.Storage) async -> String {
        String(describing: error)
    }

    func backoff(attempt: Int) async -> Bool {
        await relay.backoff(attempt: attempt)
    }

    func close(_ storage: SQLiteRelay.Storage) async {
        if let tables = storage.presence { await relay.leavePresence(tables) }
        relay.state.withLock { ($0.database, $0.wakeUps) = (nil, nil) }
        await storage.close()
    }
}
