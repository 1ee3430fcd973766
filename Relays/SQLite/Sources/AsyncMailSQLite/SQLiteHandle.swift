@_spi(AsyncMailInternal) import AsyncMail
import VaporCSQLite

/// One SQLite connection of the relay's own, on the same SQLite that sqlite-nio compiles (its C
/// module, `VaporCSQLite`: two copies of SQLite in one process would not see each other's POSIX
/// locks on the file), with each statement prepared once and kept.
///
/// Every connection of the relay is one: the writer's, the reader's, the checkpointer's and the
/// presence tables'. Why not sqlite-nio's `SQLiteConnection`, on the paths every mail takes (the
/// writer's append, the reader's read after its cursor) above all: it prepares every query anew,
/// and runs each on its thread pool, whose answer comes back through an event loop; that parsing
/// and those three thread switches a statement were most of what a relayed mail cost
/// (Benchmarks/README.md, #57). Here a
/// statement runs on the calling thread, which is brief because it rarely waits: the relay's
/// connections have no busy handler (a held lock fails at once with `SQLITE_BUSY`, and
/// ``writing(within:_:)`` waits for it without a thread), and a commit in WAL mode with
/// `synchronous = NORMAL` writes the WAL without `fsync`, but for the first commit after the WAL
/// restarts, which syncs its header (SQLite's guard against a reordered write; a few a second at
/// most). The checkpoints, which wait on the disk, run on a thread of their own
/// (`RelayDatabase.keepCheckpointing` calls this handle there), but for the writer's own past
/// ``writerCheckpointPages``, which finds little left to copy.
///
/// Each call takes the handle's lock for the statement's whole run: SQLite's connection is
/// serialized already (`SQLITE_OPEN_FULLMUTEX`), but a kept statement's bind, steps and reset
/// must not interleave with another caller's. One loop uses each handle (the publisher the
/// writer's, the row feed the reader's, the presence loop its own), so the lock is not
/// contended, and it runs no user code.
final class SQLiteHandle: Sendable {
    /// A value a statement binds.
    enum Value: Sendable, Equatable {
        case integer(Int64)
        case text(String)
        case null
    }

    /// What SQLite said when a call failed: its (extended) result code, and its message.
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let message: String

        /// Another connection holds the lock this statement needs; it did nothing.
        var isBusy: Bool { code & 0xFF == SQLITE_BUSY }

