@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

/// Durable mode's half of the relay: every post a numbered row, read in id order by every reader
/// from its cursor. Owns its SQL, its numbering and its cursor.
///
/// A failed batch is published again as it was, with the numbers it was given the first time,
/// so a repeat of an attempt that committed after all is recognised by receivers and dropped.
final class DurableMode: Sendable {
    let table: RelayTable

    /// The number of this origin's last mail.
    private let lastNumber = Guarded(0)
    /// How far this relay has read: set to the newest row when the table is set up, so a new
    /// relay hears only what is posted from then on.
    let cursor = RowCursor()

    /// One batch of posts, numbered and encoded, ready to insert (again, after a failure).
    struct Batch: Sendable {
        let rows: [String]
        /// Per row: the room's key of a type with fleet-wide positions (see ``RoomStream``), else
        /// empty (postgres-nio binds no array of optionals).
        let streams: [String]
        /// Per row: how many mails it holds, and this origin's number of its last.
        let counts: [Int64]
        let lastNumbers: [Int64]
        let mails: Int
    }

    /// One row read from the table (see `StoredRow`).
    typealias Row = StoredRow
    /// One counter of the channel: `stream` empty for the whole channel, else a room's key (see
    /// ``RoomStream``).
    typealias Counter = StoredCounter

    init(table: RelayTable) {
        self.table = table
    }

    /// Starts reading after `id`, the channel's numbers after `channelLast`.
    func startReading(after id: Int64, channelLast: Int64) {
        cursor.start(after: id, channelLast: channelLast)
    }

    /// Numbers the posts among `items` for `origin`, once: one signed row per post.
    /// `isFleetWide` says which wire names take the table's positions.
    func batch(
        of items: [OutboundQueue.Item],
        origin: String,
        signer: PayloadSigner?,
        isFleetWide: (String) -> Bool = { _ in false }
    ) -> Batch {
        let mails = OutboundQueue.mailCount(of: items)
        var last = lastNumber.withLock { last in
            defer { last += mails }
            return last
        }
        var (rows, streams, counts, lastNumbers) = ([String](), [String](), [Int64](), [Int64]())
        for case .post(let post) in items {
            let payload = post.payload(origin: origin, firstNumber: last + 1)
            rows.append(signer?.sign(payload) ?? payload)
            streams.append(
                isFleetWide(post.type)
                    ? RoomStream.key(type: post.type, senderType: post.senderType, sender: post.sender) : ""
            )
            last += post.mailCount
            counts.append(Int64(post.mailCount))
            lastNumbers.append(Int64(last))
        }
        return Batch(rows: rows, streams: streams, counts: counts, lastNumbers: lastNumbers, mails: mails)
    }

