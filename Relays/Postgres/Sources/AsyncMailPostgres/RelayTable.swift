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

    /// Creates the table and its index when missing, prefers lz4 for its payloads, and returns
    /// the channel's newest row id (0 for none), where a new reader starts.
    func setUp(on connection: PostgresConnection) async throws -> Int64 {
        try await connection.withTransaction(logger: logger) { connection in
            // Two relays creating the table at once would collide on its type's name.
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtext('asyncmail-relay-setup'))",
                logger: logger
            )
            // `CREATE … IF NOT EXISTS` needs the right to create even when the table
            // exists, so a role given a table made beforehand would be refused.
            var exists = false
            let found = try await connection.query("SELECT to_regclass(\(name)) IS NOT NULL", logger: logger)
            for try await value in found.decode(Bool.self) { exists = value }
            guard !exists else { return }
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: name) (
                    id bigserial PRIMARY KEY,
                    channel text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    payload text NOT NULL
                )
                """,
                logger: logger
            )
            try await connection.query(
                "CREATE INDEX IF NOT EXISTS \(unescaped: name)_channel_id ON \(unescaped: name) (channel, id)",
                logger: logger
            )
        }
        await preferLZ4(on: connection)
        let rows = try await connection.query(
            "SELECT coalesce(max(id), 0) FROM \(unescaped: name) WHERE channel = \(channel)",
            logger: logger
        )
        var newest: Int64 = 0
        for try await id in rows.decode(Int64.self) { newest = id }
        return newest
    }

    /// Deletes the channel's rows older than `retention`, row by row, so writers are not blocked.
    func deleteExpired(olderThan retention: Duration, on connection: PostgresConnection) async throws {
        let seconds = Double(retention.components.seconds) + Double(retention.components.attoseconds) * 1e-18
        try await connection.query(
            """
            DELETE FROM \(unescaped: name) WHERE channel = \(channel)
            AND created_at < now() - make_interval(secs => \(seconds))
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
