@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// Publishes queued posts on a connection of its own until the queue is closed and empty.
    ///
    /// How a batch is written, and whether a failed one is written again, is the mode's:
    /// ``DurableMode`` keeps a failed batch, numbered once, and publishes it again once
    /// reconnected (a lost connection loses nothing); ``EphemeralMode`` drops it and reports it,
    /// and its numbers let every receiver count it as missing.
    func publish() async {
        var connection: PostgresConnection?
        var attempt = 0
        while let items = await carrier.takeQueued() {
            var unsent = items
            // The posts every attempt at this batch publishes: its span's links and its durations.
            let posts = Self.posts(in: items)
            var durableBatch: DurableMode.Batch?  // numbered at the first attempt, kept for the next
            while !unsent.isEmpty {
                do {
                    if connection == nil || connection?.isClosed == true {
                        connection = try await connect()
                    }
                    // A connection that dies mid-statement is not always failed at once: bounded,
                    // a stuck attempt is closed and retried like any other failure.
                    let open = connection!
                    switch mode {
                    case .durable(let durable):
                        let isRetry = durableBatch != nil
                        let batch =
                            durableBatch
                            ?? durable.batch(of: unsent, origin: origin, signer: signer) { [registry] name in
                                registry.mailCodec(named: name)?.isFleetWide ?? false
                            }
                        durableBatch = batch
                        let origin = origin
                        try await carrier.publishing(posts) {
                            try await statement(on: open) {
                                try await durable.insert(batch, origin: origin, isRetry: isRetry, on: open)
                            }
                        }
                        count { $0.published += batch.mails }
                    case .ephemeral(let ephemeral):
                        let (sending, origin, signer) = (unsent, origin, signer)
                        let sent = try await carrier.publishing(posts) {
                            try await statement(on: open) {
                                try await ephemeral.send(sending, origin: origin, signer: signer, on: open)
                            }
                        }
                        count { counters in
                            counters.published += sent.mails
                            counters.spilled += sent.spilledMails
                        }
                    }
                    attempt = 0
                    Self.resolveFlushes(in: unsent, .passed)
                    unsent = []
                } catch {
                    await close(connection)
                    connection = nil
                    let mails = OutboundQueue.mailCount(of: unsent)
                    report(.publishFailed(reason: Self.reason(error), mails: mails)) { $0.publishFailures += 1 }
                    switch mode {
                    case .durable:
                        break  // the same batch again, once reconnected
                    case .ephemeral:
                        gate.lose(mails)  // counted before the flushes behind them return
                        Self.resolveFlushes(in: unsent, .passed)
                        unsent = []
                    }
                    attempt += 1
                    guard !Task.isCancelled, await backoff(attempt: attempt) else {
                        Self.resolveFlushes(in: unsent, .notRunning)
                        return
                    }
                }
            }
        }
        await close(connection)
    }

    /// Runs one publishing statement on `connection`, within the call deadline.
    ///
    /// None starts once the relay is cancelled; one already sent is awaited even so (up to the
    /// deadline), because it may have committed: its mails are then counted as published, and
    /// flushes waiting for them return, instead of being reported as a failed publish.
    private func statement<Result: Sendable>(
        on connection: PostgresConnection,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        try Task.checkCancellation()
        return try await withDeadline(
            callDeadline,
            for: "a publish",
            closing: connection,
            marking: Unanswered(),
            cancellable: false,
            body
        )
    }

    /// The posts among `items`.
    private static func posts(in items: [OutboundQueue.Item]) -> [OutboundPost] {
        items.compactMap { item in
            guard case .post(let post) = item else { return nil }
            return post
        }
    }

    /// Tells the flushes among `items` how their batch ended.
    private static func resolveFlushes(in items: [OutboundQueue.Item], _ outcome: FlushOutcome) {
        for case .flush(let ticket) in items { ticket.resolve(outcome) }
    }
}
