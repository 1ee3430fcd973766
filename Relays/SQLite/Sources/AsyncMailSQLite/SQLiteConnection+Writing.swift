import SQLiteNIO

extension SQLiteConnection {
    /// Runs `body` in a write transaction: takes the write lock with `BEGIN IMMEDIATE`, waiting
    /// (without a thread) while another connection holds it, up to `busyTimeout`; commits, or
    /// rolls back when `body` throws.
    ///
    /// Why not SQLite's busy handler: a statement blocked in it holds one of sqlite-nio's few pool
    /// threads, and the transaction that holds the lock may need that thread for its next
    /// statement, so every writer of the process would wait out the whole timeout. The relay's
    /// connections run with `busy_timeout = 0` once set up, and wait here instead.
    ///
    /// - Throws: `SQLiteError` `busy` once the timeout passed: another process held the lock
    ///   that long (one stopped while writing, say).
    func writing<Result>(within busyTimeout: Duration, _ body: () async throws -> Result) async throws -> Result {
        try await takingTheLock(within: busyTimeout) { _ = try await query("BEGIN IMMEDIATE") }
        do {
            let result = try await body()
            _ = try await query("COMMIT")
            return result
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
    }

    /// Runs `statement`, a write, and while another connection holds the write lock
    /// (`SQLITE_BUSY`) runs it again, with pauses doubling from 0.1 to 10 ms, up to `busyTimeout`:
    /// a statement that fails with `SQLITE_BUSY` has done nothing.
    ///
    /// - Throws: `SQLiteError` `busy` once the timeout passed.
    func takingTheLock(within busyTimeout: Duration, _ statement: () async throws -> Void) async throws {
        let deadline = ContinuousClock.now + busyTimeout
        var pause = Duration.microseconds(100)
        while true {
            do {
                return try await statement()
            } catch let error as SQLiteError where error.reason == .busy {
                guard ContinuousClock.now + pause < deadline else { throw error }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(10))
            }
        }
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
    /// commit then waits on no `fsync`), and checkpoints left to the background
    /// (``writerCheckpointPages``).
    func setWriterSettings() async throws {
        _ = try await query("PRAGMA synchronous = NORMAL")
        _ = try await query("PRAGMA wal_autocheckpoint = \(Self.writerCheckpointPages)")
    }

    /// Sets how long a statement waits for another connection's lock, in SQLite's busy handler
    /// (replacing sqlite-nio's, which retries at once and for ever).
    func setBusyTimeout(_ timeout: Duration) async throws {
        let milliseconds = timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000
        _ = try await query("PRAGMA busy_timeout = \(milliseconds)")
    }
}
