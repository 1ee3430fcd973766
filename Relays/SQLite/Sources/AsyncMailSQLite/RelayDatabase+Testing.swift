extension RelayDatabase {
    // Test-only hooks, all in this one file.

    /// Caps the database at `pages` pages (`PRAGMA max_page_count`), so that a test sees what a
    /// full disk does: an append fails with `SQLITE_FULL`. Nil lifts the cap.
    package func capPages(_ pages: Int?) async throws {
        _ = try await writerForTesting.query("PRAGMA max_page_count = \(pages ?? 1_073_741_823)")
    }
}
