import AsyncMail
import Logging
import PostgresNIO
import RelayWire

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
                    Self.resolveFlushes(in: unsent, .passed)
                    unsent = []
                } catch {
                    await close(connection)
                    connection = nil
                    let mails = Self.mailCount(of: unsent)
                    report(.publishFailed(reason: Self.reason(error), mails: mails)) { $0.publishFailures += 1 }
                    if case .ephemeral = configuration.mode {
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

    /// Tells the flushes among `items` how their batch ended.
    private static func resolveFlushes(in items: [OutboundQueue.Item], _ outcome: FlushTicket.Outcome) {
        for case .flush(let ticket) in items { ticket.resolve(outcome) }
    }

    /// `json` signed with the fleet's key, or as it is when there is none.
    private func signed(_ json: String) -> String {
        signer?.sign(json) ?? json
    }

    private static func mailCount(of items: [OutboundQueue.Item]) -> Int {
        items.reduce(0) { count, item in
            if case .post(let post) = item { return count + post.mails.count }
            return count
        }
    }

    /// Takes the next `mails` numbers of this origin; returns the number before the first.
    /// Numbers are taken under the lock, the payloads are built outside it.
    private func takeNumbers(_ mails: Int) -> Int {
        state.withLock { state in
            defer { state.lastSent += mails }
            return state.lastSent
        }
    }

    /// Durable mode: one row per post, numbered for this origin.
    private func numberedRows(of items: [OutboundQueue.Item]) -> [String] {
        var last = takeNumbers(Self.mailCount(of: items))
        var rows: [String] = []
        for case .post(let post) in items {
            rows.append(signed(post.payload(origin: origin, firstNumber: last + 1)))
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
        guard !payloads.isEmpty else { return }  // only flushes: nothing to write
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

    /// Ephemeral mode: each post in one notification, its mails numbered for this origin, and
    /// heartbeats carrying the last number, all in one statement. A post whose payload would not
    /// fit a notification (PostgreSQL's limit) is kept in the table instead, in the same
    /// statement, and its notification carries the row's id.
    private func notify(_ items: [OutboundQueue.Item], on connection: PostgresConnection) async throws {
        let mails = Self.mailCount(of: items)
        var last = takeNumbers(mails)
        var notices: [String] = []
        var spills: [String] = []
        var spillOfNotice: [Int] = []  // per notice: 0, or the 1-based index of its post in `spills`
        var spilledMails = 0
        for item in items {
            switch item {
            case .heartbeat:
                notices.append(signed(OutboundPost.heartbeat(origin: origin, last: last)))
                spillOfNotice.append(0)
            case .flush:
                break
            case .post(let post):
                let payload = signed(post.payload(origin: origin, firstNumber: last + 1))
                if payload.utf8.count <= Self.notifyLimit {
                    notices.append(payload)
                    spillOfNotice.append(0)
                } else {
                    spills.append(payload)
                    notices.append(post.spillNotice(origin: origin, firstNumber: last + 1))
                    spillOfNotice.append(spills.count)
                    spilledMails += post.mails.count
                }
                last += post.mails.count
            }
        }
        let channel = configuration.channel.name
        if notices.isEmpty {
            // Only flushes: nothing to send.
        } else if spills.isEmpty {
            try await connection.query(
                """
                SELECT pg_notify(\(channel), notice)
                FROM unnest(\(notices)::text[]) WITH ORDINALITY AS notices(notice, position) ORDER BY position
                """,
                logger: logger
            )
        } else {
            // Ids are drawn in the order of the insert's rows, so the n-th smallest id returned is
            // the n-th post's. The notices are sent at commit, when the rows are visible.
            try await connection.query(
                """
                WITH spilled AS (
                    INSERT INTO \(unescaped: table) (channel, payload)
                    SELECT \(channel), spills.payload
                    FROM unnest(\(spills)::text[]) WITH ORDINALITY AS spills(payload, position)
                    ORDER BY spills.position
                    RETURNING id
                ),
                rows AS (SELECT array_agg(id ORDER BY id) AS ids FROM spilled)
                SELECT pg_notify(
                    \(channel),
                    CASE WHEN notices.spill = 0 THEN notices.notice
                    ELSE notices.notice || rows.ids[notices.spill] || '}' END
                )
                FROM rows, unnest(\(notices)::text[], \(spillOfNotice)::int[])
                    WITH ORDINALITY AS notices(notice, spill, position)
                ORDER BY notices.position
                """,
                logger: logger
            )
        }
        state.withLock { state in
            state.counters.published += mails
            state.counters.spilled += spilledMails
        }
    }
}
