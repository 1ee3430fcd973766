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
    /// and its numbers let every receiver count it as missing. The loop is the carrier's, every
    /// engine's (``PublisherMachine``).
    func publish() async {
        var connection: PostgresConnection?
        let policy: PublisherMachine.FailurePolicy
        switch mode {
        case .durable: policy = .retry
        case .ephemeral: policy = .drop
        }
        await carrier.publish(
            policy: policy,
            backoff: { await self.backoff(attempt: $0) },
            prepare: { items in
                // The posts every attempt at this batch publishes: its span's links and its durations.
                var durable: DurableMode.Batch?
                if case .durable(let mode) = mode {
                    durable = mode.batch(of: items, origin: origin, signer: signer) { [registry] name in
                        registry.mailCodec(named: name)?.isFleetWide ?? false
                    }
                }
                return (items: items, posts: Self.posts(in: items), durable: durable)
            },
            write: { batch, isRetry in
                if connection == nil || connection?.isClosed == true {
                    connection = try await connect()
                }
                // A connection that dies mid-statement is not always failed at once: bounded,
                // a stuck attempt is closed and retried like any other failure.
                let open = connection!
                switch mode {
                case .durable(let durable):
                    let (numbered, origin) = (batch.durable!, origin)
                    try await carrier.publishing(batch.posts) {
                        try await statement(on: open) {
                            try await durable.insert(numbered, origin: origin, isRetry: isRetry, on: open)
                        }
                    }
                    count { $0.published += numbered.mails }
                case .ephemeral(let ephemeral):
                    let (sending, origin, signer) = (batch.items, origin, signer)
                    let sent = try await carrier.publishing(batch.posts) {
                        try await statement(on: open) {
                            try await ephemeral.send(sending, origin: origin, signer: signer, on: open)
                        }
                    }
                    count { counters in
                        counters.published += sent.mails
                        counters.spilled += sent.spilledMails
                    }
                }
            },
            failed: { error in
                await close(connection)
                connection = nil
                return Self.reason(error)
            }
        )
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
}
