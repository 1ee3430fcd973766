import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// The listening connection's life, over and over until cancelled: connect, `LISTEN`, catch
    /// up (durable), then take mail as it is announced, while a heartbeat checks the connection
    /// from the moment it is open, so that no step can hang on a connection that stopped answering.
    func listen() async {
        await reconnecting { connection in try await self.watch(connection) }
    }

    /// Listens on one connection, with its heartbeat beside it, until either fails.
    private func watch(_ connection: PostgresConnection) async throws {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // Closing a connection that stopped answering fails everything on it; this keeps the cause.
        let unanswered = Unanswered()
        do {
            // The first to end, by failing, ends the connection; the other is cancelled but not
            // waited for, since a listen on a connection the server dropped can hang (see Deadline).
            try await Deadline.firstToEnd([
                {
                    try await connection.listen(on: self.configuration.channel.name) { notifications in
                        try await self.serve(notifications, on: connection, wakes: wakes, wake: wake)
                    }
                },
                { try await self.checkHealth(of: connection, waking: wake, unanswered: unanswered) },
            ])
        } catch {
            throw unanswered.noAnswer ?? error
        }
    }

    /// Serves one listening connection until it fails or the task is cancelled.
    private func serve(
        _ notifications: PostgresNotificationSequence,
        on connection: PostgresConnection,
        wakes: AsyncStream<Void>,
        wake: AsyncStream<Void>.Continuation
    ) async throws {
        switch mode {
        case .durable(let durable):
            // LISTEN is in place: whatever is committed from here on is announced, so catching up
            // now leaves no window in which a row could be missed.
            try await catchUp(durable, on: connection, comingBack: true)
            report(.listening) { _ in }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in notifications { wake.yield() }  // a wake-up: the rows are in the table
                    throw ListenerEnded()
                }
                group.addTask {
                    for await _ in wakes { try await self.catchUp(durable, on: connection) }
                }
                _ = try await group.next()
                group.cancelAll()
            }
        case .ephemeral(let ephemeral):
            report(.listening) { _ in }
            for try await notification in notifications {
                try await perform(receiver.receive(notification.payload)) { notice in
                    try await self.readSpilled(notice, from: ephemeral, on: connection)
                }
            }
            throw ListenerEnded()
        }
    }

    /// Every interval: a round trip on the listening connection, which a half-open connection
    /// never answers (so it is closed and reconnected), a durable catch-up in case a wake-up was
    /// missed, and now and then the retention clean-up.
    private func checkHealth(
        of connection: PostgresConnection,
        waking wake: AsyncStream<Void>.Continuation,
        unanswered: Unanswered
    ) async throws {
        var beats = 0
        while true {
            try await Task.sleep(for: configuration.heartbeatInterval)
            try await withDeadline(
                configuration.heartbeatInterval * 3,
                for: "a heartbeat",
                closing: connection,
                marking: unanswered
            ) {
                try await connection.query("SELECT 1", logger: self.logger)
            }
            wake.yield()
            receiver.tick()  // listening time: origins unheard for the retention are forgotten
            beats += 1
            if beats % 60 == 1 {
                // Bounded like every call on this connection, so that a slow delete cannot stall
                // the heartbeat for long.
                let (table, retention) = (table, configuration.retention)
                try await withDeadline(
                    callDeadline,
                    for: "the retention clean-up",
                    closing: connection,
                    marking: unanswered
                ) {
                    try await table.deleteExpired(olderThan: retention, on: connection)
                }
            }
        }
    }

    /// Durable mode: delivers every row past the cursor, in id order. A row larger than the post
    /// limit is not transferred: it is rejected by its size. On `comingBack` (the first catch-up
    /// of a connection) the channel's counters, read first, say what the retention deleted after
    /// the last row read, which no later row can say when nobody has posted since.
    private func catchUp(
        _ durable: DurableMode,
        on connection: PostgresConnection,
        comingBack: Bool = false
    )
        async throws
    {
        let counters = comingBack ? try await durable.counters(on: connection) : nil
        try await durable.catchUp(on: connection, maximumBytes: rowLimit) { row in
            // Durable mode rejects spill notices, so no row is ever read for one.
            guard let payload = row.payload else { return false }
            return await carrier.receive(row, payload: payload, with: receiver)
        } reject: { row, bytes in
            carrier.rejectOversize(row: row, bytes: bytes)
        } expired: { mails in
            report(.expired(mails: mails)) { $0.missing.addSaturating(mails) }
        }
        if let counters {
            let missed = durable.cursor.settle(counters)
            // The histories first, so that a client resuming on hearing of the loss is told too.
            carrier.moveOn(to: counters)
            if missed > 0 { report(.expired(mails: missed)) { $0.missing.addSaturating(missed) } }
        }
    }

    /// Does what the receiver decided: reports its notes, reads a spilled row with `readRow` and
    /// decides again, or delivers.
    ///
    /// With `positions`, a durable row's of a fleet-wide type, the post is delivered with them;
    /// with their `live` false it is only kept in the type's history.
    func perform(
        _ action: InboundReceiver.Action,
        positions: (epoch: UInt64, first: UInt64, live: Bool)? = nil,
        readRow: (InboundReceiver.SpillNotice) async throws -> String?
    ) async throws {
        switch action {
        case .report(let notes):
            for note in notes { reporter.report(note) }
        case .readSpilled(let notice):
            let row: String?
            do {
                row = try await readRow(notice)
            } catch {
                // Its mails are reported missing by the origin's next post or heartbeat.
                try await perform(receiver.receiveSpilled(nil, for: notice), readRow: readRow)
                throw error
            }
            try await perform(receiver.receiveSpilled(row, for: notice), readRow: readRow)
        case .deliver(let post, let sender, let notes):
            for note in notes { reporter.report(note) }
            await carrier.deliver(post, sender: sender, positions: positions)
        }
    }

    /// Ephemeral mode: the payload of the row a spill notice names, if it is still there and
    /// within the post limit (a larger one is rejected without being transferred).
    private func readSpilled(
        _ notice: InboundReceiver.SpillNotice,
        from ephemeral: EphemeralMode,
        on connection: PostgresConnection
    ) async throws -> String? {
        guard
            let (bytes, payload) = try await ephemeral.readSpilled(
                row: notice.row,
                maximumBytes: rowLimit,
                on: connection
            )
        else { return nil }
        if payload == nil { carrier.rejectOversize(row: notice.row, bytes: bytes) }
        return payload
    }

    /// The largest row payload that is transferred: a post's limit, or a mail's where larger.
    var rowLimit: Int { max(configuration.maximumPostBytes, configuration.maximumMailBytes) }
}

/// The notification stream of a listening connection ended: the connection is gone.
struct ListenerEnded: Error, CustomStringConvertible {
    var description: String { "the listening connection closed" }
}
