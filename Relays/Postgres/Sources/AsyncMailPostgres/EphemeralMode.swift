@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

/// Ephemeral mode's half of the relay: every post in one `NOTIFY`, numbered per origin, with a
/// heartbeat carrying the last number, so a receiver counts whatever it missed. Owns its SQL and
/// its numbering.
///
/// A failed batch is not sent again: its numbers are spent, and receivers report its mails
/// missing. A post too large for a notification is kept in the table, and its notification names
/// the row.
final class EphemeralMode: Sendable {
    /// PostgreSQL rejects a notification payload of 8,000 bytes or more.
    static let notifyLimit = 7_999

    /// How long a spilled post's row is kept for its readers. Notifications arrive within
    /// milliseconds; a listener that falls further behind has the loss reported.
    static let spillRetention = Duration.seconds(300)

    let table: RelayTable
    /// The number of this origin's last mail.
    private let lastNumber = Guarded(0)

    /// What one batch sent.
    struct Sent {
        var mails = 0
        var spilledMails = 0
    }

    init(table: RelayTable) {
        self.table = table
    }

    /// Sends `items` for `origin`: each post as one notification (or a spilled row and a
    /// notification naming it), each heartbeat with the last number, in order. Numbers are taken
    /// whether or not sending succeeds.
    func send(
        _ items: [OutboundQueue.Item],
        origin: String,
        signer: PayloadSigner?,
        on connection: PostgresConnection
    ) async throws -> Sent {
        let mails = OutboundQueue.mailCount(of: items)
        var last = lastNumber.withLock { lastNumber in
            defer { lastNumber += mails }
            return lastNumber
        }
        /// A notification's text, or the post whose row's id it still needs.
        enum Notice {
            case ready(String)
            case spilled(OutboundPost, firstNumber: Int, row: Int)
        }
        var notices: [Notice] = []
        var spills: [String] = []
        var sent = Sent(mails: mails)
        for item in items {
            switch item {
            case .heartbeat:
                let heartbeat = OutboundPost.heartbeat(origin: origin, last: last)
                notices.append(.ready(signer?.sign(heartbeat) ?? heartbeat))
            case .flush:
                break
            case .post(let post):
                let unsigned = post.payload(origin: origin, firstNumber: last + 1)
                let payload = signer?.sign(unsigned) ?? unsigned
                if payload.utf8.count <= Self.notifyLimit {
                    notices.append(.ready(payload))
                } else {
                    notices.append(.spilled(post, firstNumber: last + 1, row: spills.count))
                    spills.append(payload)
                    sent.spilledMails += post.mailCount
                }
                last += post.mailCount
            }
        }
        guard !notices.isEmpty else { return sent }  // only flushes: nothing to send
        // Spilled posts first, committed before their notifications go out, so a receiver always
        // finds the row; every notification, spilled or not, then goes in order in one statement.
        let rows = spills.isEmpty ? [] : try await insertSpilled(spills, on: connection)
        let texts = notices.map { notice in
            switch notice {
            case .ready(let text): text
            case .spilled(let post, let firstNumber, let row):
                post.spillNotice(origin: origin, firstNumber: firstNumber, row: rows[row])
            }
        }
        // Read to the end, so that a failure after the statement was described is not success.
        for try await _ in try await connection.query(
            """
            SELECT pg_notify(\(table.channel), notice)
            FROM unnest(\(texts)::text[]) WITH ORDINALITY AS notices(notice, position) ORDER BY position
            """,
            logger: table.logger
        ) {}
        return sent
    }

    /// Inserts the spilled payloads and returns their row ids, in the payloads' order: ids are
    /// drawn in the order of the insert's rows.
    private func insertSpilled(_ payloads: [String], on connection: PostgresConnection) async throws -> [Int64] {
        let rows = try await connection.query(
            """
            WITH spilled AS (
                INSERT INTO \(unescaped: table.name) (channel, payload)
                SELECT \(table.channel), spills.payload
                FROM unnest(\(payloads)::text[]) WITH ORDINALITY AS spills(payload, position)
                ORDER BY spills.position
                RETURNING id
            )
            SELECT id FROM spilled ORDER BY id
            """,
            logger: table.logger
        )
        var ids: [Int64] = []
        for try await id in rows.decode(Int64.self) { ids.append(id) }
        guard ids.count == payloads.count else { throw SpillNotStored(expected: payloads.count, got: ids.count) }
        return ids
    }

    /// The payload of the row a spill notice names, if it is still there; `nil` payload and its
    /// size when it is over `maximumBytes`, which is not transferred.
    func readSpilled(
        row: Int64,
        maximumBytes: Int,
        on connection: PostgresConnection
    ) async throws -> (bytes: Int, payload: String?)? {
        let rows = try await connection.query(
            """
            SELECT octet_length(payload), CASE WHEN octet_length(payload) <= \(maximumBytes) THEN payload END
            FROM \(unescaped: table.name) WHERE id = \(row) AND channel = \(table.channel)
            """,
            logger: table.logger
        )
        for try await (bytes, payload) in rows.decode((Int, String?).self) { return (bytes, payload) }
        return nil
    }
}

/// The server stored fewer spilled rows than it was given; nothing of the batch is sent.
struct SpillNotStored: Error, CustomStringConvertible {
    let expected: Int
    let got: Int
    var description: String { "\(expected) spilled posts were inserted, \(got) row ids came back" }
}
