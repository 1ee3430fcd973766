import AsyncMailTesting
import Foundation
import Testing

@testable import AsyncMailSQLite

@Suite("The row feed: rows read on a wake-up, or by the safety net when the wake-up is lost")
struct RowFeedTests {
    @Test("a writer's commit and nudge reach a reader on another connection: every row once, in order")
    func wokenReadsEveryRow() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let writer = try await RelayDatabase.open(path: path)
            let reader = try await RelayDatabase.open(path: path)
            let writerWakeUps = try await WakeUps.open(beside: path, name: "w")
            let readerWakeUps = try await WakeUps.open(beside: path, name: "r")
            _ = try await writer.append(["before"], at: 1)
            // A safety net no test outlives: only the wake-ups can bring the rows.
            let feed = RowFeed(
                database: reader,
                wakeUps: readerWakeUps,
                batch: 3,
                maximumBytes: 100,
                safetyNet: .seconds(3_600)
            )
            let batches = feed.rows(after: 0)
            let reading = Task {
                var read: [String] = []
                for try await batch in batches {
                    read += batch.compactMap(\.payload)
                    if read.count == 21 { break }
                }
                return read
            }
            for round in 0..<5 {
                _ = try await writer.append((0..<4).map { "\(round).\($0)" }, at: 2)
                writerWakeUps.nudge()
            }
            let read = try await withTimeout { try await reading.value }
            #expect(read == ["before"] + (0..<5).flatMap { round in (0..<4).map { "\(round).\($0)" } })
            await writer.close()
            await reader.close()
            await writerWakeUps.close()
            await readerWakeUps.close()
        }
    }

    @Test("no wake-up at all: the safety net's check reads the rows")
    func safetyNetFindsRows() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let writer = try await RelayDatabase.open(path: path)
            let reader = try await RelayDatabase.open(path: path)
            let readerWakeUps = try await WakeUps.open(beside: path, name: "r")
            let feed = RowFeed(
                database: reader,
                wakeUps: readerWakeUps,
                batch: 10,
                maximumBytes: 100,
                safetyNet: .milliseconds(20)
            )
            let batches = feed.rows(after: 0)
            _ = try await writer.append(["unannounced"], at: 1)  // and no nudge
            let rows = try await batches.first(1)
            #expect(rows.first?.compactMap(\.payload) == ["unannounced"])
            #expect(readerWakeUps.received == 0)
            await writer.close()
            await reader.close()
            await readerWakeUps.close()
        }
    }
}

@Suite("The row feed when the database is deleted or replaced under it")
struct ReplacedDatabaseTests {
    @Test("deleted, or replaced by another file: the feed ends with .replaced at its next safety-net check")
    func deletedOrReplaced() async throws {
        for replace in [false, true] {
            try await withTemporaryFolder { folder in
                let path = folder + "/relay.sqlite"
                let reader = try await RelayDatabase.open(path: path)
                let wakeUps = try await WakeUps.open(beside: path, name: "r")
                let feed = RowFeed(
                    database: reader,
                    wakeUps: wakeUps,
                    batch: 10,
                    maximumBytes: 100,
                    safetyNet: .milliseconds(20)
                )
                let batches = feed.rows(after: 0)
                let other: RelayDatabase?
                if replace {
                    // Moved over the path in one step: were the path deleted first, a check between
                    // the two steps would rightly see a deleted database.
                    other = try await RelayDatabase.open(path: folder + "/other.sqlite")
                    #expect(rename(folder + "/other.sqlite", path) == 0)
                } else {
                    other = nil
                    try FileManager.default.removeItem(atPath: path)
                }
                do {
                    _ = try await batches.collect()
                    Issue.record("the feed went on with a \(replace ? "replaced" : "deleted") database")
                } catch let error as RelayFileError {
                    #expect(error.code == .replaced)
                    #expect(error.description.contains(replace ? "replaced" : "deleted"))
                }
                await reader.close()
                await other?.close()
                await wakeUps.close()
            }
        }
    }

    @Test("a database dropped without close() closes its connections, rather than trapping")
    func droppedWithoutClose() async throws {
        try await withTemporaryFolder { folder in
            var database: RelayDatabase? = try await RelayDatabase.open(path: folder + "/relay.sqlite")
            _ = try await database?.append(["x"], at: 1)
            database = nil  // sqlite-nio asserts in a debug build if its connection was not closed
            let again = try await RelayDatabase.open(path: folder + "/relay.sqlite")
            #expect(try await again.newest() == 1)
            await again.close()
        }
    }
}
