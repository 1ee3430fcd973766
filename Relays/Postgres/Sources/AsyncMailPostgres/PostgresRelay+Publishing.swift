import AsyncMail
import Logging
import PostgresNIO

extension PostgresRelay {
    /// Publishes queued posts on a connection of its own until the queue is closed and empty.
    ///
    /// Durable mode keeps a batch that failed and publishes it again once reconnected (a lost
    /// connection loses nothing); its rows are numbered once, so that when a failed attempt had
    /// committed after all, receivers recognise the repeat and drop it. Ephemeral mode drops a
    /// failed batch, reports it, and its numbers let every receiver count it as missing.
    func publish() async {
        var connection: PostgresConnection?
        var attempt = 0
        while let items = await queue.takeAll() {
            var unsent = items
            var rows: [String]?  // durable: the batch's rows, numbered at the first attempt
            while !unsent.isEmpty {
                do {
                    if connection == nil || connection?.isClosed == true {
                        connection = try await connect()
                    }
                    // A connection that dies mid-statement is not always failed at once: bounded,
                    // a stuck attempt is closed and retried like any other failure.
                    let sending = unsent
                    let open = connection!
                    if case .durable = configuration.mode, rows == nil { rows = numberedRows(of: unsent) }
                    let numbered = rows
                    try await withDeadline(callDeadline, for: "a publish", closing: open, marking: Unanswered()) {
                        if let numbered {
                            try await self.insert(numbered, mails: Self.mailCount(of: sending), on: open)
                        } else {
                            try await self.notify(sending, on: open)
                        }
                    }
                    attempt = 0
                    unsent = []
                } catch {
                    await close(connection)
                    connection = nil
                    let mails = Self.mailCount(of: unsent)
                    report(.publishFailed(reason: Self.reason(error), mails: mails)) { $0.publishFailures += 1 }
                    if case .ephemeral = configuration.mode { unsent = [] }
                    attempt += 1
                    guard !Task.isCancelled, await backoff(attempt: attempt) else { return }
                }
            }
        }
        await close(connection)
    }

    private static func mailCount(of items: [OutboundQueue.Item]) -> Int {
        items.reduce(0) { count, item in
            if case .post(let post) = item { return count + post.mails.count }
            return count
        }
    }

    /// Durable mode: one row per post, numbered for this origin.
    private func numberedRows(of items: [OutboundQueue.Item]) -> [String] {
        let mails = Self.mailCount(of: items)
        var last = state.withLock { state in
            defer { state.lastSent += mails }
            return state.lastSent
        }
        var rows: [String] = []
        for case .post(let post) in items {
            rows.append(post.payload(origin: origin, firstNumber: last + 1))
            last += post.mails.count
        }
        return rows
    }

    /// Durable mode: every waiting post in one statement, one row per post, which first takes the
    /// channel's advisory lock. Without the lock, two writers could commit ids out of order, and a
    /// reader past the later id would never see the earlier one.
    ///
    /// One statement is one round trip and its own transaction: every row is joined with the
    /// lock's one row, so the lock is held before the first id is drawn, and until commit, when
    /// the wake-up `NOTIFY` is delivered.
    private func insert(_ payloads: [String], mails: Int, on connection: PostgresConnection) async throws {
        guard !payloads.isEmpty else { return }
        let channel = configuration.channel.name
        try await connection.query(
            """
            WITH locked AS (SELECT pg_advisory_xact_lock(hashtext(\(channel)))),
            inserted AS (
                INSERT INTO \(unescaped: table) (channel, payload)
                SELECT \(channel), posts.payload
                FROM locked, unnest(\(payloads)::text[]) WITH ORDINALITY AS posts(payload, position)
                ORDER BY posts.position
            )
            SELECT pg_notify(\(channel), '')
            """,
            logger: logger
        )
        state.withLock { $0.counters.published += mails }
    }

    /// Ephemeral mode: each post in notifications under PostgreSQL's payload limit, its mails
    /// numbered for this origin; heartbeats carry the last number. One statement for them all.
    private func notify(_ items: [OutboundQueue.Item], on connection: PostgresConnection) async throws {
        let mails = Self.mailCount(of: items)
        // Numbers are taken under the lock, the payloads are built outside it.
        var last = state.withLock { state in
            defer { state.lastSent += mails }
            return state.lastSent
        }
        var payloads: [String] = []
        for item in items {
            switch item {
            case .heartbeat:
                payloads.append(OutboundPost.heartbeat(origin: origin, last: last))
            case .post(let post):
                for chunk in Self.chunks(of: post) {
                    payloads.append(chunk.payload(origin: origin, firstNumber: last + 1))
                    last += chunk.mails.count
                }
            }
        }
        try await connection.query(
            """
            SELECT pg_notify(\(configuration.channel.name), payload)
            FROM unnest(\(payloads)::text[]) WITH ORDINALITY AS notes(payload, position) ORDER BY position
            """,
            logger: logger
        )
        state.withLock { $0.counters.published += mails }
    }

    /// Splits a post into pieces whose payloads fit one notification (each mail already does).
    private static func chunks(of post: OutboundPost) -> [OutboundPost] {
        var chunks: [OutboundPost] = []
        var current = post.emptied()
        var size = post.overheadBytes
        for mail in post.mails {
            if !current.mails.isEmpty, size + mail.count + 1 > notifyLimit {
                chunks.append(current)
                current = post.emptied()
                size = post.overheadBytes
            }
            current.append(mail)
            size += mail.count + 1
        }
        if !current.mails.isEmpty { chunks.append(current) }
        return chunks
    }
}
