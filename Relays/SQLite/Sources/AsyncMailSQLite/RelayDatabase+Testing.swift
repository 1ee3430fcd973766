import Logging
import SQLiteNIO

extension RelayDatabase {
    // Test-only hooks, all in this one file.

    /// Caps the database at `pages` pages (`PRAGMA max_page_count`, on the writer's connection),
    /// so that a test sees what a full disk does: an append fails with `SQLITE_FULL`. Nil lifts
    /// the cap.
    package func capPages(_ pages: Int?) async throws {
        try writer.execute("PRAGMA max_page_count = \(pages ?? 1_073_741_823)")
    }

    /// A connection of sqlite-nio's to the same file, as another program of the owner's would
    /// open it, waiting up to 10 s for a lock in SQLite's busy handler: tests write what no relay
    /// writes through it (blobs, reals). The caller closes it.
    package func openConnectionForTesting(logger: Logger) async throws -> SQLiteConnection {
        let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        _ = try await connection.query("PRAGMA busy_timeout = 10000")
        return connection
    }

    /// How many times SQLite prepared each kept statement of the writer's and the reader's
    /// connections again, by its SQL.
    package func statementsPreparedAgain() -> [String: Int] {
        writer.preparedAgain().merging(reader.preparedAgain()) { $0 + $1 }
    }
}