    /// Inserts every row of `batch` in one statement, which first takes the channel's advisory
    /// lock. Without the lock, two writers could commit ids out of order, and a reader past the
    /// later id would never see the earlier one.
    ///
    /// One statement is one round trip and its own transaction: every row is joined with the
    /// lock's one row, so the lock is held before the first id is drawn, and until commit, when
    /// the wake-up `NOTIFY` is delivered. Under the lock the statement also numbers the mails,
    /// per channel and per fleet-wide stream, from the counters table, so that the numbers
    /// follow the ids with no hole; and it skips rows whose origin numbers the origin's counter
    /// has passed, so that a batch published again after a lost answer is not written twice.
    ///
    /// A retry takes the lock in a statement of its own first: a statement's snapshot is taken
    /// before it waits for the lock, so only then does it see an attempt that committed meanwhile.
    func insert(_ batch: Batch, origin: String, isRetry: Bool, on connection: PostgresConnection) async throws {
        guard !batch.rows.isEmpty else { return }  // only flushes: nothing to write
        let counters = RelayTable.counters
        let insert: PostgresQuery = """
            WITH locked AS (SELECT pg_advisory_xact_lock(hashtext(\(table.channel)))),
            prior AS (
                SELECT coalesce((
                    SELECT last FROM \(unescaped: counters)
                    WHERE relay_table = \(table.name) AND channel = \(table.channel) AND stream = \("@" + origin)
                ), 0) AS last FROM locked
            ),
            posts AS (
                SELECT p.payload, nullif(p.stream, '') AS stream, p.mails, p.number, p.ord,
                    (sum(p.mails) OVER (ORDER BY p.ord))::bigint AS channel_through,
                    (sum(p.mails) OVER (PARTITION BY nullif(p.stream, '') ORDER BY p.ord))::bigint AS stream_through
                FROM prior, unnest(\(batch.rows)::text[], \(batch.streams)::text[], \(batch.counts)::bigint[],
                    \(batch.lastNumbers)::bigint[]) WITH ORDINALITY AS p(payload, stream, mails, number, ord)
                WHERE p.number > prior.last
            ),
            totals AS (
                SELECT '' AS stream, sum(mails)::bigint AS mails FROM posts HAVING count(*) > 0
                UNION ALL
                SELECT stream, sum(mails)::bigint FROM posts WHERE stream IS NOT NULL GROUP BY stream
            ),
            counted AS (
                INSERT INTO \(unescaped: counters) AS c (relay_table, channel, stream, last, epoch)
                SELECT \(table.name), \(table.channel), totals.stream, totals.mails,
                    1 + floor(random() * 9.2e18)::bigint
                FROM totals
                ON CONFLICT (relay_table, channel, stream) DO UPDATE SET last = c.last + excluded.last, touched = now()
                RETURNING c.stream, c.last, c.epoch
            ),
            numbered AS (
                INSERT INTO \(unescaped: counters) AS c (relay_table, channel, stream, last, epoch)
                SELECT \(table.name), \(table.channel), \("@" + origin), max(number), 0 FROM posts HAVING count(*) > 0
                ON CONFLICT (relay_table, channel, stream) DO UPDATE SET last = excluded.last, touched = now()
            ),
            inserted AS (
                INSERT INTO \(unescaped: table.name)
                    (channel, payload, channel_first, mails, stream, stream_epoch, stream_first)
                SELECT \(table.channel), posts.payload,
                    whole.last - whole_total.mails + posts.channel_through - posts.mails + 1, posts.mails,
                    posts.stream, own.epoch, own.last - own_total.mails + posts.stream_through - posts.mails + 1
                FROM posts
                JOIN counted whole ON whole.stream = ''
                JOIN totals whole_total ON whole_total.stream = ''
                LEFT JOIN counted own ON own.stream = posts.stream
                LEFT JOIN totals own_total ON own_total.stream = posts.stream
                ORDER BY posts.ord
            )
            SELECT pg_notify(\(table.channel), '')
            """
        // The rows are read to the end: `query` returns once the statement is described, before
        // it has run, so an error after that (the server shutting down while the statement waits
        // for the lock) would otherwise pass for success, and the batch be lost.
        guard isRetry else {
            for try await _ in try await connection.query(insert, logger: table.logger) {}
            return
        }
        try await connection.withTransaction(logger: table.logger) { connection in
            let lock: PostgresQuery = "SELECT pg_advisory_xact_lock(hashtext(\(table.channel)))"
            for try await _ in try await connection.query(lock, logger: table.logger) {}
            for try await _ in try await connection.query(insert, logger: table.logger) {}
        }
    }

