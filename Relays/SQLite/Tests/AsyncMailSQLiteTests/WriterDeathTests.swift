import AsyncMailTesting
import Foundation
import Testing

@testable import AsyncMailSQLite

/// Another process that opens the database, takes the write lock with a row written but not
/// committed, says "holding", and waits to be killed: Python's own SQLite, a different build of
/// the same file format and locks.
private func startHolder(of path: String) throws -> (Process, FileHandle) {
    let script = """
        import sqlite3, sys, time
        db = sqlite3.connect(sys.argv[1], isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO asyncmail_relay (at, payload) VALUES (0, 'never committed')")
        print("holding", flush=True)
        time.sleep(3600)
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script, path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    return (process, output.fileHandleForReading)
}

@Suite("A process that dies, or stalls, holding the database's write lock")
struct WriterDeathTests {
    @Test("killed holding the write lock: its row never appears, and the next writer goes on at once")
    func killedHoldingTheLock() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let database = try await RelayDatabase.open(path: path, busyTimeout: .seconds(60))
            _ = try await database.append(["before"], at: 1)
            let (holder, output) = try startHolder(of: path)
            let said = try await withTimeout { output.availableData }
            #expect(String(decoding: said, as: UTF8.self).hasPrefix("holding"))
            kill(holder.processIdentifier, SIGKILL)  // the kernel releases its locks
            holder.waitUntilExit()
            let ids = try await withTimeout { try await database.append(["after"], at: 2) }
            #expect(ids == [2], "the dead writer's id was never committed")
            let rows = try await database.rows(after: 0, limit: 10, maximumBytes: 100)
            #expect(rows.compactMap(\.payload) == ["before", "after"])
            await database.close()
        }
    }

    @Test("stalled holding the write lock: an append fails with SQLITE_BUSY after the busy timeout, then succeeds")
    func stalledHolderTimesOut() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let database = try await RelayDatabase.open(path: path, busyTimeout: .milliseconds(200))
            let (holder, output) = try startHolder(of: path)
            _ = try await withTimeout { output.availableData }
            do {
                _ = try await database.append(["blocked"], at: 1)
                Issue.record("the append went through a held write lock")
            } catch {
                #expect("\(error)".contains("database is locked"), "SQLITE_BUSY, not a hang: \(error)")
            }
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
            #expect(try await database.append(["then"], at: 2) == [1])
            await database.close()
        }
    }
}

@Suite("The database full")
struct FullDatabaseTests {
    @Test("an append that does not fit fails whole with SQLITE_FULL; what was committed stays, and room lets it go on")
    func fullDiskFailsTheAppendWhole() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let database = try await RelayDatabase.open(path: path)
            _ = try await database.append(["kept"], at: 1)
            try await database.capPages(8)
            let large = Array(repeating: String(repeating: "x", count: 4_000), count: 50)
            do {
                _ = try await database.append(large, at: 2)
                Issue.record("200 KB went into an 8-page database")
            } catch {
                #expect("\(error)".contains("full"), "SQLITE_FULL: \(error)")
            }
            #expect(
                try await database.rows(after: 0, limit: 100, maximumBytes: 10_000).compactMap(\.payload) == ["kept"]
            )
            try await database.capPages(nil)
            #expect(try await database.append(["then"], at: 3).count == 1)
            await database.close()
        }
    }
}
