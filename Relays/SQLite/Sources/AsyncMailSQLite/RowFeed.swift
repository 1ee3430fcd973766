/// The rows after a cursor, read as soon as a wake-up says a writer committed, and otherwise
/// when the safety net finds that the database changed (`PRAGMA data_version`): a lost wake-up
/// (a full socket queue, a writer that died between its commit and its nudge) delays rows by at
/// most one safety-net period, and never loses them.
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

    private enum Event: Sendable {
        case woken
        case check
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
        let (events, input) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(2))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in wakeUps.arrivals { input.yield(.woken) }
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: safetyNet)
                    input.yield(.check)
                }
            }
            defer { group.cancelAll() }
            var cursor = start
            var version = try await database.dataVersion()
            var needsRead = true  // what was committed before the feed began
            var next = events.makeAsyncIterator()
            while !Task.isCancelled {
                if needsRead {
                    // Until a short batch: then every row committed before this read is read.
                    while !Task.isCancelled {
                        let rows = try await database.rows(after: cursor, limit: batch, maximumBytes: maximumBytes)
                        if let last = rows.last {
                            try await deliver(rows)
                            cursor = last.id
                        }
                        if rows.count < batch { break }
                    }
                }
                guard let event = await next.next() else { return }
                switch event {
                case .woken:
                    // No `data_version` here, on the path every row takes: `version` may then be
                    // older than this read, and the next check reads once more, finding nothing.
                    needsRead = true
                case .check:
                    try database.checkFile()
                    let now = try await database.dataVersion()
                    needsRead = now != version
                    version = now
                    try await checked()
                }
            }
        }
    }
}