    /// Reads every row past the cursor, in id order, a page at a time, handing each to
    /// `deliver`, which says whether it was genuine. A row larger than `maximumBytes` is not transferred: `reject` gets its id and
    /// size. The cursor passes each row once it has been handled. A row numbered past the
    /// channel's last number read means rows deleted before they were read: `expired` gets how
    /// many mails, exactly.
    func catchUp(
        on connection: PostgresConnection,
        maximumBytes: Int,
        deliver: (Row) async throws -> Bool,
        reject: (_ row: Int64, _ bytes: Int) -> Void,
        expired: (_ mails: Int) -> Void
    ) async throws {
        let page = 500
        while true {
            let cursor = self.cursor.cursor
            let rows = try await connection.query(
                """
                SELECT id, octet_length(payload), CASE WHEN octet_length(payload) <= \(maximumBytes) THEN payload END,
                    channel_first, mails, stream, stream_epoch, stream_first
                FROM \(unescaped: table.name)
                WHERE channel = \(table.channel) AND id > \(cursor) ORDER BY id LIMIT \(page)
                """,
                logger: table.logger
            )
            var read = 0
            for try await columns in rows.decode(StoredRow.Columns.self) {
                read += 1
                let row = StoredRow(columns)
                // A row's numbers count only once its payload is found genuine (signed, where
                // the fleet has a key): a row forged with a far number would report a false loss.
                var genuine = true
                if row.payload != nil { genuine = try await deliver(row) } else { reject(row.id, row.bytes) }
                let missed = self.cursor.pass(row, genuine: genuine)
                if missed > 0 { expired(missed) }
            }
            if read < page { return }
        }
    }

    /// The channel's counters: the whole channel's and each fleet-wide stream's.
    func counters(on connection: PostgresConnection) async throws -> [Counter] {
        let rows = try await connection.query(
            """
            SELECT stream, last, epoch FROM \(unescaped: RelayTable.counters)
            WHERE relay_table = \(table.name) AND channel = \(table.channel) AND stream NOT LIKE '@%'
            """,
            logger: table.logger
        )
        var counters: [Counter] = []
        for try await (stream, last, epoch) in rows.decode((String, Int64, Int64).self) {
            counters.append(Counter(stream: stream, last: last, epoch: epoch))
        }
        return counters
    }

    /// The newest rows of each room of a fleet-wide type up to `newest`: the newest `count` of
    /// each room, or those younger than `maxAge`, oldest first; what a relay fills its rooms'
    /// histories with as it starts.
    func newestRows(
        of wireName: String,
        through newest: Int64,
        count: Int?,
        maxAge: Duration?,
        maximumBytes: Int,
        on connection: PostgresConnection
    ) async throws -> [Row] {
        let seconds = maxAge?.inSeconds
        let rows = try await connection.query(
            """
            SELECT id, bytes, payload, channel_first, mails, stream, stream_epoch, stream_first FROM (
                SELECT id, octet_length(payload) AS bytes,
                    CASE WHEN octet_length(payload) <= \(maximumBytes) THEN payload END AS payload,
                    channel_first, mails, stream, stream_epoch, stream_first,
                    row_number() OVER (PARTITION BY stream ORDER BY id DESC) AS nth
                FROM \(unescaped: table.name)
                WHERE channel = \(table.channel) AND left(stream, \(wireName.utf8.count + 1)::int) = \(wireName + "/")
                    AND id <= \(newest)
                    AND (\(seconds)::float8 IS NULL OR created_at >= now() - make_interval(secs => \(seconds)::float8))
            ) newest
            WHERE \(count.map(Int64.init))::bigint IS NULL OR nth <= \(count.map(Int64.init))::bigint
            ORDER BY id
            """,
            logger: table.logger
        )
        var found: [Row] = []
        for try await columns in rows.decode(StoredRow.Columns.self) { found.append(StoredRow(columns)) }
        return found
    }
}

extension StoredRow {
    /// The columns a query for rows selects, in this order (see ``DurableMode/catchUp`` and
    /// ``DurableMode/newestRows``): id, size, payload within the limit, then the numbers.
    typealias Columns = (Int64, Int, String?, Int64?, Int64?, String?, Int64?, Int64?)

    init(_ columns: Columns) {
        self.init(
            id: columns.0,
            bytes: columns.1,
            payload: columns.2,
            channelFirst: columns.3,
            mails: columns.4,
            stream: columns.5,
            streamEpoch: columns.6,
            streamFirst: columns.7
        )
    }
}
