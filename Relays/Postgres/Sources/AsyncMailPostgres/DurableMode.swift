import Logging
import PostgresNIO
import RelayWire
import Synchronization

/// Durable mode's half of the relay: every post a numbered row, read in id order by every reader
/// from its cursor. Owns its SQL, its numbering and its cursor.
///
/// A failed batch is published again as it was, with the numbers it was given the first time,
/// so a repeat of an attempt that committed after all is recognised by receivers and dropped.
final class DurableMode: Sendable {
    let table: RelayTable

    private struct State {
        /// The id of the last row read; set to the newest row when the table is set up, so a new
        /// relay hears only what is posted from then on.
        var cursor: Int64 = 0
        /// The number of this origin's last mail.
        var lastNumber = 0
    }

    private let state = Mutex(State())

    /// One batch of posts, numbered and encoded, ready to insert (again, after a failure).
    struct Batch: Sendable {
        let rows: [String]
        let mails: Int
    }

    init(table: RelayTable) {
        self.table = table
    }

    /// Starts reading after `id`.
    func startReading(after id: Int64) {
        state.withLock { $0.cursor = id }
    }

    /// Numbers the posts among `items` for `origin`, once: one signed row per post.
    func batch(of items: [OutboundQueue.Item], origin: String, signer: PayloadSigner?) -> Batch {
        let mails = OutboundQueue.mailCount(of: items)
        var last = state.withLock { state in
            defer { state.lastNumber += mails }
            return state.lastNumber
        }
        var rows: [String] = []
        for case .post(let post) in items {
            let payload = post.payload(origin: origin, firstNumber: last + 1)
            rows.append(signer?.sign(payload) ?? payload)
            last += post.mails.count
        }
        return Batch(rows: rows, mails: mails)
    }

    /// Inserts every row of `batch` in one statement, which first takes the channel's advisory
    /// lock. Without the lock, two writers could commit ids out of order, and a reader past the
    /// later id would never see the earlier one.
    ///
    /// One statement is one round trip and its own transaction: every row is joined with the
    /// lock's one row, so the lock is held before the first id is drawn, and until commit, when
    /// the wake-up `NOTIFY` is delivered.
    func insert(_ batch: Batch, on connection: PostgresConnection) async throws {
        guard !batch.rows.isEmpty else { return }  // only flushes: nothing to write
        try await connection.query(
            """
            WITH locked AS (SELECT pg_advisory_xact_lock(hashtext(\(table.channel)))),
            inserted AS (
                INSERT INTO \(unescaped: table.name) (channel, payload)
                SELECT \(table.channel), posts.payload
                FROM locked, unnest(\(batch.rows)::text[]) WITH ORDINALITY AS posts(payload, position)
                ORDER BY posts.position
            )
            SELECT pg_notify(\(table.channel), '')
            """,
            logger: table.logger
        )
    }

    /// Reads every row past the cursor, in id order, a page at a time, handing each payload to
    /// `deliver`. A row larger than `maximumBytes` is not transferred: `reject` gets its id and
    /// size. The cursor passes each row once it has been handled.
    func catchUp(
        on connection: PostgresConnection,
        maximumBytes: Int,
        deliver: (String) async throws -> Void,
        reject: (_ row: Int64, _ bytes: Int) -> Void
    ) async throws {
        let page = 500
        while true {
            let cursor = state.withLock { $0.cursor }
            let rows = try await connection.query(
                """
                SELECT id, octet_length(payload), CASE WHEN octet_length(payload) <= \(maximumBytes) THEN payload END
                FROM \(unescaped: table.name)
                WHERE channel = \(table.channel) AND id > \(cursor) ORDER BY id LIMIT \(page)
                """,
                logger: table.logger
            )
            var read = 0
            for try await (id, bytes, payload) in rows.decode((Int64, Int, String?).self) {
                read += 1
                if let payload { try await deliver(payload) } else { reject(id, bytes) }
                state.withLock { $0.cursor = id }
            }
            if read < page { return }
        }
    }
}
