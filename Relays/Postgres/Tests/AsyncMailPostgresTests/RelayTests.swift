import AsyncMail
import AsyncMailPostgres
import Foundation
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

/// Against a real PostgreSQL (PGHOST, PGPORT, PGUSER, PGDATABASE). One at a time, and every test
/// that touches the database belongs here (as an extension, `RelayTests+…`): some restart or stop
/// the server, hold the table's set-up lock or count every session's lock waits, which would
/// break or mislead a test running beside them.
@Suite("PostgresRelay against a real PostgreSQL", .serialized, .stopsRelays)
struct RelayTests {
    // MARK: Delivery

    @Test("mail crosses relays with its value sender, in order; a pinned subscription hears only its room")
    func crossesWithSender() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        try await start(makeRelay(here, on: channel))
        try await start(makeRelay(there, on: channel))
        let lobby = await there.subscribe(to: ChatLine.self, from: .only(RoomID(name: "lobby")))
        let kitchen = await there.subscribe(to: ChatLine.self, from: .only(RoomID(name: "kitchen")))

        for number in 0..<50 { await here.post(ChatLine(text: "lobby \(number)"), from: RoomID(name: "lobby")) }
        await here.post(ChatLine(text: "kitchen"), from: RoomID(name: "kitchen"))

        #expect(try await first(50, of: lobby).map(\.text) == (0..<50).map { "lobby \($0)" })
        #expect(try await first(1, of: kitchen).map(\.text) == ["kitchen"])
    }

    @Test("a batch arrives as one batch")
    func batchArrivesAsOne() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        try await start(makeRelay(here, on: channel))
        try await start(makeRelay(there, on: channel))
        let tap = await there.tap()
        await here.post(contentsOf: (1...5).map { ChatLine(text: "\($0)") }, from: RoomID(name: "lobby"))
        let seen = try await first(5, of: tap)
        #expect(seen.map(\.isLastInPost) == [false, false, false, false, true])
        #expect(seen.compactMap { $0.mail(as: ChatLine.self)?.text } == ["1", "2", "3", "4", "5"])
    }

    @Test("posts that wait together, of one type from one sender, travel as one row and arrive in order")
    func waitingPostsCoalesce() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sendingRelay = try makeRelay(here, on: channel)
        try await start(sendingRelay)
        try await start(makeRelay(there, on: channel))
        let tap = await there.tap()
        // Holding the channel's advisory lock keeps the publisher's first transaction waiting,
        // so every later post queues behind it.
        let blocker = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 95,
            logger: Database.logger
        )
        try await blocker.query("SELECT pg_advisory_lock(hashtext(\(channel.name)))", logger: Database.logger)
        let (lobby, kitchen) = (RoomID(name: "lobby"), RoomID(name: "kitchen"))
        await here.post(ChatLine(text: "first"), from: lobby)
        try await waitUntil("the publisher waits for the lock") { try await Database.advisoryLockWaiters() == 1 }
        for (text, room) in [
            ("a1", lobby), ("a2", lobby), ("a3", lobby), ("b1", kitchen), ("a4", lobby), ("a5", lobby),
        ] {
            await here.post(ChatLine(text: text), from: room)
        }
        try await waitUntil("all seven are queued") { sendingRelay.counters.queued == 7 }
        try await blocker.query("SELECT pg_advisory_unlock(hashtext(\(channel.name)))", logger: Database.logger)
        try await blocker.close()

        let seen = try await first(7, of: tap)
        #expect(seen.compactMap { $0.mail(as: ChatLine.self)?.text } == ["first", "a1", "a2", "a3", "b1", "a4", "a5"])
        #expect(seen.compactMap { $0.sender as? RoomID } == [lobby, lobby, lobby, lobby, kitchen, lobby, lobby])
        // One batch per run of posts from one sender: first | a1 a2 a3 | b1 | a4 a5.
        #expect(seen.map(\.isLastInPost) == [true, false, false, true, true, false, true])
        #expect(try await Database.payloads(on: channel).count == 4)
    }

    @Test("object senders and unregistered types stay local")
    func localOnly() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sendingRelay = try makeRelay(here, on: channel)
        let sending = try await start(sendingRelay)
        let receiving = try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        let notes = await there.subscribe(to: LocalNote.self)
        let speaker = Speaker()

        await here.post(ChatLine(text: "from an object"), from: speaker)
        await here.post(LocalNote(text: "unregistered"))
        await here.post(ChatLine(text: "from nobody"))  // a registered type without a sender travels
        // Order is kept, so had the first two travelled, they would have arrived before this.
        #expect(try await first(1, of: lines).map(\.text) == ["from nobody"])
        #expect(await there.subscriberCount(LocalNote.self) == 1)
        withExtendedLifetime(notes) {}
        try await stop(sending)
        try await stop(receiving)
        // Read once stopped: the publisher counts after the database answers, which can be after
        // the receiver has the mail.
        #expect(sendingRelay.counters.published == 1)
    }

    @Test("two processes: a second process hears this one's mail, in order")
    func secondProcess() async throws {
        let channel = try freshChannel()
        let (process, output) = try RelayPeer.launch(["listen", "20"], on: channel)
        defer { if process.isRunning { process.terminate() } }
        #expect(try await first(1, of: output) == ["listening"])

        let here = Mailroom()
        try await start(makeRelay(here, on: channel))
        for number in 1...20 { await here.post(ChatLine(text: "line \(number)"), from: RoomID(name: "lobby")) }
        let heard = try await first(20, of: output)
        #expect(heard == (1...20).map { "line \($0)" })
        // The peer exits by itself once it has heard all 20.
        try await waitUntil("the peer exits") { !process.isRunning }
        #expect(process.terminationStatus == 0)
    }

    @Test("no echo and no loop among three relays; no process hears its own mail twice")
    func noEcho() async throws {
        let channel = try freshChannel()
        let rooms = [Mailroom(), Mailroom(), Mailroom()]
        let relays = try rooms.map { try makeRelay($0, on: channel) }
        var running: [Task<Void, any Error>] = []
        for relay in relays { running.append(try await start(relay)) }
        let streams = await withTaskGroup(of: (Int, AsyncStream<ChatLine>).self) { group in
            for (index, room) in rooms.enumerated() {
                group.addTask { (index, await room.subscribe(to: ChatLine.self)) }
            }
            var streams: [Int: AsyncStream<ChatLine>] = [:]
            for await (index, stream) in group { streams[index] = stream }
            return streams
        }

        await rooms[0].post(ChatLine(text: "hello"))
        #expect(try await first(1, of: streams[1]!).map(\.text) == ["hello"])
        #expect(try await first(1, of: streams[2]!).map(\.text) == ["hello"])
        // Had relay 1 or 2 echoed "hello", its publisher would have sent that before this probe.
        await rooms[1].post(ChatLine(text: "probe 1"))
        await rooms[2].post(ChatLine(text: "probe 2"))
        let atOrigin = try await first(3, of: streams[0]!).map(\.text)
        #expect(atOrigin.first == "hello")
        #expect(Set(atOrigin.dropFirst()) == ["probe 1", "probe 2"])
        // Relays 1 and 2 hear their own probe locally and the other's through the database.
        #expect(Set(try await first(2, of: streams[1]!).map(\.text)) == ["probe 1", "probe 2"])
        #expect(Set(try await first(2, of: streams[2]!).map(\.text)) == ["probe 1", "probe 2"])
        for task in running { try await stop(task) }
        #expect(relays.map(\.counters.published) == [1, 1, 1])
        #expect(relays.map(\.counters.received) == [2, 2, 2])
    }

    @Test("three concurrent writers: every row is read, each writer's mail in order")
    func concurrentWriters() async throws {
        let channel = try freshChannel()
        let reader = Mailroom()
        try await start(makeRelay(reader, on: channel))
        let received = await reader.subscribe(to: ChatLine.self)
        let writers = [Mailroom(), Mailroom(), Mailroom()]
        var running: [Task<Void, any Error>] = []
        for writer in writers { running.append(try await start(makeRelay(writer, on: channel))) }
        let perWriter = 2_000
        await withTaskGroup(of: Void.self) { group in
            for (index, writer) in writers.enumerated() {
                group.addTask {
                    for number in 0..<perWriter {
                        await writer.post(ChatLine(text: "\(index) \(number)"))
                        if number % 50 == 0 { await Task.yield() }
                    }
                }
            }
        }
        let lines = try await first(3 * perWriter, of: received, within: .seconds(120)).map(\.text)
        #expect(lines.count == 3 * perWriter)
        for index in 0..<3 {
            let own = lines.filter { $0.hasPrefix("\(index) ") }
            #expect(own == (0..<perWriter).map { "\(index) \($0)" }, "writer \(index): skipped or reordered")
        }
    }
}
