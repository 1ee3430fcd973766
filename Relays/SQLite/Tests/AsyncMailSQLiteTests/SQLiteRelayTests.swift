import AsyncMail
import AsyncMailTesting
import Foundation
import Synchronization
import Testing

@testable import AsyncMailSQLite

struct Line: Mail, Codable, Equatable {
    let text: String
}

/// Registered by no relay before it runs.
struct Note: Mail, Codable {
    let text: String
}

struct Room: Hashable, Sendable, Codable {
    let name: String
}

/// A relay on `path` with the tests' registrations and short intervals.
func makeRelay(_ mailroom: Mailroom, at path: String, hostWide: Bool = false) throws -> SQLiteRelay {
    let relay = try SQLiteRelay(
        mailroom: mailroom,
        path: path,
        configuration: .init(
            checkInterval: .milliseconds(100),
            busyTimeout: .seconds(2),
            retryBackoff: .milliseconds(10) ... .milliseconds(200)
        ),
        logger: logger
    )
    try relay.register(Line.self, as: "line", positions: hostWide ? .hostWide : .local)
    try relay.register(sender: Room.self, as: "room")
    return relay
}

/// Runs `relay` until the returned task is cancelled; returns once it reads.
func running(_ relay: SQLiteRelay) async throws -> Task<Void, any Error> {
    let events = relay.events()
    let task = Task { try await relay.run() }
    try await withTimeout {
        for await event in events where event.code == .listening { return }
    }
    return task
}

