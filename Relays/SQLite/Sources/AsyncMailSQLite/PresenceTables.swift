@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
@_spi(AsyncMailRelay) import RelayWire
import Synchronization

/// Presence in the relay's file, on a connection of its own (an ``SQLiteHandle``): one row per tracked entry, one per
/// process with the time of its last heartbeat (milliseconds since 1970, the clock every process
/// on the host shares), and a log of topics that changed, which stands in for PostgreSQL's
/// `NOTIFY`: a writer appends each changed topic and nudges the other processes' wake-up
/// sockets, and each reads the log past its cursor to learn which topics to read again.
///
/// Rows are untrusted (anything that can write the file can write them): each column is read
/// only when it is text within its size, and `PresenceRecord` checks the rest. The log keeps its
/// newest 10,000 topics; a reader whose cursor fell behind that reads every topic instead.
final class PresenceTables: PresenceStore {
    /// How many changed topics the log keeps.
    static let keptChanges: Int64 = 10_000

    private let connection: SQLiteHandle
    private let table: String
    private let instance: String
    private let busyTimeout: Duration
    private let wakeUps: WakeUps
    /// How far this process has read the log of changed topics.
    private let cursor: Guarded<Int64>

    private var entries: String { table + "_presence" }
    private var instances: String { table + "_presence_instances" }
    private var changes: String { table + "_presence_changes" }

    private init(
        connection: SQLiteHandle,
        table: String,
        instance: String,
        busyTimeout: Duration,
        wakeUps: WakeUps,
        cursor: Int64
    ) {
        self.connection = connection
        self.table = table
        self.instance = instance
        self.busyTimeout = busyTimeout
        self.wakeUps = wakeUps
        self.cursor = Guarded(cursor)
    }

    /// Opens a connection to the file at `path` (which ``RelayDatabase`` has opened and checked),
    /// creates the presence tables when missing, and starts reading the log at its newest topic.
    static func open(
        path: String,
        table: String,
        instance: String,
        busyTimeout: Duration,
        wakeUps: WakeUps
    ) async throws -> PresenceTables {
        let connection = try SQLiteHandle.open(path: path)
        try connection.setWriterSettings()
        try await connection.writing(within: busyTimeout) { transaction throws(SQLiteHandle.Failure) in
            try transaction.execute(
                """
                CREATE TABLE IF NOT EXISTS \(table)_presence (
                    instance TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    key TEXT NOT NULL,
                    meta TEXT NOT NULL,
                    signature TEXT NOT NULL,
                    PRIMARY KEY (instance, topic, key)
                );
                CREATE INDEX IF NOT EXISTS \(table)_presence_topic ON \(table)_presence (topic);
                CREATE TABLE IF NOT EXISTS \(table)_presence_instances (instance TEXT PRIMARY KEY, beat INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS \(table)_presence_changes (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    topic TEXT NOT NULL
                )
                """
            )
        }
        let newest = try connection.query("SELECT coalesce(max(id), 0) FROM \(table)_presence_changes") {
            $0.integer(0)
        }
        return PresenceTables(
            connection: connection,
            table: table,
            instance: instance,
            busyTimeout: busyTimeout,
            wakeUps: wakeUps,
            cursor: newest.first ?? 0
        )
    }

    func write(_ writes: [PresenceWrite], removing removals: [PresenceReplica.Slot], whole: Bool) async throws -> Bool {
        let now = SQLiteRelay.milliseconds()
        let (wasMissing, changed) = try await connection.writing(within: busyTimeout) {
            transaction throws(SQLiteHandle.Failure) in
            let found = try transaction.query(
                "SELECT 1 FROM \(instances) WHERE instance = ?",
                [.text(instance)]
            ) { _ in true }
            try transaction.run(
                """
                INSERT INTO \(instances) (instance, beat) VALUES (?, ?)
                ON CONFLICT (instance) DO UPDATE SET beat = excluded.beat
                """,
                [.text(instance), .integer(now)]
            )
            var changed = Set<String>()
            if whole {
                changed.formUnion(try deleteOwn(in: transaction))
            } else {
                for removal in removals {
                    changed.formUnion(try deleteOwn(removal, in: transaction))
                }
            }
            for write in writes {
                try transaction.run(
                    """
                    INSERT INTO \(entries) (instance, topic, key, meta, signature) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (instance, topic, key) DO UPDATE SET meta = excluded.meta, signature = excluded.signature
                    """,
                    [.text(instance), .text(write.topic), .text(write.key), .text(write.meta), .text(write.signature)]
                )
                changed.insert(write.topic)
            }
            try announce(changed, in: transaction)
            return (found.isEmpty, changed)
        }
        if !changed.isEmpty { wakeUps.nudge(.presence) }
        return wasMissing
    }

