@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import NIOCore
import NIOPosix
@_spi(AsyncMailRelay) import RelayWire
import Synchronization

/// The relay's SQLite file: created readable and writable by its owner only, in WAL mode, with
/// one table of rows that every process sharing the file appends to and reads in `id` order.
///
/// Why `id > cursor` reads every row once, in the one order: SQLite lets one writer commit at a
/// time, and a row's `id` (`AUTOINCREMENT`, never reused) is given inside the writer's
/// transaction, so rows become visible in `id` order, with no later id committed before an
/// earlier one (the gap PostgreSQL's concurrent writers leave, which its relay closes with an
/// advisory lock).
///
/// Three connections: the writer's, used only by the publishing loop; the reader's, used only
/// by the reading loop; and the checkpointer's, on a thread of its own, which moves
/// committed pages from the WAL into the database file (``keepCheckpointing(every:logger:checkpointed:)``)
/// off the writer's path. All three are ``SQLiteHandle``s, which keep their statements prepared
/// and run them on the calling thread (it says why that is brief), the checkpointer's on its own.
package final class RelayDatabase: Sendable {
    /// A row as read: its number, and its payload (untrusted).
    package struct Row: Sendable, Equatable {
        /// What a row holds, as read: the table is shared with every process that can open the
        /// file, so a row is untrusted, and one a relay would not write is told apart here.
        package enum Content: Sendable, Equatable {
            /// A payload to decode (still untrusted: RelayWire checks it).
            case text(String)
            /// A text payload over the limit, not read: its size.
            case oversize(bytes: Int)
            /// Not text (a blob, a number, null): no relay writes it. SQLite's type of it.
            case malformed(type: String)
        }

        package let id: Int64
        package let content: Content
        /// The table's number of its first mail, and how many it holds.
        package var channelFirst: Int64?
        package var mails: Int64?
        /// For a type with host-wide positions: its room's key, and its first mail's position.
        package var stream: String?
        package var streamEpoch: Int64?
        package var streamFirst: Int64?

        package init(id: Int64, content: Content) {
            self.id = id
            self.content = content
        }

        /// The payload, when the row holds one within the limit.
        package var payload: String? {
            if case .text(let text) = content { text } else { nil }
        }

        /// The row as every engine's reader takes it.
        package var stored: StoredRow {
            let bytes: Int
            switch content {
            case .text(let text): bytes = text.utf8.count
            case .oversize(let size): bytes = size
            case .malformed: bytes = 0
            }
            return StoredRow(
                id: id,
                bytes: bytes,
                payload: payload,
                channelFirst: channelFirst,
                mails: mails,
                stream: stream,
                streamEpoch: streamEpoch,
                streamFirst: streamFirst
            )
        }
    }

    /// A post to append: its signed payload, how many mails it holds, and its room's key when its
    /// type has host-wide positions.
    package struct NewRow: Sendable {
        package let payload: String
        package let mails: Int64
        package let stream: String?

        package init(payload: String, mails: Int64, stream: String?) {
            self.payload = payload
            self.mails = mails
            self.stream = stream
        }
    }

    /// The relay's table, unless a test names another; the presence tables' names start with it.
    package static let table = "asyncmail_relay"

    package let path: String
    package let table: String
    /// The writer's connection; the test-only hooks (`RelayDatabase+Testing.swift`) use it too.
    let writer: SQLiteHandle
    /// The reader's connection; the test-only hooks use it too.
    let reader: SQLiteHandle
    /// The checkpointer's connection, and its one thread: a checkpoint waits on the disk
    /// (`fsync`), and would otherwise hold one of the cooperative pool's few threads.
    private let checkpointer: SQLiteHandle
    private let checkpointThread: NIOThreadPool
    /// Told after each commit of the writer; the checkpointing loop waits on it.
    private let commits: AsyncStream<Void>
    private let committed: AsyncStream<Void>.Continuation
    /// The file opened, to notice it deleted or replaced.
    private let identity: FileIdentity?
    private let isClosed = Atomic(false)

    /// How long a write waits for another connection's write lock.
    private let busyTimeout: Duration
    /// The statements every mail takes, made once: a kept statement is found by its SQL.
    private let publishing: String
    private let reading: String

    private init(
        path: String,
        table: String,
        busyTimeout: Duration,
        writer: SQLiteHandle,
        reader: SQLiteHandle,
        checkpointer: SQLiteHandle,
        checkpointThread: NIOThreadPool
    ) {
        self.busyTimeout = busyTimeout
        self.path = path
        self.table = table
        self.writer = writer
        self.reader = reader
        self.checkpointer = checkpointer
        self.checkpointThread = checkpointThread
        (commits, committed) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.identity = OwnerOnlyFiles.identity(of: path)
        publishing = "INSERT INTO \(table) (at, payload, mails, stream) VALUES (?, ?, ?, ?)"
        reading = "SELECT \(Self.columns) FROM \(table) WHERE id > ? ORDER BY id LIMIT ?"
    }

    /// Throws when the path no longer names the file this opened: deleted, or replaced by
    /// another. Checked by the row feed's safety net.
    package func checkFile() throws(RelayFileError) {
        let now = OwnerOnlyFiles.identity(of: path)
        guard now == identity else {
            throw RelayFileError(
                .replaced,
                path: path,
                reason: now == nil
                    ? "the database was deleted while the relay had it open"
                    : "the database was replaced while the relay had it open"
            )
        }
    }

    /// Opens (creating when missing, mode 0600) the database at `path`, in WAL mode, with the
    /// relay's table.
    ///
    /// - Parameter busyTimeout: How long a statement waits for another process's write lock
    ///   before it fails with `SQLITE_BUSY` (a process stopped while it held one, say).
    package static func open(
        path: String,
        table: String = RelayDatabase.table,
        busyTimeout: Duration = .seconds(5)
    ) async throws -> RelayDatabase {
        try OwnerOnlyFiles.file(path)
        let writer = try SQLiteHandle.open(path: path)
        let reader = try SQLiteHandle.open(path: path)
        let checkpointer = try SQLiteHandle.open(path: path)
        let checkpointThread = NIOThreadPool(numberOfThreads: 1)
        checkpointThread.start()
        let database = RelayDatabase(
            path: path,
            table: table,
            busyTimeout: busyTimeout,
            writer: writer,
            reader: reader,
            checkpointer: checkpointer,
            checkpointThread: checkpointThread
        )
        do {
            // WAL: readers never block the writer, and a commit is one append. Switching to it
            // takes the file's lock, which another process setting up may hold a moment.
            try await SQLiteHandle.retryingWhileBusy(within: busyTimeout) { () throws(SQLiteHandle.Failure) in
                try writer.execute("PRAGMA journal_mode = WAL")
            }
            try writer.setWriterSettings()
            try await writer.writing(within: busyTimeout) { transaction throws(SQLiteHandle.Failure) in
                // `first` and `mails` number the table's mails, so a reader that finds a number
                // skipped knows exactly how many mails the retention deleted before it read them;
                // `stream`, `stream_epoch` and `stream_first` are a room's positions (host-wide).
                try transaction.execute(
                    """
                    CREATE TABLE IF NOT EXISTS \(table) (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        at INTEGER NOT NULL,
                        payload TEXT NOT NULL,
                        first INTEGER,
                        mails INTEGER,
                        stream TEXT,
                        stream_epoch INTEGER,
                        stream_first INTEGER
                    )
                    """
                )
                // One counter per room, and '' for the whole table, moved by the numbering trigger.
                try transaction.execute(
                    """
                    CREATE TABLE IF NOT EXISTS \(table)_counters (
                        stream TEXT PRIMARY KEY,
                        last INTEGER NOT NULL,
                        epoch INTEGER NOT NULL,
                        touched INTEGER NOT NULL
                    )
                    """
                )
                try transaction.execute("CREATE INDEX IF NOT EXISTS \(table)_at ON \(table) (at)")
                try transaction.execute(Self.numbering(table))
            }
        } catch {
            await database.close()
            throw error
        }
        return database
    }

    /// Appends `payloads` in one transaction, in order; returns their ids.
    package func append(_ payloads: [String], at milliseconds: Int64) async throws -> [Int64] {
        guard !payloads.isEmpty else { return [] }
        let insert = "INSERT INTO \(table) (at, payload) VALUES (?, ?) RETURNING id"
        let ids = try await writer.writing(within: busyTimeout) { transaction throws(SQLiteHandle.Failure) in
            var ids: [Int64] = []
            for payload in payloads {
                ids += try transaction.query(insert, [.integer(milliseconds), .text(payload)]) { $0.integer(0) }
            }
            return ids
        }
        committed.yield()
        return ids
    }

    /// The rows after `cursor`, in order, at most `limit`; a payload over `maximumBytes` is not
    /// read (its row says how large it is), and one that is not text is told apart.
    package func rows(after cursor: Int64, limit: Int, maximumBytes: Int) async throws -> [Row] {
        try reader.query(
            reading,
            [.integer(Int64(maximumBytes)), .integer(cursor), .integer(Int64(limit))],
            row: Self.row
        )
    }

    /// What a read selects; its one bound value is the largest payload read.
    private static let columns = """
        id, typeof(payload) AS kind, length(CAST(payload AS BLOB)) AS bytes,
        CASE WHEN typeof(payload) = 'text' AND length(CAST(payload AS BLOB)) <= ? THEN payload END AS payload,
        first, mails, stream, stream_epoch, stream_first
        """

    /// A row as read (``columns``' order): only what has the type a relay writes is taken; the
    /// rest is nil.
    private static func row(_ columns: SQLiteHandle.Columns) -> Row? {
        // `id` is the INTEGER PRIMARY KEY: SQLite stores nothing else there.
        guard let id = columns.integer(0) else { return nil }
        let kind = columns.text(1) ?? "null"
        var read: Row
        if kind != "text" {
            read = Row(id: id, content: .malformed(type: kind))
        } else if let text = columns.text(3) {
            read = Row(id: id, content: .text(text))
        } else {
            read = Row(id: id, content: .oversize(bytes: columns.integer(2).map(Int.init) ?? 0))
        }
        read.channelFirst = columns.integer(4)
        read.mails = columns.integer(5)
        if let stream = columns.text(6), stream.utf8.count <= RoomStream.maximumBytes {
            read.stream = stream
        }
        read.streamEpoch = columns.integer(7)
        read.streamFirst = columns.integer(8)
        return read
    }

    /// Appends `rows` in one transaction, in order; the table's trigger numbers their mails as
    /// each row goes in (the table's numbers and, for each room, its positions), so the numbers
    /// and the rows commit together.
    ///
    /// A transaction that fails (the write lock held past the busy timeout, the disk full) has
    /// written nothing, so the caller writes the same rows again; SQLite tells a failed
    /// transaction from a committed one, so a batch never lands twice.
    ///
    /// - Returns: How many rows were written.
    package func publish(_ rows: [NewRow], at milliseconds: Int64) async throws -> Int {
        guard !rows.isEmpty else { return 0 }
        try await writer.writing(within: busyTimeout) { [publishing] transaction throws(SQLiteHandle.Failure) in
            for row in rows {
                try transaction.run(
                    publishing,
                    [
                        .integer(milliseconds), .text(row.payload), .integer(row.mails),
                        row.stream.map { .text($0) } ?? .null,
                    ]
                )
            }
        }
        committed.yield()
        return rows.count
    }

    /// The trigger that numbers a row's mails as it goes in: the table's counter (`stream` empty)
    /// and, for a row with a room, the room's, moved in the same statement. A counter that is not
    /// one a relay writes (not integers, negative, about to overflow, epoch 0: the file is shared)
    /// starts again from 0 in a new random epoch, as a counter made anew does, so positions from
    /// before never resume into it. Rows another program writes with numbers of their own are
    /// left as they are (the reader counts only genuine rows' numbers).
    private static func numbering(_ table: String) -> String {
        func counter(_ key: String) -> String {
            """
                INSERT INTO \(table)_counters (stream, last, epoch, touched)
                SELECT \(key), 0, (random() & 4611686018427387903) + 1, NEW.at WHERE \(key) IS NOT NULL
                ON CONFLICT (stream) DO UPDATE SET last = 0, epoch = excluded.epoch
                WHERE NOT (typeof(last) = 'integer' AND typeof(epoch) = 'integer' AND last >= 0
                    AND last <= 9223372036854775807 - NEW.mails AND epoch != 0);
                UPDATE \(table)_counters SET last = last + NEW.mails, touched = NEW.at WHERE stream = \(key);
            """
        }
        return """
            CREATE TRIGGER IF NOT EXISTS \(table)_numbering AFTER INSERT ON \(table)
            WHEN NEW.first IS NULL AND typeof(NEW.mails) = 'integer' AND NEW.mails > 0
            BEGIN
            \(counter("''"))
                UPDATE \(table) SET first = (SELECT last FROM \(table)_counters WHERE stream = '') - NEW.mails + 1
                WHERE id = NEW.id;
            \(counter("NEW.stream"))
                UPDATE \(table) SET
                    stream_epoch = (SELECT epoch FROM \(table)_counters WHERE stream = NEW.stream),
                    stream_first = (SELECT last FROM \(table)_counters WHERE stream = NEW.stream) - NEW.mails + 1
                WHERE id = NEW.id AND NEW.stream IS NOT NULL;
            END
            """
    }

    /// The table's counters: the whole table's (`stream` empty) and each room's.
    package func counters() async throws -> [StoredCounter] {
        try reader.query("SELECT stream, last, epoch FROM \(table)_counters") { columns in
            guard let stream = columns.text(0), let last = columns.integer(1), let epoch = columns.integer(2) else {
                return nil
            }
            return StoredCounter(stream: stream, last: last, epoch: epoch)
        }
    }

    /// The newest rows of each room of `wireName` up to `newest`: the newest `count` of each
    /// room, or those written after `since` (milliseconds), oldest first; what a relay fills its
    /// rooms' histories with as it starts.
    package func newestRows(
        of wireName: String,
        through newest: Int64,
        count: Int?,
        since: Int64?,
        maximumBytes: Int
    ) async throws -> [Row] {
        let prefix = wireName + "/"
        return try reader.query(
            """
            SELECT * FROM (
                SELECT \(Self.columns), row_number() OVER (PARTITION BY stream ORDER BY id DESC) AS nth
                FROM \(table)
                WHERE substr(stream, 1, ?) = ? AND id <= ? AND (? IS NULL OR at >= ?)
            ) WHERE ? IS NULL OR nth <= ? ORDER BY id
            """,
            [
                .integer(Int64(maximumBytes)), .integer(Int64(prefix.utf8.count)), .text(prefix), .integer(newest),
                since.map { .integer($0) } ?? .null, since.map { .integer($0) } ?? .null,
                count.map { .integer(Int64($0)) } ?? .null, count.map { .integer(Int64($0)) } ?? .null,
            ],
            row: Self.row
        )
    }

    /// Deletes the rows written before `cutoff` (milliseconds); returns how many. One
    /// transaction, taking the write lock as ``publish(_:at:)`` does.
    package func deleteExpired(before cutoff: Int64) async throws -> Int {
        let deleted = try await writer.writing(within: busyTimeout) { transaction throws(SQLiteHandle.Failure) in
            try transaction.run("DELETE FROM \(table) WHERE at < ?", [.integer(cutoff)])
        }
        committed.yield()
        return deleted
    }

    /// The newest row's id, or 0 for an empty table.
    package func newest() async throws -> Int64 {
        try reader.query("SELECT coalesce(max(id), 0) FROM \(table)") { $0.integer(0) }.first ?? 0
    }

    /// After commits of this database's writer (``append(_:at:)``, ``publish(_:at:)``,
    /// ``deleteExpired(before:)``), at most once each `interval`: moves the WAL's
    /// committed pages into the database file (a passive checkpoint, which waits for no reader
    /// or writer, and so delays none), until cancelled or closed. A failed checkpoint is logged
    /// and the next one tries again; a writer's own checkpoint
    /// (`SQLiteHandle.writerCheckpointPages`) bounds the WAL meanwhile. One loop a database:
    /// it is the one consumer of the writer's commits.
    ///
    /// - Parameter checkpointed: Told after each checkpoint how many pages the WAL holds, and how
    ///   many of them are in the database file now.
    package func keepCheckpointing(
        every interval: Duration = .milliseconds(100),
        logger: Logger,
        checkpointed: (_ walPages: Int, _ copied: Int) -> Void = { _, _ in }
    ) async {
        for await _ in commits {
            do {
                let checkpointer = checkpointer
                let result = try await checkpointThread.runIfActive {
                    try checkpointer.query("PRAGMA wal_checkpoint(PASSIVE)") {
                        ($0.integer(1) ?? 0, $0.integer(2) ?? 0)
                    }
                }
                checkpointed(Int(result.first?.0 ?? 0), Int(result.first?.1 ?? 0))
            } catch {
                logger.debug("relay: a background checkpoint failed, and the next one tries again: \(error)")
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// Closes the connections, and the checkpointer's thread.
    package func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        committed.finish()
        writer.close()
        reader.close()
        // After the thread: a checkpoint it runs holds the connection until it is done.
        try? await checkpointThread.shutdownGracefully()
        checkpointer.close()
    }

    /// A database dropped without ``close()`` (its owner failed, say) still stops the
    /// checkpointer's thread; the connections close as they go.
    deinit {
        guard !isClosed.load(ordering: .acquiring) else { return }
        checkpointThread.shutdownGracefully { _ in }
    }
}