/// What the engine alone does, beside the contract every relay keeps (Relays/Contract): the file's
/// faults, and what only a file can be sent.
@Suite("SQLiteRelay: faults of the file")
struct SQLiteRelayTests {
    @Test("a path it cannot use, and host-wide positions asked once it runs, are refused with the reason")
    func refusedConfiguration() async throws {
        #expect(throws: RelayConfigurationError.invalidDatabasePath("", reason: "it is empty")) {
            try SQLiteRelay(mailroom: Mailroom(), path: "")
        }
        do {
            _ = try SQLiteRelay(mailroom: Mailroom(), path: "/tmp/" + String(repeating: "d", count: 120))
            Issue.record("a path too long for its wake-up socket was taken")
        } catch {
            #expect(error.code == .invalidDatabasePath)
        }
        try await withTemporaryFolder { folder in
            let relay = try makeRelay(Mailroom(), at: folder + "/relay.sqlite")
            let task = try await running(relay)
            defer { task.cancel() }
            do {
                try relay.register(Note.self, as: "note", positions: .hostWide)
                Issue.record("host-wide positions given once the relay runs")
            } catch let error as RelayConfigurationError {
                #expect(error.code == .positionsUnavailable && error.reason == "register it before run()")
            }
        }
    }

    @Test("a row is read and delivered on the thread its wake-up arrived on: no pool thread is woken for it")
    func readsOnTheWakeUpThread() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let (sending, receiving) = (Mailroom(), Mailroom())
            let sender = try makeRelay(sending, at: path)
            let receiver = try makeRelay(receiving, at: path)
            let tasks = [try await running(sender), try await running(receiver)]
            // A filter runs where the mailroom delivers: for the relay's rows, on its reading task.
            let threads = Mutex<[Bool]>([])
            let lines = await receiving.subscribe(to: Line.self) { _ in
                threads.withLock { $0.append(receiver.isOnWakeUpThreadForTesting) }
                return true
            }
            await sending.post(Line(text: "one"))
            #expect(try await lines.first(1) == [Line(text: "one")])
            #expect(threads.withLock { $0 } == [true])
            for task in tasks { task.cancel() }
            for task in tasks { _ = await task.result }
        }
    }

    @Test("the file deleted under a running relay: run() throws replaced, instead of writing a file no one reads")
    func deletedFileStopsTheRelay() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let relay = try makeRelay(Mailroom(), at: path)
            let task = try await running(relay)
            try FileManager.default.removeItem(atPath: path)
            let outcome = try await withTimeout { await task.result }
            guard case .failure(let error as RelayFileError) = outcome else {
                Issue.record("run() ended with \(outcome)")
                return
            }
            #expect(error.code == .replaced)
            // flush() names the cause, the error run() threw, not a relay that was never started.
            let flushed = await #expect(throws: RelayError.self) { try await relay.flush() }
            #expect(flushed?.code == .notRunning)
            #expect(flushed?.reason == String(describing: error))
            #expect(flushed.map(String.init(describing:))?.contains("relay stopped: \(error)") == true)
        }
    }

    @Test(
        "the disk full: the write fails and is reported, flush() waits, and the same batch is written once, when room is back"
    )
    func fullDiskRetries() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let (here, there) = (Mailroom(), Mailroom())
            let writer = try makeRelay(here, at: path)
            let events = writer.events()
            let writing = try await running(writer)
            defer { writing.cancel() }
            let reading = try await running(try makeRelay(there, at: path))
            defer { reading.cancel() }
            let heard = await there.subscribe(to: Line.self)
            let database = try #require(writer.databaseForTesting)
            try await database.capPages(8)
            let large = String(repeating: "x", count: 4_000)
            for number in 0..<50 { await here.post(Line(text: "\(number) \(large)")) }
            let flushed = Task { try await writer.flush() }
            try await withTimeout {
                for await event in events where event.code == .publishFailed { return }
            }
            try await database.capPages(nil)
            try await withTimeout { try await flushed.value }
            let lines = try await heard.first(50).map { $0.text.prefix { $0 != " " } }
            #expect(lines == (0..<50).map { Substring("\($0)") }, "each once, in order")
            #expect(writer.counters.published == 50)
            #expect(writer.counters.publishFailures >= 1)
        }
    }

    @Test("rows the retention deleted: a client resuming in a new process is told exactly how many it missed")
    func expiredRowsAreCounted() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let lobby = Room(name: "lobby")
            let first = Mailroom()
            await first.retainHistory(Line.self, count: 100)
            let relay = try makeRelay(first, at: path, hostWide: true)
            let task = try await running(relay)
            let resumption = try await first.subscribe(to: Line.self, from: .only(lobby), after: nil)
            for number in 0..<10 { await first.post(Line(text: "\(number)"), from: lobby) }
            let heard = try await resumption.mail.first(10)
            try await relay.flush()
            _ = try await relay.databaseForTesting?.deleteExpired(before: Int64.max)
            task.cancel()
            _ = await task.result

            let second = Mailroom()
            await second.retainHistory(Line.self, count: 100)
            let again = try await running(try makeRelay(second, at: path, hostWide: true))
            defer { again.cancel() }
            let resumed = try await second.subscribe(to: Line.self, from: .only(lobby), after: heard[2].position)
            #expect(resumed.gap?.missed == 7, "3 to 9, deleted before this process read them")
        }
    }

    @Test(
        "a datagram of another size on a relay's socket is rejected, counted and reported; the socket still wakes the relay"
    )
    func foreignDatagram() async throws {
        try await withTemporaryFolder { folder in
            let path = folder + "/relay.sqlite"
            let relay = try makeRelay(Mailroom(), at: path)
            let events = relay.events()
            let task = try await running(relay)
            defer { task.cancel() }
            // One from a bound socket, one from an unbound one (no source address).
            let sender = Process()
            sender.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            sender.arguments = [
                "python3", "-c",
                """
                import socket, sys
                bound = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                bound.bind(sys.argv[2])
                bound.sendto(b'not a nudge', sys.argv[1])
                socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', sys.argv[1])
                """,
                relay.socketPathForTesting, folder + "/stranger",
            ]
            try sender.run()
            sender.waitUntilExit()
            #expect(sender.terminationStatus == 0)
            try await withTimeout {
                for await event in events where event.code == .rejected {
                    if relay.counters.rejected >= 1 { return }
                }
            }
            // The unbound one is one byte, a wake-up as any one-byte datagram is: read (no source
            // address needed), and not rejected.
            #expect(relay.counters.rejected == 1)
            // The socket still wakes the relay: another relay's row arrives.
            let other = Mailroom()
            let otherTask = try await running(try makeRelay(other, at: path))
            defer { otherTask.cancel() }
            let heard = await relay.mailroom.subscribe(to: Line.self)
            let counts = try #require(relay.wakeUpCountsForTesting)
            // The unbound one-byte datagram is a wake-up: counted before the line is posted.
            try await withTimeout {
                for await count in counts where count >= 1 { return }
            }
            let before = relay.wakeUpsReceivedForTesting
            await other.post(Line(text: "still awake"))
            #expect(try await heard.first(1) == [Line(text: "still awake")])
            // The other relay's nudge, whether it or the safety net delivered the line first.
            try await withTimeout {
                for await count in counts where count > before { return }
            }
        }
    }
}
