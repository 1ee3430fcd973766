import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
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
/// Two connections: the writer's, used only by the publishing loop, and the reader's, used
/// only by the reading loop, whose `PRAGMA data_version` moves whenever another connection (this
/// process's writer too) commits.
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

        /// The payload, when the row holds one within the limit.
        package var payload: String? {
            if case .text(let text) = content { text } else { nil }
        }
    }

    package let path: String
    package let table: String
    private let writer: SQLiteConnection
    /// The writer's connection, for the test-only hooks (`RelayDatabase+Testing.swift`).
    var writerForTesting: SQLiteConnection { writer }
    private let reader: SQLiteConnection
    /// The file opened, to notice it deleted or replaced.
    private let identity: FileIdentity?
    private let isClosed = Atomic(false)

    private init(path: String, table: String, writer: SQLiteConnection, reader: SQLiteConnection) {
        self.path = path
        self.table = table
        self.writer = writer
        self.reader = reader
        self.identity = OwnerOnlyFiles.identity(of: path)
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
        table: String = "asyncmail_relay",
        busyTimeout: Duration = .seconds(5),
        logger: Logger
    ) async throws -> RelayDatabase {
        try OwnerOnlyFiles.file(path)
        let writer = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        let reader: SQLiteConnection
        do {
            reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        } catch {
            try? await writer.close()
            throw error
        }
        let database = RelayDatabase(path: path, table: table, writer: writer, reader: reader)
        do {
            let milliseconds =
                busyTimeout.components.seconds * 1_000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
            for connection in [writer, reader] {
                // Replaces sqlite-nio's busy handler, which retries at once and for ever.
                _ = try await connection.query("PRAGMA busy_timeout = \(milliseconds)")
            }
            // WAL: readers never block the writer, and a commit is one append. NORMAL is durable
            // against a process that dies (what `flush()` promises), not against power loss.
            _ = try await writer.query("PRAGMA journal_mode = WAL")
            _ = try await writer.query("PRAGMA synchronous = NORMAL")
            _ = try await writer.query(
                """
                CREATE TABLE IF NOT EXISTS \(table) (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    at INTEGER NOT NULL,
                    payload TEXT NOT NULL
                )
                """
            )
        } catch {
            await database.close()
            throw error
        }
        return database
    }

    /// Appends `payloads` in one transaction, in order; returns their ids.
    package func append(_ payloads: [String], at milliseconds: Int64) async throws -> [Int64] {
        guard !payloads.isEmpty else { return [] }
        let values = Array(repeating: "(?, ?)", count: payloads.count).joined(separator: ", ")
        let binds = payloads.flatMap { [SQLiteData.integer(Int(milliseconds)), .text($0)] }
        // One statement is one transaction: SQLite wraps it, and takes the write lock for it.
        let rows = try await writer.query("INSERT INTO \(table) (at, payload) VALUES \(values) RETURNING id", binds)
        return rows.compactMap { $0.column("id")?.integer }.map(Int64.init)
    }

    /// The rows after `cursor`, in order, at most `limit`; a payload over `maximumBytes` is not
    /// read (its row says how large it is), and one that is not text is told apart.
    package func rows(after cursor: Int64, limit: Int, maximumBytes: Int) async throws -> [Row] {
        let rows = try await reader.query(
            """
            SELECT id, typeof(payload) AS kind, length(CAST(payload AS BLOB)) AS bytes,
                   CASE WHEN typeof(payload) = 'text' AND length(CAST(payload AS BLOB)) <= ? THEN payload END AS payload
            FROM \(table) WHERE id > ? ORDER BY id LIMIT ?
            """,
            [.integer(maximumBytes), .integer(Int(cursor)), .integer(limit)]
        )
        return rows.compactMap { row in
            // `id` is the INTEGER PRIMARY KEY: SQLite stores nothing else there.
            guard let id = row.column("id")?.integer else { return nil }
            let kind = row.column("kind")?.string ?? "null"
            guard kind == "text" else { return Row(id: Int64(id), content: .malformed(type: kind)) }
            guard case .text(let text)? = row.column("payload") else {
                return Row(id: Int64(id), content: .oversize(bytes: row.column("bytes")?.integer ?? 0))
            }
            return Row(id: Int64(id), content: .text(text))
        }
    }

    /// The newest row's id, or 0 for an empty table.
    package func newest() async throws -> Int64 {
        let rows = try await reader.query("SELECT coalesce(max(id), 0) AS newest FROM \(table)")
        return Int64(rows.first?.column("newest")?.integer ?? 0)
    }

    /// A number that changes whenever another connection commits: the safety net that finds rows
    /// whose wake-up was lost.
    package func dataVersion() async throws -> Int64 {
        let rows = try await reader.query("PRAGMA data_version")
        return Int64(rows.first?.column("data_version")?.integer ?? 0)
    }

    /// Closes both connections.
    package func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try? await writer.close()
        try? await reader.close()
    }

    /// A database dropped without ``close()`` (its owner failed, say) still closes its
    /// connections: sqlite-nio asserts that a connection is closed before it goes, and would
    /// otherwise leak the SQLite handle. The close runs on sqlite-nio's thread pool, which holds
    /// the connection until it is done.
    deinit {
        guard !isClosed.load(ordering: .acquiring) else { return }
        _ = writer.close() as EventLoopFuture<Void>
        _ = reader.close() as EventLoopFuture<Void>
    }
}
