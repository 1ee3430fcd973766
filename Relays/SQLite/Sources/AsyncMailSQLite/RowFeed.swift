import Synchronization

/// The rows after a cursor, read as soon as a wake-up says a writer committed, and otherwise at
/// the safety net's next check, which reads after the cursor too: a lost wake-up (a full socket
/// queue, a writer that died between its commit and its nudge) delays rows by at most one
/// safety-net period, and never loses them.
///
/// Rows come in `id` order, each once, in batches of at most `batch`; a read that fails (the
/// database busy past its timeout, the disk gone) ends the feed with the error, and the caller
/// opens a new one after its last row. So does the safety net finding the database deleted or
/// replaced under it (``RelayFileError/Code/replaced``): the feed would otherwise go on reading
/// a file no other process writes.
package struct RowFeed: Sendable {
    package let database: RelayDatabase
    package let wakeUps: WakeUps
    package let batch: Int
    package let maximumBytes: Int
    package let safetyNet: Duration

    package init(database: RelayDatabase, wakeUps: WakeUps, batch: Int, maximumBytes: Int, safetyNet: Duration) {
        self.database = database
        self.wakeUps = wakeUps
        self.batch = batch
        self.maximumBytes = maximumBytes
        self.safetyNet = safetyNet
    }

    /// Reads after `cursor` until cancelled; the stream ends when its consumer stops. For tests:
    /// it reads ahead of its consumer, where ``read(after:checked:deliver:)`` waits for it.
    package func rows(after cursor: Int64) -> AsyncThrowingStream<[RelayDatabase.Row], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [RelayDatabase.Row].self)
        let task = Task {
            do {
                try await read(after: cursor) { rows in continuation.yield(rows) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Set by the safety net before it wakes the loop: the wake-up is its check.
    private final class CheckDue: Sendable {
        private let due = Atomic(false)

        func set() { due.store(true, ordering: .releasing) }
        func take() -> Bool { due.exchange(false, ordering: .acquiringAndReleasing) }
    }

    /// Reads after `start` until cancelled, handing each batch to `deliver` and reading on only
    /// once it returns, so a slow consumer holds no more than one batch; calls `checked` after
    /// each safety-net check.
    ///
    /// - Throws: What a read threw (the database busy past its timeout, the disk gone), or
    ///   ``RelayFileError/Code/replaced`` once the file was deleted or replaced; the caller
    ///   reads again after its last row.
    package func read(
        after start: Int64,
        checked: () async throws -> Void = {},
        deliver: ([RelayDatabase.Row]) async throws -> Void
    ) async throws {
        do {
            try await loop(after: start, checked: checked, deliver: deliver)
        } catch {
            // A database deleted under it fails SQLite's own calls first ("disk I/O error"):
            // say what happened instead, when that is it.
            try database.checkFile()
            throw error
        }
    }

    private func loop(
        after start: Int64,
        checked: () async throws -> Void,
        deliver: ([RelayDatabase.Row]) async throws -> Void
    ) async throws {
        // The loop waits on the wake-up socket's arrivals alone, and the safety net wakes it
        // through them too: a row's wake-up reaches the loop with no task in between.
        try await withThrowingTaskGroup(of: Void.self) { group in
            let due = CheckDue()
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: safetyNet)
                    due.set()
                    wakeUps.wakeHere()
                }
            }
            defer { group.cancelAll() }
            var cursor = start
            var arrivals = wakeUps.arrivals.makeAsyncIterator()
            while !Task.isCancelled {
                // Until a short batch: then every row committed before this read is read. With
                // its statement kept, a read that finds nothing costs what asking whether
                // anything changed (`PRAGMA data_version`) would, so the check reads as well.
                while !Task.isCancelled {
                    let rows = try await database.rows(after: cursor, limit: batch, maximumBytes: maximumBytes)
                    if let last = rows.last {
                        try await deliver(rows)
                        cursor = last.id
                    }
                    if rows.count < batch { break }
                }
                guard await arrivals.next() != nil else { return }
                if due.take() {
                    try database.checkFile()
                    try await checked()
                }
            }
        }
    }
}
