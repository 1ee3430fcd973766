@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO

/// The relay's table, which both modes share: durable mode's rows, ephemeral mode's spilled
/// posts. Owns the SQL that concerns the table itself: creating it, and deleting what is past
/// its retention. What each mode writes and reads is its own (``DurableMode``, ``EphemeralMode``).
struct RelayTable: Sendable {
    /// A lower-case SQL identifier, validated when the relay was made, so it is safe unescaped.
    let name: String
    /// The channel whose rows this relay writes and reads; a table may serve several channels.
    let channel: String
    let logger: Logger

    /// The table of counters every relay table shares: per table and channel, the channel's last
    /// mail number (stream ''), each room's of a fleet-wide type (its key: see ``RoomStream``), and
    /// each origin's last written number (`@` and the origin), with the epoch a room's positions carry.
    static let counters = "asyncmail_relay_counters"

    /// Where a new reader starts: the channel's newest row id (0 for none), and the channel's
    /// counters as they were with that row, read in one snapshot.
    struct Start: Sendable {
        let newest: Int64
        let counters: [DurableMode.Counter]
    }

    /// Runs `body` in a transaction that holds the set-up lock every relay's set-up takes:
    /// two relays creating a table at once would collide on its type's name.
    static func settingUp<Result: Sendable>(
        on connection: PostgresConnection,
        logger: Logger,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext('asyncmail-relay-setup'))",
                logger: logger
            )
            return try await body(connection)
        }
    }

    /// Creates the table, its indexes and the counters table when missing, adds the numbering
    /// columns to a table made by an earlier version, prefers lz4 for its payloads, and returns
    /// where a new reader starts.
    func setUp(on connection: PostgresConnection) async throws -> Start {
        try await Self.settingUp(on: connection, logger: logger) { connection in
            // `CREATE … IF NOT EXISTS` needs the right to create even when the table exists:
            // each step only where something is missing, so that a role given the tables made
            // beforehand needs no right to create or alter them.
            var (exists, numbered, counted) = (false, false, false)
            let found = try await connection.query(
                """
                SELECT to_regclass(\(name)) IS NOT NULL,
                    EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(\(name)) AND attname = 'stream_first'),
                    to_regclass(\(Self.counters)) IS NOT NULL
                """,
                logger: logger
            )
            for try await values in found.decode((Bool, Bool, Bool).self) { (exists, numbered, counted) = values }
            if !counted {
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: Self.counters) (
                        relay_table text NOT NULL,
                        channel text NOT NULL,
                        stream text NOT NULL,
                        last bigint NOT NULL,
                        epoch bigint NOT NULL,
                        touched timestamptz NOT NULL DEFAULT now(),
                        PRIMARY KEY (relay_table, channel, stream)
                    )
                    """,
                    logger: logger
                )
            }
            if exists, !numbered {
                try await connection.query(
                    """
                    ALTER TABLE \(unescaped: name) ADD COLUMN IF NOT EXISTS channel_first bigint,
                        ADD COLUMN IF NOT EXISTS mails bigint, ADD COLUMN IF NOT EXISTS stream text,
                        ADD COLUMN IF NOT EXISTS stream_epoch bigint, ADD COLUMN IF NOT EXISTS stream_first bigint
                    """,
                    logger: logger
                )
            }
            if !exists {
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: name) (
                        id bigserial PRIMARY KEY,
                        channel text NOT NULL,
                        created_at timestamptz NOT NULL DEFAULT now(),
                        payload text NOT NULL,
                        channel_first bigint,
                        mails bigint,
                        stream text,
                        stream_epoch bigint,
                        stream_first bigint
                    )
                    """,
                    logger: logger
                )
                try await connection.query(
                    "CREATE INDEX IF NOT EXISTS \(unescaped: name)_channel_id ON \(unescaped: name) (channel, id)",
                    logger: logger
                )
            }
            if !numbered {
                // What a new instance reads to fill a fleet-wide history: a stream's newest rows.
                try await connection.query(
                    """
                    CREATE INDEX IF NOT EXISTS \(unescaped: name)_stream_id ON \(unescaped: name) (channel, stream, id)
                    WHERE stream IS NOT NULL
                    """,
                    logger: logger
                )
            }
        }
        await preferLZ4(on: connection)
        // One statement, one snapshot: the counters count exactly the rows up to `newest`.
        let rows = try await connection.query(
            """
            WITH newest AS (SELECT coalesce(max(id), 0) AS id FROM \(unescaped: name) WHERE channel = \(channel))
            SELECT newest.id, c.stream, c.last, c.epoch FROM newest
            LEFT JOIN \(unescaped: Self.counters) c
                ON c.relay_table = \(name) AND c.channel = \(channel) AND c.stream NOT LIKE '@%'
            """,
            logger: logger
        )
        var newest: Int64 = 0
        var counters: [DurableMode.Counter] = []
        for try await (id, stream, last, epoch) in rows.decode((Int64, String?, Int64?, Int64?).self) {
            newest = id
            if let stream, let last, let epoch {
                counters.append(DurableMode.Counter(stream: stream, last: last, epoch: epoch))
            }
        }
        return Start(newest: newest, counters: counters)
    }

    /// Deletes the channel's rows older than `retention`, row by row, so writers are not blocked.
    func deleteExpired(olderThan retention: Duration, on connection: PostgresConnection) async throws {
        let seconds = retention.inSeconds
        try await connection.query(
            """
            DELETE FROM \(unescaped: name) WHERE channel = \(channel)
            AND created_at < now() - make_interval(secs => \(seconds))
            """,
            logger: logger
        )
        // An origin's counter only guards against its own batch written twice: one unheard of
        // for the retention is forgotten, so that restarts do not grow the table. So is a room's
        // whose rows have all gone with the retention, so that rooms that come and go do not
        // grow it either: that room's numbers start again in a new epoch, which a client coming
        // back with an old position is told (a reset whose count is unknown).
        try await connection.query(
            """
            DELETE FROM \(unescaped: Self.counters) WHERE relay_table = \(name) AND channel = \(channel)
            AND (stream LIKE '@%' OR strpos(stream, '/') > 0) AND touched < now() - make_interval(secs => \(seconds))
            """,
            logger: logger
        )
    }

    /// Compresses payloads with lz4 rather than PostgreSQL's default, pglz: a post of more than
    /// about 2 KB is compressed on insert, and pglz costs the server several times more. Only a
    /// server built with lz4 (PostgreSQL 14 or later) has it, and only the table's owner may
    /// change it: otherwise the payloads keep their compression, which is logged.
    private func preferLZ4(on connection: PostgresConnection) async {
        do {
            let rows = try await connection.query(
                """
                SELECT attcompression::text FROM pg_attribute
                WHERE attrelid = to_regclass(\(name)) AND attname = 'payload'
                """,
                logger: logger
            )
            var method = ""
            for try await value in rows.decode(String.self) { method = value }
            guard method != "l" else { return }
            try await connection.query(
                "ALTER TABLE \(unescaped: name) ALTER COLUMN payload SET COMPRESSION lz4",
                logger: logger
            )
        } catch {
            logger.notice("relay table payloads keep their compression: \(PostgresRelay.reason(error))")
        }
    }
}
