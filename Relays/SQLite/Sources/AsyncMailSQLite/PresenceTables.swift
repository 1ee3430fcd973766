@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import NIOCore
@_spi(AsyncMailRelay) import RelayWire
import SQLiteNIO
import Synchronization

/// Presence in the relay's file, on a connection of its own: one row per tracked entry, one per
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

    private let connection: SQLiteConnection
    private let table: String
    private let instance: String
    private let busyTimeout: Duration
    private let wakeUps: WakeUps
    /// How far this process has read the log of changed topics.
    private let cursor: Guarded<Int64>
    private let isClosed = Atomic(false)

    private var entries: String { table + "_presence" }
    private var instances: String { table + "_presence_instances" }
    private var changes: String { table + "_presence_changes" }

    private init(
        connection: SQLiteConnection,
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
        wakeUps: WakeUps,
        logger: Logger
    ) async throws -> PresenceTables {
        let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        do {
            try await connection.setBusyTimeout(busyTimeout)
            try await connection.setWriterSettings()
            _ = try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(table)_presence (
                    instance TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    key TEXT NOT NULL,
                    meta TEXT NOT NULL,
                    signature TEXT NOT NULL,
                    PRIMARY KEY (instance, topic, key)
                )
                """
            )
            _ = try await connection.query(
                "CREATE INDEX IF NOT EXISTS \(table)_presence_topic ON \(table)_presence (topic)"
            )
            _ = try await connection.query(
                "CREATE TABLE IF NOT EXISTS \(table)_presence_instances (instance TEXT PRIMARY KEY, beat INTEGER NOT NULL)"
            )
            _ = try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(table)_presence_changes (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    topic TEXT NOT NULL
                )
                """
            )
            try await connection.setBusyTimeout(.zero)
            let newest = try await connection.query(
                "SELECT coalesce(max(id), 0) AS newest FROM \(table)_presence_changes"
            )
            return PresenceTables(
                connection: connection,
                table: table,
                instance: instance,
                busyTimeout: busyTimeout,
                wakeUps: wakeUps,
                cursor: Int64(newest.first?.column("newest")?.integer ?? 0)
            )
        } catch {
            try? await connection.close().get()
            throw error
        }
    }

    func write(_ writes: [PresenceWrite], removing removals: [PresenceReplica.Slot], whole: Bool) async throws -> Bool {
        let now = SQLiteRelay.milliseconds()
        let (wasMissing, changed) = try await connection.writing(within: busyTimeout) {
            let found = try await connection.query(
                "SELECT 1 AS found FROM \(instances) WHERE instance = ?",
                [.text(instance)]
            )
            _ = try await connection.query(
                """
                INSERT INTO \(instances) (instance, beat) VALUES (?, ?)
                ON CONFLICT (instance) DO UPDATE SET beat = excluded.beat
                """,
                [.text(instance), .integer(Int(now))]
            )
            var changed = Set<String>()
            if whole {
                changed.formUnion(try await deleteOwn(where: "1"))
            } else {
                for chunk in Self.chunks(removals) {
                    let pairs = Array(repeating: "(?, ?)", count: chunk.count).joined(separator: ", ")
                    changed.formUnion(
                        try await deleteOwn(
                            where: "(topic, key) IN (VALUES \(pairs))",
                            chunk.flatMap { [.text($0.topic), .text($0.key)] }
                        )
                    )
                }
            }
            for chunk in Self.chunks(writes) {
                _ = try await connection.query(
                    """
                    INSERT INTO \(entries) (instance, topic, key, meta, signature)
                    VALUES \(Array(repeating: "(?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", "))
                    ON CONFLICT (instance, topic, key) DO UPDATE SET meta = excluded.meta, signature = excluded.signature
                    """,
                    chunk.flatMap {
                        [.text(instance), .text($0.topic), .text($0.key), .text($0.meta), .text($0.signature)]
                    }
                )
                changed.formUnion(chunk.map(\.topic))
            }
            try await announce(changed)
            return (found.isEmpty, changed)
        }
        if !changed.isEmpty { wakeUps.nudge(.presence) }
        return wasMissing
    }

    func sweep(olderThan age: Duration) async throws -> [(instance: String, entries: Int)] {
        let cutoff =
            SQLiteRelay.milliseconds() - Int64(age.components.seconds * 1_000)
            - age.components.attoseconds / 1_000_000_000_000_000
        let gone = try await connection.writing(within: busyTimeout) {
            // A beat that is not an integer is none a relay writes: that instance is dead too (text
            // sorts after every number, and would otherwise never be older than the cutoff).
            _ = try await connection.query(
                "DELETE FROM \(instances) WHERE typeof(beat) != 'integer' OR beat < ?",
                [.integer(Int(cutoff))]
            )
            let rows = try await connection.query(
                """
                DELETE FROM \(entries) WHERE instance NOT IN (SELECT instance FROM \(instances))
                RETURNING instance, topic
                """
            )
            var gone: [(instance: String, topic: String)] = []
            for row in rows {
                // A value no relay writes (not text) is deleted all the same: it is nobody's.
                gone.append((row.column("instance")?.storedText ?? "?", row.column("topic")?.storedText ?? ""))
            }
            try await announce(Set(gone.map(\.topic)))
            _ = try await connection.query(
                "DELETE FROM \(changes) WHERE id <= (SELECT max(id) FROM \(changes)) - ?",
                [.integer(Int(Self.keptChanges))]
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
        try await connection.writing(within: busyTimeout) {
            _ = try await connection.query("DELETE FROM \(instances) WHERE instance = ?", [.text(instance)])
            try await announce(try await deleteOwn(where: "1"))
        }
        wakeUps.nudge(.presence)
    }

    func read(_ topic: String?, limit: Int) async throws -> [PresenceRecord.Columns] {
        func text(_ column: String, within bytes: Int) -> String {
            "CASE WHEN typeof(\(column)) = 'text' AND length(CAST(\(column) AS BLOB)) <= \(bytes) THEN \(column) END AS \(column)"
        }
        let rows = try await connection.query(
            """
            SELECT \(text("topic", within: PresenceRecord.maximumNameBytes)),
                \(text("key", within: PresenceRecord.maximumNameBytes)),
                \(text("instance", within: PresenceRecord.maximumInstanceBytes)),
                \(text("meta", within: PresenceRecord.maximumMetaBytes)),
                \(text("signature", within: PresenceRecord.maximumSignatureBytes))
            FROM \(entries) WHERE instance IS NOT ? AND (? IS NULL OR topic = ?)
            ORDER BY topic, instance, key LIMIT ?
            """,
            [.text(instance), topic.map { .text($0) } ?? .null, topic.map { .text($0) } ?? .null, .integer(limit)]
        )
        return rows.map { row in
            PresenceRecord.Columns(
                topic: Self.text(row, "topic"),
                key: Self.text(row, "key"),
                instance: Self.text(row, "instance"),
                meta: Self.text(row, "meta"),
                signature: Self.text(row, "signature")
            )
        }
    }

    func changedTopics() async throws -> [String]? {
        let after = cursor.withLock { $0 }
        let limit = PresenceReplica.topicsBeforeReadingAll
        let rows = try await connection.query(
            """
            SELECT id, CASE WHEN typeof(topic) = 'text' AND length(CAST(topic AS BLOB)) <= ? THEN topic END AS topic
            FROM \(changes) WHERE id > ? ORDER BY id LIMIT ?
            """,
            [.integer(PresenceRecord.maximumNameBytes), .integer(Int(after)), .integer(limit + 1)]
        )
        let ids = rows.compactMap { $0.column("id")?.integer }.map(Int64.init)
        guard let last = ids.last else { return [] }
        cursor.withLock { $0 = last }
        // Topics deleted from the log before this process read them, or more than it takes one
        // by one: every topic is read instead.
        if ids[0] != after + 1 || ids.count > limit { return nil }
        // A topic no relay writes (not text, too long) reads as "" and is rejected by the keeper.
        return rows.map { Self.text($0, "topic") ?? "" }
    }

    /// Closes the connection.
    func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try? await connection.close().get()
    }

    /// Deletes this instance's rows that match `condition`: the topics they were in.
    private func deleteOwn(where condition: String, _ binds: [SQLiteData] = []) async throws -> Set<String> {
        let rows = try await connection.query(
            "DELETE FROM \(entries) WHERE instance = ? AND \(condition) RETURNING topic",
            [.text(instance)] + binds
        )
        return Set(rows.compactMap { $0.column("topic")?.storedText })
    }

    /// Appends `topics` to the log of changed topics.
    private func announce(_ topics: Set<String>) async throws {
        for chunk in Self.chunks(Array(topics)) {
            _ = try await connection.query(
                "INSERT INTO \(changes) (topic) VALUES \(Array(repeating: "(?)", count: chunk.count).joined(separator: ", "))",
                chunk.map { .text($0) }
            )
        }
    }

    /// A column's value when it is text; nil otherwise (the query nulls what is over its size).
    private static func text(_ row: SQLiteRow, _ column: String) -> String? {
        row.column(column)?.storedText
    }

    /// `elements` in consecutive slices of at most 400: one statement's bound values stay within
    /// SQLite's limit.
    private static func chunks<Element>(_ elements: [Element]) -> [ArraySlice<Element>] {
        stride(from: 0, to: elements.count, by: 400).map { elements[$0..<min($0 + 400, elements.count)] }
    }

    deinit {
        guard !isClosed.load(ordering: .acquiring) else { return }
        _ = connection.close() as EventLoopFuture<Void>
    }
}
