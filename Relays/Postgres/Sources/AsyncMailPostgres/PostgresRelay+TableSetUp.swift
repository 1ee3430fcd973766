@_spi(AsyncMailRelay) import AsyncMailRelay
import PostgresNIO

extension PostgresRelay {
    /// Creates the table (durable mode's rows, ephemeral mode's spilled posts) and its index when
    /// missing, and sets the cursor to the newest row, so that a new relay hears only what is
    /// posted from now on. Retries while the server cannot be reached; throws when the server
    /// refuses (a missing right).
    func prepareTable() async throws {
        var attempt = 0
        while true {
            let connection: PostgresConnection
            do {
                connection = try await connect()
            } catch {
                try Task.checkCancellation()
                report(.disconnected(reason: Self.reason(error))) { $0.disconnects += 1 }
                attempt += 1
                guard await backoff(attempt: attempt) else { throw CancellationError() }
                continue
            }
            do {
                // Bounded: a call in flight when the server drops the connection can hang.
                try await withDeadline(
                    callDeadline,
                    for: "the table set-up",
                    closing: connection,
                    marking: Unanswered()
                ) { [table, mode] in
                    let start = try await table.setUp(on: connection)
                    guard case .durable(let durable) = mode else { return }
                    // A new relay hears only what is posted from now on; its fleet-wide
                    // histories start with what the table kept.
                    let channelLast = start.counters.first { $0.stream.isEmpty }?.last ?? 0
                    durable.startReading(after: start.newest, channelLast: channelLast)
                    try await self.fillHistories(from: start, with: durable, on: connection)
                }
                await close(connection)
                return
            } catch {
                await close(connection)
                // Only a refusal by the server (a missing right, say) is final; a connection lost
                // mid-way is retried like one that could not be made.
                guard Self.isRefusedByServer(error) else {
                    try Task.checkCancellation()
                    report(.disconnected(reason: Self.reason(error))) { $0.disconnects += 1 }
                    attempt += 1
                    guard await backoff(attempt: attempt) else { throw CancellationError() }
                    continue
                }
                throw RelayError.tableSetupFailed(table: table.name, reason: Self.reason(error))
            }
        }
    }

    /// Whether the server refused `error`'s statement for good: an access rule (SQLSTATE class
    /// 42, such as a missing right) or a missing schema (3F). A connection that broke, timed out
    /// or was terminated (57P01, say) is worth retrying.
    static func isRefusedByServer(_ error: any Error) -> Bool {
        if let error = error as? PSQLError {
            guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
            return state.hasPrefix("42") || state.hasPrefix("3F")
        }
        if let error = error as? PostgresTransactionError {
            return [error.beginError, error.closureError, error.commitError].contains { inner in
                inner.map(isRefusedByServer) ?? false
            }
        }
        return false
    }
}
