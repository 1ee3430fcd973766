import AsyncMail
import Logging
import PostgresNIO
import Synchronization

extension PostgresRelay {
    /// The listening connection's life, over and over until cancelled: connect, `LISTEN`, catch
    /// up (durable), then take mail as it is announced, while a heartbeat checks the connection
    /// from the moment it is open, so that no step can hang on a connection that stopped answering.
    func listen() async {
        var attempt = 0
        while !Task.isCancelled {
            do {
                let connection = try await connect()
                attempt = 0
                do {
                    try await watch(connection)
                } catch {
                    await close(connection)
                    throw error
                }
                await close(connection)
            } catch {
                guard !Task.isCancelled else { return }
                report(.disconnected(reason: Self.reason(error))) { $0.disconnects += 1 }
                attempt += 1
                guard await backoff(attempt: attempt) else { return }
            }
        }
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
        } catch  where unanswered.happened {
            throw NoAnswer(to: "a heartbeat", within: configuration.heartbeatInterval * 3)
        }
    }

    /// Serves one listening connection until it fails or the task is cancelled.
    private func serve(
        _ notifications: PostgresNotificationSequence,
        on connection: PostgresConnection,
        wakes: AsyncStream<Void>,
        wake: AsyncStream<Void>.Continuation
    ) async throws {
        let durable: Bool
        if case .durable = configuration.mode { durable = true } else { durable = false }
        // LISTEN is in place: whatever is committed from here on is announced, so catching up now
        // leaves no window in which a row could be missed.
        if durable { try await catchUp(on: connection) }
        report(.listening) { _ in }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await notification in notifications {
                    if durable {
                        wake.yield()  // a wake-up: the rows are in the table
                    } else {
                        try await self.receive(notification.payload, on: connection)
                    }
                }
                throw ListenerEnded()
            }
            if durable {
                group.addTask {
                    for await _ in wakes { try await self.catchUp(on: connection) }
                }
            }
            _ = try await group.next()
            group.cancelAll()
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
            beats += 1
            if beats % 60 == 1 {
                // Row-level deletes: writers are not blocked.
                let retention: Duration
                switch configuration.mode {
                case .durable(let kept): retention = kept
                case .ephemeral: retention = Self.spillRetention
                }
                let seconds = Double(retention.components.seconds) + Double(retention.components.attoseconds) * 1e-18
                try await connection.query(
                    """
                    DELETE FROM \(unescaped: table) WHERE channel = \(configuration.channel.name)
                    AND created_at < now() - make_interval(secs => \(seconds))
                    """,
                    logger: logger
                )
            }
        }
    }

    /// Runs `body`, `what` the connection is asked; if it has not finished within `limit`, closes
    /// `connection` and throws, without waiting for `body` (see ``Deadline``).
    func withDeadline(
        _ limit: Duration,
        for what: String,
        closing connection: PostgresConnection,
        marking unanswered: Unanswered,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        guard try await Deadline.run(limit, body) == nil else { return }
        unanswered.mark()
        await close(connection)
        throw NoAnswer(to: what, within: limit)
    }

    /// Durable mode: reads every row past the cursor, in id order, and delivers it.
    private func catchUp(on connection: PostgresConnection) async throws {
        let page = 500
        while true {
            let cursor = state.withLock { $0.cursor ?? 0 }
            let rows = try await connection.query(
                """
                SELECT id, payload FROM \(unescaped: table)
                WHERE channel = \(configuration.channel.name) AND id > \(cursor) ORDER BY id LIMIT \(page)
                """,
                logger: logger
            )
            var read = 0
            for try await (id, payload) in rows.decode((Int64, String).self) {
                read += 1
                try await receive(payload, on: connection)
                state.withLock { $0.cursor = id }
            }
            if read < page { return }
        }
    }

    /// Delivers one received payload into the local mailroom, or reports why not; a spilled
    /// post's row is read on `connection`.
    ///
    /// - Throws: only when reading a spilled post's row fails, after reporting its mails missing.
    func receive(_ payload: String, on connection: PostgresConnection) async throws {
        // This process's own mail and heartbeats, back from the database, are dropped before
        // decoding: every relay of a fleet receives everything published on its channel, and
        // every envelope this relay builds starts with its origin.
        if payload.utf8.starts(with: ownEnvelopeStart.utf8) { return }
        switch registry.decode(payload) {
        case .heartbeat(let from, let last):
            account(from: from, through: last, first: nil)
        case .post(let from, let first, let count, let content):
            if let first {
                switch configuration.mode {
                case .ephemeral:
                    account(from: from, through: first + count - 1, first: first)
                case .durable:
                    guard isFirstDelivery(from: from, first: first, count: count) else {
                        state.withLock { $0.counters.duplicates += count }
                        return
                    }
                }
            }
            await deliver(content, count: count)
        case .spilled(let from, let first, let count, let row):
            account(from: from, through: first + count - 1, first: first)
            try await receiveSpilled(row: row, from: from, count: count, on: connection)
        case .malformed(let reason):
            report(.decodeFailed(type: "?", reason: reason)) { $0.decodeFailures += 1 }
        }
    }

    /// Ephemeral mode: reads a spilled post's row and delivers it. A row that is gone (older than
    /// the spill retention) or cannot be read loses its mails, and they are reported missing.
    private func receiveSpilled(row: Int64, from: String, count: Int, on connection: PostgresConnection) async throws {
        var payload: String?
        do {
            let rows = try await connection.query(
                """
                SELECT payload FROM \(unescaped: table)
                WHERE id = \(row) AND channel = \(configuration.channel.name)
                """,
                logger: logger
            )
            for try await found in rows.decode(String.self) { payload = found }
        } catch {
            report(.gap(origin: from, missing: count)) { $0.missing += count }
            throw error
        }
        guard let payload else {
            report(.gap(origin: from, missing: count)) { $0.missing += count }
            return
        }
        switch registry.decode(payload) {
        case .post(_, _, _, let content):
            await deliver(content, count: count)
        case .heartbeat, .spilled:
            report(.decodeFailed(type: "?", reason: "row \(row) holds no post")) { $0.decodeFailures += count }
        case .malformed(let reason):
            report(.decodeFailed(type: "?", reason: reason)) { $0.decodeFailures += count }
        }
    }

    /// Posts decoded mail into the local mailroom, marked so that this relay's tap leaves it out.
    private func deliver(_ content: InboundContent, count: Int) async {
        switch content {
        case .decoded(let post, let sender):
            // Counted first, so that whoever sees the mail sees it counted.
            state.withLock { $0.counters.received += count }
            let relayID = ObjectIdentifier(self)
            await RelayInbound.$relay.withValue(relayID) {
                _ = await post.post(mailroom, sender)
            }
        case .unknownType(let name):
            report(.unknownType(name)) { $0.unknownType += count }
        case .failed(let type, let reason):
            report(.decodeFailed(type: type, reason: reason)) { $0.decodeFailures += count }
        }
    }

    /// Durable mode: false for a row this relay has delivered already, which an origin publishes
    /// again when it lost the answer to a commit that succeeded. Each origin numbers its rows in
    /// commit order, so anything at or below the last number seen is a repeat.
    private func isFirstDelivery(from origin: String, first: Int, count: Int) -> Bool {
        state.withLock { state in
            if let seen = state.lastNumber[origin], first <= seen { return false }
            state.lastNumber[origin] = first + count - 1
            return true
        }
    }

    /// Ephemeral mode: checks an origin's numbering, and reports the exact count of what is missing.
    private func account(from origin: String, through last: Int, first: Int?) {
        let missing: Int = state.withLock { state in
            guard let seen = state.lastNumber[origin] else {
                state.lastNumber[origin] = last  // first contact: nothing before it was ours to see
                return 0
            }
            let expected = seen + 1
            let missing = max((first ?? last + 1) - expected, 0)
            state.lastNumber[origin] = max(seen, last)
            return missing
        }
        if missing > 0 {
            report(.gap(origin: origin, missing: missing)) { $0.missing += missing }
        }
    }
}

/// Whether a heartbeat went unanswered, so that the errors closing that connection causes are
/// reported as what they are: a connection that stopped answering.
final class Unanswered: Sendable {
    private let flag = Atomic(false)

    var happened: Bool { flag.load(ordering: .sequentiallyConsistent) }

    func mark() {
        flag.store(true, ordering: .sequentiallyConsistent)
    }
}

/// The notification stream of a listening connection ended: the connection is gone.
struct ListenerEnded: Error, CustomStringConvertible {
    var description: String { "the listening connection closed" }
}

/// A connection did not answer in time: probably half-open, or stuck on a server that went away.
struct NoAnswer: Error, CustomStringConvertible {
    let what: String
    let limit: Duration

    init(to what: String, within limit: Duration) {
        self.what = what
        self.limit = limit
    }

    var description: String { "no answer to \(what) within \(limit): the connection is treated as lost" }
}
