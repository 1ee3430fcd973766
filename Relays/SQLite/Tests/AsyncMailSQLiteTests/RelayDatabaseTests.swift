import AsyncMailTesting
import Foundation
import Logging
import SQLiteNIO
import Testing

@testable import AsyncMailSQLite

/// A fresh folder for one test's database, removed afterwards.
func withTemporaryFolder<Result>(_ body: (String) async throws -> Result) async throws -> Result {
    let folder = FileManager.default.temporaryDirectory.path + "/asyncmail-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    return try await body(folder)
}

func mode(of path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
}

let logger = Logger(label: "AsyncMailSQLiteTests")

extension SQLiteConnection {
    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`), committed when it returns: what
    /// another program writing the file does.
    func writing(_ body: () async throws -> Void) async throws {
        _ = try await query("BEGIN IMMEDIATE")
        do {
            try await body()
            _ = try await query("COMMIT")
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
    }
}

@Suite("The relay's SQLite file: owner-only, WAL, and rows read once in the one order")
struct RelayDatabaseTests {
    @Test("created 0600 in WAL mode; one that others may write to, or a link, is refused with the fix")
    func ownerOnly() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let database = try await RelayDatabase.open(path: path)
            _ = try await database.append(["a"], at: 1)
            #expect(try mode(of: path) == 0o600)
            #expect(try mode(of: path + "-wal") == 0o600, "SQLite gives the WAL the database's mode")
            await database.close()

            chmod(path, 0o666)
            await #expect(throws: RelayFileError.self) { try await RelayDatabase.open(path: path) }
            do {
                _ = try await RelayDatabase.open(path: path)
            } catch let error as RelayFileError {
                #expect(error.code == .unsafePermissions)
                #expect(error.description.contains("its mode is 666") && error.description.contains("chmod 600"))
            }
            chmod(path, 0o600)
            // A folder others may write to, without the sticky bit: refused, with the fix.
            chmod(folder, 0o777)
            do {
                _ = try await RelayDatabase.open(path: path)
                Issue.record("a database in a folder of mode 777 was opened")
            } catch let error as RelayFileError {
                #expect(error.code == .unsafePermissions)
                #expect(error.description.contains("has mode 777") && error.description.contains("chmod go-w"))
            }
            chmod(folder, 0o1777)  // as /tmp: only the owner may delete or replace its files
            await (try await RelayDatabase.open(path: path)).close()
            chmod(folder, 0o700)
            try FileManager.default.createSymbolicLink(atPath: folder + "/link.sqlite", withDestinationPath: path)
            await #expect(throws: RelayFileError.self) {
                try await RelayDatabase.open(path: folder + "/link.sqlite")
            }
        }
    }

    @Test("rows appended on one connection are read on another in id order")
    func appendAndRead() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let writer = try await RelayDatabase.open(path: path)
            let reader = try await RelayDatabase.open(path: path)
            let ids = try await writer.append(["one", "two", "three"], at: 1)
            #expect(ids == [1, 2, 3])
            let rows = try await reader.rows(after: 1, limit: 10, maximumBytes: 100)
            #expect(rows.map(\.payload) == ["two", "three"])
            #expect(try await reader.newest() == 3)
            let large = String(repeating: "x", count: 200)
            _ = try await writer.append([large], at: 2)
            let oversize = try await reader.rows(after: 3, limit: 10, maximumBytes: 100)
            #expect(oversize == [RelayDatabase.Row(id: 4, content: .oversize(bytes: 200))], "over the limit: not read")
            await writer.close()
            await reader.close()
        }
    }

    @Test("the statements every mail takes are prepared once: 200 publishes and reads prepare none of them again")
    func statementsKept() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let writer = try await RelayDatabase.open(path: path)
            let reader = try await RelayDatabase.open(path: path)
            var read: [String] = []
            for number in 0..<200 {
                let row = RelayDatabase.NewRow(
                    payload: "\(number)",
                    mails: 1,
                    stream: number.isMultiple(of: 2) ? "r" : nil
                )
                _ = try await writer.publish([row], at: Int64(number))
                // The cursor moves at every read, as the row feed's does; the limit stays.
                read += try await reader.rows(after: Int64(number), limit: 500, maximumBytes: 100).compactMap(\.payload)
            }
            #expect(read == (0..<200).map(String.init))
            // SQLite prepares a statement again when a value its plan read changes (`LIMIT ?`
            // read from a cleared binding did, every call): once, on the first bind, at most.
            let again = writer.statementsPreparedAgain().merging(reader.statementsPreparedAgain()) { $0 + $1 }
            #expect(again.count >= 4, "BEGIN, INSERT, COMMIT and the read are kept: \(again)")
            for (sql, count) in again { #expect(count <= 1, "\(sql) prepared again \(count) times") }
            await writer.close()
            await reader.close()
        }
    }

    @Test("writers racing from several connections: every row once, in id order, each writer's rows in its order")
    func racingWriters() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            var writers: [RelayDatabase] = []
            for _ in 0..<3 { writers.append(try await RelayDatabase.open(path: path)) }
            let reader = try await RelayDatabase.open(path: path)
            let perWriter = 50
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, writer) in writers.enumerated() {
                    group.addTask {
                        for batch in 0..<perWriter { _ = try await writer.append(["\(index):\(batch)"], at: 1) }
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await reader.rows(after: 0, limit: 1_000, maximumBytes: 100)
            #expect(rows.map(\.id) == Array(1...Int64(3 * perWriter)))
            for index in 0..<3 {
                let own = rows.compactMap(\.payload).filter { $0.hasPrefix("\(index):") }
                #expect(own == (0..<perWriter).map { "\(index):\($0)" })
            }
            for writer in writers { await writer.close() }
            await reader.close()
        }
    }

    @Test(
        "a row no relay writes is told apart (a blob); a number turns text by the column's affinity, for RelayWire to refuse"
    )
    func foreignRowsAreToldApart() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let database = try await RelayDatabase.open(path: path)
            _ = try await database.append(["fine"], at: 1)
            // Another program writing the shared table, with SQLite's dynamic types.
            let script = """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1])
                db.execute("INSERT INTO asyncmail_relay (at, payload) VALUES (0, x'00ff00')")
                db.execute("INSERT INTO asyncmail_relay (at, payload) VALUES (0, 42)")
                db.execute("INSERT INTO asyncmail_relay (at, payload) VALUES (0, '{\\"o\\": 1}')")
                db.commit()
                """
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            writer.arguments = ["python3", "-c", script, path]
            try writer.run()
            writer.waitUntilExit()
            #expect(writer.terminationStatus == 0)
            let rows = try await database.rows(after: 0, limit: 10, maximumBytes: 100)
            #expect(
                rows.map(\.content) == [
                    .text("fine"), .malformed(type: "blob"), .text("42"), .text(#"{"o": 1}"#),
                ]
            )
            await database.close()
        }
    }
}

extension RelayDatabaseTests {
    @Test(
        "the numbering trigger numbers each row on from the table's and its room's counters; a counter no relay writes starts again in a new epoch"
    )
    func numbering() async throws {
        try await withTemporaryFolder { folder in
            let database = try await RelayDatabase.open(path: folder + "/relay.sqlite")
            _ = try await database.publish(
                [
                    .init(payload: "a", mails: 2, stream: "room"), .init(payload: "b", mails: 3, stream: nil),
                    .init(payload: "c", mails: 1, stream: "room"),
                ],
                at: 1
            )
            let rows = try await database.rows(after: 0, limit: 10, maximumBytes: 100)
            #expect(rows.map(\.channelFirst) == [1, 3, 6])
            #expect(rows.map(\.mails) == [2, 3, 1])
            #expect(rows.map(\.streamFirst) == [1, nil, 3])
            let epoch = try #require(rows[0].streamEpoch)
            #expect(rows.map(\.streamEpoch) == [epoch, nil, epoch])

            // Another program of the owner's sets the room's counter about to overflow: the room
            // starts again from 1, in a new epoch, and the table's numbers go on.
            let other = try await database.openConnectionForTesting(logger: logger)
            _ = try await other.query(
                "UPDATE asyncmail_relay_counters SET last = 9223372036854775806 WHERE stream = 'room'"
            )
            try await other.close().get()
            _ = try await database.publish([.init(payload: "d", mails: 2, stream: "room")], at: 1)
            let after = try await database.rows(after: rows[2].id, limit: 10, maximumBytes: 100)
            #expect(after.map(\.channelFirst) == [7])
            #expect(after.map(\.streamFirst) == [1])
            #expect(after.first?.streamEpoch != epoch && after.first?.streamEpoch != nil)
            await database.close()
        }
    }

    @Test("checkpoints leave the writer's commits: past SQLite's 1,000 pages they copy nothing, the checkpointer does")
    func backgroundCheckpoints() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let database = try await RelayDatabase.open(path: path)
            let size = { (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
            let before = try size()
            // 1,200 rows of about a page each: with SQLite's default, the commit past 1,000 pages
            // would have copied them into the file itself, and waited on the disk to do it.
            let page = String(repeating: "x", count: 4_000)
            for _ in 0..<12 { _ = try await database.append(Array(repeating: page, count: 100), at: 1) }
            #expect(try size() == before, "a commit checkpointed")

            let (results, result) = AsyncStream.makeStream(of: (walPages: Int, copied: Int).self)
            let checkpoints = Task {
                await database.keepCheckpointing(every: .milliseconds(1), logger: logger) { result.yield(($0, $1)) }
            }
            _ = try await database.append(["one more"], at: 1)
            let done = try await withTimeout {
                for await checkpoint in results where checkpoint.walPages > 1_200 {
                    if checkpoint.copied == checkpoint.walPages { return true }
                }
                return false
            }
            #expect(done)
            #expect(try size() > before + 1_200 * 4_000, "the rows are in the file")
            checkpoints.cancel()
            await checkpoints.value
            await database.close()
        }
    }
}
