@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

/// The presence tables, which every relay channel shares: one row per tracked entry, one per
/// instance with the time of its last heartbeat. Owns their SQL. Every time is the database's
/// `now()`, so instances' clocks need not agree.
struct PresenceTable: Sendable {
    /// One row per entry: channel, topic, key, the instance that tracks it, its metadata as
    /// JSON, and its signature (empty without a key).
    static let entries = "asyncmail_presence"
    /// One row per instance tracking anything, with its last heartbeat.
    static let instances = "asyncmail_presence_instances"

    let channel: String
    /// The `NOTIFY` channel whose payloads name a topic that changed: the relay channel's name
    /// with `_presence`, cut so that it stays within PostgreSQL's 63 bytes. Two relay channels
    /// sharing the cut name only read each other's topics' names, never their rows.
    let notifications: String
    let instance: String
    let logger: Logger

    init(channel: String, instance: String, logger: Logger) {
        self.channel = channel
        self.notifications = String(channel.prefix(54)) + "_presence"
        self.instance = instance
        self.logger = logger
    }

    /// Creates the tables when missing, under the relay table's set-up lock.
    func setUp(on connection: PostgresConnection) async throws {
        try await RelayTable.settingUp(on: connection, logger: logger) { connection in
            var exists = false
            let found = try await connection.query(
                "SELECT to_regclass(\(Self.entries)) IS NOT NULL AND to_regclass(\(Self.instances)) IS NOT NULL",
                logger: logger
            )
            for try await value in found.decode(Bool.self) { exists = value }
            guard !exists else { return }
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: Self.entries) (
                    channel text NOT NULL,
                    instance text NOT NULL,
                    topic text NOT NULL,
                    key text NOT NULL,
                    meta text NOT NULL,
                    signature text NOT NULL,
                    PRIMARY KEY (channel, instance, topic, key)
                )
                """,
                logger: logger
            )
            try await connection.query(
                "CREATE INDEX IF NOT EXISTS asyncmail_presence_topic ON \(unescaped: Self.entries) (channel, topic)",
                logger: logger
            )
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: Self.instances) (
                    channel text NOT NULL,
                    instance text NOT NULL,
                    beat timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (channel, instance)
                )
                """,
                logger: logger
            )
        }
    }

    /// Beats, then writes this instance's rows and notifies each topic that changed, in one
    /// statement. With `whole`, `writes` are all of this instance's rows and every other row of
    /// it is deleted; otherwise `removals` are deleted. True when the instance's row was missing:
    /// another instance found it dead and removed its rows, which must all be written again.
    func write(
        _ writes: [PresenceWrite],
        removing removals: [PresenceReplica.Slot],
        whole: Bool,
        on connection: PostgresConnection
    ) async throws -> Bool {
        let (topics, keys) = (writes.map(\.topic), writes.map(\.key))
        let (metas, signatures) = (writes.map(\.meta), writes.map(\.signature))
        let (goneTopics, goneKeys) = (removals.map(\.topic), removals.map(\.key))
        let query: PostgresQuery = """
            WITH beat AS (
                INSERT INTO \(unescaped: Self.instances) (channel, instance) VALUES (\(channel), \(instance))
                ON CONFLICT (channel, instance) DO UPDATE SET beat = now()
                RETURNING (xmax = 0) AS fresh
            ),
            gone AS (
                DELETE FROM \(unescaped: Self.entries) p WHERE p.channel = \(channel) AND p.instance = \(instance)
                AND CASE WHEN \(whole)
                    THEN (p.topic, p.key) NOT IN (SELECT * FROM unnest(\(topics)::text[], \(keys)::text[]))
                    ELSE (p.topic, p.key) IN (SELECT * FROM unnest(\(goneTopics)::text[], \(goneKeys)::text[]))
                END
                RETURNING p.topic
            ),
            added AS (
                INSERT INTO \(unescaped: Self.entries) (channel, instance, topic, key, meta, signature)
                SELECT \(channel), \(instance), u.topic, u.key, u.meta, u.signature
                FROM unnest(\(topics)::text[], \(keys)::text[], \(metas)::text[], \(signatures)::text[])
                    AS u(topic, key, meta, signature)
                ON CONFLICT (channel, instance, topic, key)
                DO UPDATE SET meta = EXCLUDED.meta, signature = EXCLUDED.signature
                RETURNING topic
            ),
            told AS (
                SELECT count(pg_notify(\(notifications), topic)) AS topics
                FROM (SELECT topic FROM gone UNION SELECT topic FROM added) AS changed
            )
            SELECT beat.fresh, told.topics FROM beat, told
            """
        var fresh = false
        let rows = try await connection.query(query, logger: logger)
        for try await (isFresh, _) in rows.decode((Bool, Int64).self) { fresh = isFresh }
        return fresh
    }

    /// Deletes the rows of instances whose last heartbeat is older than `age`, and rows of no
    /// instance at all, and notifies each topic that changed: how many rows each such instance
    /// had.
    func sweep(
        olderThan age: Duration,
        on connection: PostgresConnection
    ) async throws -> [(instance: String, entries: Int)] {
        let rows = try await connection.query(
            """
            WITH dead AS (
                DELETE FROM \(unescaped: Self.instances)
                WHERE channel = \(channel) AND beat < now() - make_interval(secs => \(age.inSeconds))
                RETURNING instance
            ),
            gone AS (
                DELETE FROM \(unescaped: Self.entries) p WHERE p.channel = \(channel)
                AND (p.instance IN (SELECT instance FROM dead) OR NOT EXISTS (
                    SELECT 1 FROM \(unescaped: Self.instances) i WHERE i.channel = p.channel AND i.instance = p.instance
                ))
                RETURNING p.topic, p.instance
            ),
            told AS (SELECT count(pg_notify(\(notifications), topic)) AS topics FROM (SELECT DISTINCT topic FROM gone) AS t)
            SELECT gone.instance, count(*), max(told.topics) FROM gone, told GROUP BY gone.instance
            """,
            logger: logger
        )
        var found: [(String, Int)] = []
        for try await (instance, entries, _) in rows.decode((String, Int64, Int64).self) {
            found.append((instance, Int(entries)))
        }
        return found
    }

    /// Deletes this instance's rows and its heartbeat, and notifies each topic that changed.
    func leave(on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            """
            WITH beat AS (DELETE FROM \(unescaped: Self.instances) WHERE channel = \(channel) AND instance = \(instance)),
            gone AS (
                DELETE FROM \(unescaped: Self.entries) WHERE channel = \(channel) AND instance = \(instance)
                RETURNING topic
            )
            SELECT count(pg_notify(\(notifications), topic)) FROM (SELECT DISTINCT topic FROM gone) AS t
            """,
            logger: logger
        )
        for try await _ in rows {}
    }

    /// Other instances' rows of `topic` (of every topic, when nil), at most `limit` of them:
    /// columns over their size come back nil, and are not transferred.
    func read(_ topic: String?, limit: Int, on connection: PostgresConnection) async throws -> [PresenceRecord.Columns]
    {
        let query: PostgresQuery = """
            SELECT CASE WHEN octet_length(topic) <= \(PresenceRecord.maximumNameBytes)
                AND octet_length(key) <= \(PresenceRecord.maximumNameBytes)
                AND octet_length(instance) <= \(PresenceRecord.maximumInstanceBytes)
                AND octet_length(meta) <= \(PresenceRecord.maximumMetaBytes)
                AND octet_length(signature) <= \(PresenceRecord.maximumSignatureBytes)
            THEN ARRAY[topic, key, instance, meta, signature] END
            FROM \(unescaped: Self.entries)
            WHERE channel = \(channel) AND instance <> \(instance) AND (topic = \(topic ?? "") OR \(topic == nil))
            ORDER BY topic, instance, key LIMIT \(limit)
            """
        var found: [PresenceRecord.Columns] = []
        let rows = try await connection.query(query, logger: logger)
        for try await columns in rows.decode([String]?.self) {
            guard let columns, columns.count == 5 else {
                found.append(PresenceRecord.Columns(topic: nil, key: nil, instance: nil, meta: nil, signature: nil))
                continue
            }
            found.append(
                PresenceRecord.Columns(
                    topic: columns[0],
                    key: columns[1],
                    instance: columns[2],
                    meta: columns[3],
                    signature: columns[4]
                )
            )
        }
        return found
    }
}