        var description: String { "SQLite error \(code): \(message)" }
    }

    /// The columns of the row a statement is on: valid only inside the `row` closure it is
    /// handed to, which runs under the lock.
    struct Columns {
        private let statement: OpaquePointer

        fileprivate init(_ statement: OpaquePointer) {
            self.statement = statement
        }

        /// Column `index` when it holds an integer; nil otherwise.
        func integer(_ index: Int32) -> Int64? {
            sqlite_nio_sqlite3_column_type(statement, index) == SQLITE_INTEGER
                ? sqlite_nio_sqlite3_column_int64(statement, index) : nil
        }

        /// Column `index` when it holds text; nil otherwise. Bytes that are not UTF-8 are replaced
        /// (U+FFFD): the text is read whole, up to its length, whatever it holds.
        func text(_ index: Int32) -> String? {
            guard sqlite_nio_sqlite3_column_type(statement, index) == SQLITE_TEXT,
                let bytes = sqlite_nio_sqlite3_column_text(statement, index)
            else { return nil }
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        }
    }

    /// The connection and its kept statements, touched only under the lock.
    fileprivate final class Connection {
        var database: OpaquePointer?
        /// Keyed by their SQL: the relay runs a fixed handful of statements.
        var statements: [String: OpaquePointer] = [:]

        init(_ database: OpaquePointer) {
            self.database = database
        }

        /// What a call on a closed connection throws.
        static let closed = Failure(code: SQLITE_MISUSE, message: "the connection is closed")

        func failure(_ code: Int32) -> Failure {
            let message = database.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) }
            return Failure(code: code, message: message ?? String(cString: sqlite_nio_sqlite3_errstr(code)))
        }

        /// The kept statement for `sql`, prepared on first use.
        func statement(_ sql: String) throws(Failure) -> OpaquePointer {
            if let statement = statements[sql] { return statement }
            guard let database else { throw Self.closed }
            var statement: OpaquePointer?
            let code = sqlite_nio_sqlite3_prepare_v3(
                database,
                sql,
                -1,
                UInt32(SQLITE_PREPARE_PERSISTENT),
                &statement,
                nil
            )
            guard code == SQLITE_OK, let statement else { throw failure(code) }
            statements[sql] = statement
            return statement
        }

        /// Runs `sql` with `binds`, handing each row to `row`; the statement is reset after, so
        /// that it holds no read snapshot open.
        func run<Row>(
            _ sql: String,
            _ binds: [Value],
            row: (Columns) -> Row?
        ) throws(Failure) -> (rows: [Row], changes: Int) {
            let statement = try statement(sql)
            defer {
                sqlite_nio_sqlite3_reset(statement)
                // Texts are let go (a payload may be megabytes), integers kept: SQLite prepares a
                // statement again when a value its plan read changes (a `LIMIT ?`), and clearing
                // them all made the row feed's read be prepared again at every call.
                for (offset, value) in binds.enumerated() {
                    if case .text = value { sqlite_nio_sqlite3_bind_null(statement, Int32(offset + 1)) }
                }
            }
            for (offset, value) in binds.enumerated() {
                let index = Int32(offset + 1)
                let code: Int32
                switch value {
                case .integer(let integer): code = sqlite_nio_sqlite3_bind_int64(statement, index, integer)
                case .null: code = sqlite_nio_sqlite3_bind_null(statement, index)
                case .text(let text):
                    code = sqlite_nio_sqlite3_bind_text64(
                        statement,
                        index,
                        text,
                        UInt64(text.utf8.count),
                        Self.transient,
                        UInt8(SQLITE_UTF8)
                    )
                }
                guard code == SQLITE_OK else { throw failure(code) }
            }
            var rows: [Row] = []
            while true {
                let code = sqlite_nio_sqlite3_step(statement)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else { throw failure(code) }
                if let read = row(Columns(statement)) { rows.append(read) }
            }
            return (rows, Int(sqlite_nio_sqlite3_changes64(database)))
        }

        /// Runs `sql` with `binds`, reading no row; returns how many rows it changed.
        func run(_ sql: String, _ binds: [Value]) throws(Failure) -> Int {
            try run(sql, binds) { _ in () as Void? }.changes
        }

        /// Runs `sql`, statements with no bound values (set-up), without keeping them.
        func execute(_ sql: String) throws(Failure) {
            guard let database else { throw Self.closed }
            let code = sqlite_nio_sqlite3_exec(database, sql, nil, nil, nil)
            guard code == SQLITE_OK else { throw failure(code) }
        }

        /// SQLite copies a bound text before the call returns.
        static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        func close() {
            for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
            statements = [:]
            if let database { sqlite_nio_sqlite3_close_v2(database) }
            database = nil
        }
    }

    /// A write transaction's statements: valid only inside the `body` it is handed to, which
    /// runs under the lock.
    struct Transaction {
        private let connection: Connection

        fileprivate init(_ connection: Connection) {
            self.connection = connection
        }

        /// Runs `sql`; returns how many rows it changed.
        @discardableResult
        func run(_ sql: String, _ binds: [Value] = []) throws(Failure) -> Int {
            try connection.run(sql, binds)
        }

        /// Runs `sql`, statements with no bound values (set-up), without keeping them.
        func execute(_ sql: String) throws(Failure) {
            try connection.execute(sql)
        }

        /// Runs `sql`, reading each row it returns with `row`.
        func query<Row>(_ sql: String, _ binds: [Value] = [], row: (Columns) -> Row?) throws(Failure) -> [Row] {
            try connection.run(sql, binds, row: row).rows
        }
    }

    private let connection: Guarded<Connection>

    private init(_ connection: sending Connection) {
        self.connection = Guarded(connection)
    }

    /// Taken around every open: SQLite's `unixOpen` resets its random generator when it finds a
    /// new process id in an unguarded global (`randomnessPid`), which its comment calls harmless
    /// and ThreadSanitizer reports when two connections open at once. Opens are rare (three or
    /// four a relay), and the first also runs SQLite's own set-up (`sqlite3_initialize`), which
    /// sqlite-nio also calls under a lock.
    private static let opening = Guarded(false)

    /// Opens (creating when missing) the database at `path`, with no busy handler: a statement
    /// that needs a lock another connection holds fails at once with `SQLITE_BUSY`.
    static func open(path: String) throws(Failure) -> SQLiteHandle {
        var database: OpaquePointer?
        let flags = SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_EXRESCODE
        let code = opening.withLock { initialized in
            if !initialized {
                _ = sqlite_nio_sqlite3_initialize()
                initialized = true
            }
            return sqlite_nio_sqlite3_open_v2(path, &database, flags, nil)
        }
        guard code == SQLITE_OK, let database else {
            let failure = Failure(
                code: code,
                message: database.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) }
                    ?? "cannot open \(path)"
            )
            if let database { sqlite_nio_sqlite3_close_v2(database) }
            throw failure
        }
        return SQLiteHandle(Connection(database))
    }

    /// Runs `sql` (a kept statement) with `binds`, reading each row it returns with `row`.
    func query<Row: Sendable>(
        _ sql: String,
        _ binds: [Value] = [],
        row: (Columns) -> Row?
    ) throws(Failure) -> [Row] {
        try connection.withLock { connection in
            Result { () throws(Failure) in try connection.run(sql, binds, row: row).rows }
        }.get()
    }

    /// Runs `sql`, statements with no bound values (set-up), without keeping them.
    func execute(_ sql: String) throws(Failure) {
        try connection.withLock { connection in
            Result { () throws(Failure) in try connection.execute(sql) }
        }.get()
    }

    /// How many WAL pages a relay's writing connection lets pile up before it checkpoints on its
    /// own commit, where SQLite's default is 1,000.
    ///
    /// Why: a checkpoint waits on the disk twice (`fsync`), and on a commit that wait is every
    /// reader's latency: a pause of several milliseconds each few hundred commits.
    /// `RelayDatabase`'s checkpointer moves the pages in the background instead; but a passive
    /// checkpoint cannot restart the WAL while commits keep coming, so a writer still does, past
    /// this many pages (40 MiB of 4 KiB pages, which the WAL file keeps), with little left to
    /// copy or sync.
    static let writerCheckpointPages = 10_000

    /// The settings of a relay's connection that writes: `synchronous = NORMAL` (durable against a
    /// process that dies, which is what `flush()` promises, not against power loss; in WAL mode a
    /// commit then waits on no `fsync` but after the WAL restarts), and checkpoints left to the
    /// background (``writerCheckpointPages``).
    func setWriterSettings() throws(Failure) {
        try execute("PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = \(Self.writerCheckpointPages)")
    }

    /// Runs `body` in one write transaction (`BEGIN IMMEDIATE`): commits when it returns, rolls
    /// back when it throws, so a failed transaction has written nothing.
    ///
    /// - Throws: ``Failure`` with ``Failure/isBusy`` when another connection holds the write
    ///   lock (nothing was done; ``writing(within:_:)`` waits and tries again), or what failed.
    func transaction<Result: Sendable>(_ body: (Transaction) throws(Failure) -> Result) throws(Failure) -> Result {
        try connection.withLock { connection in
            Swift.Result { () throws(Failure) in
                _ = try connection.run("BEGIN IMMEDIATE", [])
                do throws(Failure) {
                    let result = try body(Transaction(connection))
                    _ = try connection.run("COMMIT", [])
                    return result
                } catch {
                    // A failed COMMIT may leave the transaction open: it is rolled back too.
                    if let database = connection.database, sqlite_nio_sqlite3_get_autocommit(database) == 0 {
                        _ = try? connection.run("ROLLBACK", [])
                    }
                    throw error
                }
            }
        }.get()
    }

    /// Runs ``transaction(_:)``, and while another connection holds the write lock runs it again,
    /// with pauses doubling from 0.1 to 10 ms, up to `busyTimeout`, waiting without a thread.
    ///
    /// - Throws: ``Failure`` with ``Failure/isBusy`` once the timeout passed (another process
    ///   held the lock that long: one stopped while writing, say); `CancellationError` when
    ///   cancelled while it waited.
    func writing<Result: Sendable>(
        within busyTimeout: Duration,
        _ body: (Transaction) throws(Failure) -> Result
    ) async throws -> Result {
        try await Self.retryingWhileBusy(within: busyTimeout) { () throws(Failure) in try transaction(body) }
    }

    /// Runs `attempt` until it does not fail with `SQLITE_BUSY`, with pauses doubling from 0.1 to
    /// 10 ms, up to `busyTimeout`: an attempt that fails so has done nothing. Every connection of
    /// the relay waits for a lock here, without a thread, for none has a busy handler.
    static func retryingWhileBusy<Result>(
        within busyTimeout: Duration,
        _ attempt: () throws(Failure) -> Result
    ) async throws -> Result {
        let deadline = ContinuousClock.now + busyTimeout
        var pause = Duration.microseconds(100)
        while true {
            let failure: Failure
            do {
                return try attempt()
            } catch {
                failure = error
            }
            // Outside the catch: Swift 6.3.1 crashed compiling a rethrow from `catch where`
            // on a typed error in this async function ("Found outside of lifetime use").
            guard failure.isBusy, ContinuousClock.now + pause < deadline else { throw failure }
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(10))
        }
    }

    /// How many times SQLite prepared each kept statement again, by its SQL
    /// (`SQLITE_STMTSTATUS_REPREPARE`): a statement prepared again at every call costs what
    /// keeping it saves. For the tests (`RelayDatabase+Testing.swift`).
    func preparedAgain() -> [String: Int] {
        connection.withLock { connection in
            connection.statements.mapValues {
                Int(sqlite_nio_sqlite3_stmt_status($0, SQLITE_STMTSTATUS_REPREPARE, 0))
            }
        }
    }

    /// Finalizes the kept statements and closes the connection; a call after fails with
    /// `SQLITE_MISUSE`.
    func close() {
        connection.withLock { $0.close() }
    }

    deinit {
        close()
    }
}