    func sweep(olderThan age: Duration) async throws -> [(instance: String, entries: Int)] {
        let cutoff =
            SQLiteRelay.milliseconds() - Int64(age.components.seconds * 1_000)
            - age.components.attoseconds / 1_000_000_000_000_000
        let gone = try await connection.writing(within: busyTimeout) { transaction throws(SQLiteHandle.Failure) in
            // A beat that is not an integer is none a relay writes: that instance is dead too (text
            // sorts after every number, and would otherwise never be older than the cutoff).
            try transaction.run(
                "DELETE FROM \(instances) WHERE typeof(beat) != 'integer' OR beat < ?",
                [.integer(cutoff)]
            )
            // A value no relay writes (not text) is deleted all the same: it is nobody's.
            let gone = try transaction.query(
                """
                DELETE FROM \(entries) WHERE instance NOT IN (SELECT instance FROM \(instances))
                RETURNING instance, topic
                """
            ) { (instance: $0.text(0) ?? "?", topic: $0.text(1) ?? "") }
            try announce(Set(gone.map(\.topic)), in: transaction)
            try transaction.run(
                "DELETE FROM \(changes) WHERE id <= (SELECT max(id) FROM \(changes)) - ?",
                [.integer(Self.keptChanges)]
            )
            return gone
        }
        if !gone.isEmpty { wakeUps.nudge(.presence) }
        var counts: [String: Int] = [:]
        for row in gone { counts[String(row.instance.prefix(PresenceRecord.maximumInstanceBytes)), default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Deletes this instance's rows and its heartbeat, and announces each topic that changed: a
    /// clean stop.
    func leave() async throws {
        try await connection.writing(within: busyTimeout) { transaction throws(SQLiteHandle.Failure) in
            try transaction.run("DELETE FROM \(instances) WHERE instance = ?", [.text(instance)])
            try announce(try deleteOwn(in: transaction), in: transaction)
        }
        wakeUps.nudge(.presence)
    }

    func read(_ topic: String?, limit: Int) async throws -> [PresenceRecord.Columns] {
        func text(_ column: String, within bytes: Int) -> String {
            "CASE WHEN typeof(\(column)) = 'text' AND length(CAST(\(column) AS BLOB)) <= \(bytes) THEN \(column) END"
        }
        // A column that is not text, or over its size, reads as nil; `PresenceRecord` checks the rest.
        return try connection.query(
            """
            SELECT \(text("topic", within: PresenceRecord.maximumNameBytes)),
                \(text("key", within: PresenceRecord.maximumNameBytes)),
                \(text("instance", within: PresenceRecord.maximumInstanceBytes)),
                \(text("meta", within: PresenceRecord.maximumMetaBytes)),
                \(text("signature", within: PresenceRecord.maximumSignatureBytes))
            FROM \(entries) WHERE instance IS NOT ? AND (? IS NULL OR topic = ?)
            ORDER BY topic, instance, key LIMIT ?
            """,
            [
                .text(instance), topic.map { .text($0) } ?? .null, topic.map { .text($0) } ?? .null,
                .integer(Int64(limit)),
            ]
        ) { row in
            PresenceRecord.Columns(
                topic: row.text(0),
                key: row.text(1),
                instance: row.text(2),
                meta: row.text(3),
                signature: row.text(4)
            )
        }
    }

    func changedTopics() async throws -> [String]? {
        let after = cursor.withLock { $0 }
        let limit = PresenceReplica.topicsBeforeReadingAll
        let rows = try connection.query(
            """
            SELECT id, CASE WHEN typeof(topic) = 'text' AND length(CAST(topic AS BLOB)) <= ? THEN topic END
            FROM \(changes) WHERE id > ? ORDER BY id LIMIT ?
            """,
            [.integer(Int64(PresenceRecord.maximumNameBytes)), .integer(after), .integer(Int64(limit + 1))]
        ) { row in row.integer(0).map { (id: $0, topic: row.text(1)) } }
        guard let last = rows.last?.id else { return [] }
        cursor.withLock { $0 = last }
        // Topics deleted from the log before this process read them, or more than it takes one
        // by one: every topic is read instead.
        if rows[0].id != after + 1 || rows.count > limit { return nil }
        // A topic no relay writes (not text, too long) reads as "" and is rejected by the keeper.
        return rows.map { $0.topic ?? "" }
    }

    /// Closes the connection.
    func close() async {
        connection.close()
    }

    /// Deletes this instance's rows, or its one row at `slot`: the topics they were in.
    private func deleteOwn(
        _ slot: PresenceReplica.Slot? = nil,
        in transaction: SQLiteHandle.Transaction
    ) throws(SQLiteHandle.Failure) -> Set<String> {
        let topics =
            if let slot {
                try transaction.query(
                    "DELETE FROM \(entries) WHERE instance = ? AND topic = ? AND key = ? RETURNING topic",
                    [.text(instance), .text(slot.topic), .text(slot.key)]
                ) { $0.text(0) }
            } else {
                try transaction.query(
                    "DELETE FROM \(entries) WHERE instance = ? RETURNING topic",
                    [.text(instance)]
                ) { $0.text(0) }
            }
        return Set(topics)
    }

    /// Appends `topics` to the log of changed topics.
    private func announce(_ topics: Set<String>, in transaction: SQLiteHandle.Transaction) throws(SQLiteHandle.Failure)
    {
        for topic in topics {
            try transaction.run("INSERT INTO \(changes) (topic) VALUES (?)", [.text(topic)])
        }
    }
}
