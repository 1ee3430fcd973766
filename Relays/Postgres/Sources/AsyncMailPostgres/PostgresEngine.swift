@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

/// What the PostgreSQL relay writes and reads; `RelayRunner` runs it (see `RelayEngine`).
///
/// Opening prepares the table; the readers are the listening connection, the presence loop and,
/// in ephemeral mode, the heartbeat; a batch is appended on a publishing connection of its own.
/// How a batch is written, and whether a failed one is written again, is the mode's:
/// ``DurableMode`` keeps a failed batch, numbered once, and publishes it again once reconnected
/// (a lost connection loses nothing); ``EphemeralMode`` drops it and reports it, and its numbers
/// let every receiver count it as missing.
struct PostgresEngine: RelayEngine {
    let relay: PostgresRelay

    /// The publishing connection, opened by the first append and again after a failure. Only
    /// the publisher uses it, one call at a time.
    final class Store: Sendable {
        let publishing = Guarded<PostgresConnection?>(nil)
    }

    /// A batch, prepared once for every attempt at it.
    struct Batch {
        /// Its posts: its span's links and its durations.
        let posts: [OutboundPost]
        let write: Write
    }

    /// What the mode writes for a batch.
    enum Write {
        /// The batch numbered for this origin, once.
        case durable(DurableMode, DurableMode.Batch)
        /// The queue's items as they are, heartbeats and spill notices included.
        case ephemeral(EphemeralMode, [OutboundQueue.Item])
    }

    var carrier: MailCarrier { relay.carrier }
    var presence: PresenceKeeper { relay.presence }

    var failurePolicy: PublisherMachine.FailurePolicy {
        switch relay.mode {
        case .durable: .retry
        case .ephemeral: .drop
        }
    }

    func open() async throws -> Store {
        try await relay.prepareTable()
        return Store()
    }

    func readers(of store: Store) -> [@Sendable () async throws -> Void] {
        var readers: [@Sendable () async throws -> Void] = [
            { await relay.listen() },
            { await relay.keepPresence() },
        ]
        if case .ephemeral = relay.mode { readers.append { await relay.beat() } }
        return readers
    }

    func prepare(_ items: [OutboundQueue.Item]) -> Batch {
        let write: Write
        switch relay.mode {
        case .durable(let durable):
            let numbered = durable.batch(of: items, origin: relay.origin, signer: relay.signer) {
                [registry = relay.registry] in registry.mailCodec(named: $0)?.isFleetWide ?? false
            }
            write = .durable(durable, numbered)
        case .ephemeral(let ephemeral):
            write = .ephemeral(ephemeral, items)
        }
        return Batch(posts: OutboundQueue.posts(in: items), write: write)
    }

    func append(_ batch: Batch, isRetry: Bool, to store: Store) async throws {
        let connection: PostgresConnection
        if let open = store.publishing.withLock({ $0 }), !open.isClosed {
            connection = open
        } else {
            connection = try await relay.connect()
            store.publishing.withLock { $0 = connection }
        }
        let (origin, signer) = (relay.origin, relay.signer)
        switch batch.write {
        case .durable(let durable, let numbered):
            try await carrier.publishing(batch.posts) {
                try await statement(on: connection) {
                    try await durable.insert(numbered, origin: origin, isRetry: isRetry, on: connection)
                }
            }
            relay.count { $0.published += numbered.mails }
        case .ephemeral(let ephemeral, let items):
            let sent = try await carrier.publishing(batch.posts) {
                try await statement(on: connection) {
                    try await ephemeral.send(items, origin: origin, signer: signer, on: connection)
                }
            }
            relay.count { counters in
                counters.published += sent.mails
                counters.spilled += sent.spilledMails
            }
        }
    }

    func appendFailed(_ error: any Error, on store: Store) async -> String {
        await relay.close(store.publishing.withLock { $0.take() })
        return PostgresRelay.reason(error)
    }

    func backoff(attempt: Int) async -> Bool {
        await relay.backoff(attempt: attempt)
    }

    func close(_ store: Store) async {
        await relay.close(store.publishing.withLock { $0.take() })
        await relay.leavePresence()
    }

    /// Runs one publishing statement on `connection`, within the call deadline: a connection
    /// that dies mid-statement is not always failed at once, so a stuck attempt is closed and
    /// retried like any other failure.
    ///
    /// None starts once the relay is cancelled; one already sent is awaited even so (up to the
    /// deadline), because it may have committed: its mails are then counted as published, and
    /// flushes waiting for them return, instead of being reported as a failed publish.
    private func statement<Result: Sendable>(
        on connection: PostgresConnection,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        try Task.checkCancellation()
        return try await relay.withDeadline(
            relay.callDeadline,
            for: "a publish",
            closing: connection,
            marking: Unanswered(),
            cancellable: false,
            body
        )
    }
}
