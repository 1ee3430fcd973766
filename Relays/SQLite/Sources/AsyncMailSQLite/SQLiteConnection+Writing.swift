import SQLiteNIO

extension SQLiteConnection {
    /// Runs `body` in a write transaction: takes the write lock with `BEGIN IMMEDIATE`, waiting
    /// (without a thread) while another connection holds it, up to `busyTimeout`; commits, or
    /// rolls back when `body` throws.
    ///
    /// Why not SQLite's busy handler: a statement blocked in it holds one of sqlite-nio's few pool
    /// threads, and the transaction that holds the lock may need that thread for its next
    /// statement, so every writer of the process would wait out the whole timeout. The relay's
    /// connections run with `busy_timeout = 0` once set up, and wait in
    /// `SQLiteHandle.retryingWhileBusy(within:isBusy:_:)` instead.
    ///
    /// - Throws: `SQLiteError` `busy` once the timeout passed: another process held the lock
    ///   that long (one stopped while writing, say).
    func writing<Result>(within busyTimeout: Duration, _ body: () async throws -> Result) async throws -> Result {
        try await SQLiteHandle.retryingWhileBusy(within: busyTimeout, isBusy: Self.isBusy) {
            _ = try await query("BEGIN IMMEDIATE")
        }
        do {
            let result = try await body()
            _ = try await query("COMMIT")
            return result
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
    }

    /// Whether `error` is sqlite-nio's `SQLITE_BUSY`.
    static func isBusy(_ error: any Error) -> Bool {
        (error as? SQLiteError)?.reason == .busy
    }

    /// The settings of a relay's connection that writes (`SQLiteHandle.writerSettings` says why).
    func setWriterSettings() async throws {
        for pragma in SQLiteHandle.writerSettings { _ = try await query(pragma) }
    }

    /// Sets how long a statement waits for another connection's lock, in SQLite's busy handler
    /// (replacing sqlite-nio's, which retries at once and for ever).
    func setBusyTimeout(_ timeout: Duration) async throws {
        let milliseconds = timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000
        _ = try await query("PRAGMA busy_timeout = \(milliseconds)")
    }
}
