import AsyncMail
import AsyncMailPostgres
import Foundation
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

/// Against a real PostgreSQL (PGHOST, PGPORT, PGUSER, PGDATABASE). One at a time: some of these
/// terminate backends or restart the server.
@Suite("PostgresRelay against a real PostgreSQL", .serialized)
struct RelayTests {
    // MARK: Delivery

    @Test("mail crosses relays with its value sender, in order; a pinned subscription hears only its room")
    func crossesWithSender() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sending = try await start(makeRelay(here, on: channel))
        let receiving = try await start(makeRelay(there, on: channel))
        let lobby = await there.subscribe(to: ChatLine.self, from: .only(RoomID(name: "lobby")))
        let kitchen = await there.subscribe(to: ChatLine.self, from: .only(RoomID(name: "kitchen")))

        for number in 0..<50 { await here.post(ChatLine(text: "lobby \(number)"), from: RoomID(name: "lobby")) }
        await here.post(ChatLine(text: "kitchen"), from: RoomID(name: "kitchen"))

        #expect(try await first(50, of: lobby).map(\.text) == (0..<50).map { "lobby \($0)" })
        #expect(try await first(1, of: kitchen).map(\.text) == ["kitchen"])
        try await stop(sending)
        try await stop(receiving)
    }

    @Test("a batch arrives as one batch")
    func batchArrivesAsOne() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sending = try await start(makeRelay(here, on: channel))
        let receiving = try await start(makeRelay(there, on: channel))
        let tap = await there.subscribeToAllMail()
        await here.post(contentsOf: (1...5).map { ChatLine(text: "\($0)") }, from: RoomID(name: "lobby"))
        let seen = try await first(5, of: tap)
        #expect(seen.map(\.isLastInPost) == [false, false, false, false, true])
        #expect(seen.compactMap { $0.mail(as: ChatLine.self)?.text } == ["1", "2", "3", "4", "5"])
        try await stop(sending)
        try await stop(receiving)
    }

    @Test("posts that wait together, of one type from one sender, travel as one row and arrive in order")
    func waitingPostsCoalesce() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sendingRelay = try makeRelay(here, on: channel)
        let sending = try await start(sendingRelay)
        let receiving = try await start(makeRelay(there, on: channel))
        let tap = await there.subscribeToAllMail()
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
        try await eventually { try await Database.advisoryLockWaiters() == 1 }
        for (text, room) in [
            ("a1", lobby), ("a2", lobby), ("a3", lobby), ("b1", kitchen), ("a4", lobby), ("a5", lobby),
        ] {
            await here.post(ChatLine(text: text), from: room)
        }
        try await eventually { sendingRelay.counters.queued == 7 }
        try await blocker.query("SELECT pg_advisory_unlock(hashtext(\(channel.name)))", logger: Database.logger)
        try await blocker.close()

        let seen = try await first(7, of: tap)
        #expect(seen.compactMap { $0.mail(as: ChatLine.self)?.text } == ["first", "a1", "a2", "a3", "b1", "a4", "a5"])
        #expect(seen.compactMap { $0.sender as? RoomID } == [lobby, lobby, lobby, lobby, kitchen, lobby, lobby])
        // One batch per run of posts from one sender: first | a1 a2 a3 | b1 | a4 a5.
        #expect(seen.map(\.isLastInPost) == [true, false, false, true, true, false, true])
        #expect(try await Database.payloads(on: channel).count == 4)
        try await stop(sending)
        try await stop(receiving)
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
        #expect(await there.subscriberCount(for: LocalNote.self) == 1)
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
        let sending = try await start(makeRelay(here, on: channel))
        for number in 1...20 { await here.post(ChatLine(text: "line \(number)"), from: RoomID(name: "lobby")) }
        let heard = try await first(20, of: output)
        #expect(heard == (1...20).map { "line \($0)" })
        // The peer exits by itself once it has heard all 20.
        try await eventually { !process.isRunning }
        #expect(process.terminationStatus == 0)
        try await stop(sending)
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
        let reading = try await start(makeRelay(reader, on: channel))
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
        for task in running { try await stop(task) }
        try await stop(reading)
    }

    // MARK: Bad input

    @Test("ephemeral: a post too large for one notification travels through the table, in order")
    func spillEphemeral() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sendingRelay = try makeRelay(here, on: channel, mode: .ephemeral) { $0.maximumMailBytes = 20_000 }
        let events = EventLog(sendingRelay)
        let sending = try await start(sendingRelay)
        let receivingRelay = try makeRelay(there, on: channel, mode: .ephemeral)
        let receiving = try await start(receivingRelay)
        let lines = await there.subscribe(to: ChatLine.self)
        // Each step waits for the one before to arrive, so that no two posts share an envelope.
        await here.post(ChatLine(text: "fits"))
        #expect(try await first(1, of: lines).map(\.text) == ["fits"])
        #expect(sendingRelay.counters.spilled == 0)
        // Past the 8,000-byte limit: spilled, with its neighbours; past the maximum: reported.
        let large = String(repeating: "x", count: 9_000)
        let oversize = ChatLine(text: String(repeating: "z", count: 30_000))
        await here.post(contentsOf: [
            ChatLine(text: "before"), ChatLine(text: large), oversize, ChatLine(text: "after"),
        ])
        #expect(try await first(3, of: lines).map(\.text) == ["before", large, "after"])
        // Many small ones: together more than one notification holds.
        let smalls = (0..<400).map { "small \($0) " + String(repeating: "y", count: 40) }
        await here.post(contentsOf: smalls.map(ChatLine.init(text:)))
        #expect(try await first(400, of: lines).map(\.text) == smalls)
        #expect(sendingRelay.counters.spilled == 403)
        #expect(sendingRelay.counters.oversize == 1)
        #expect(
            events.count {
                if case .oversize(type: "chat.line", bytes: let bytes) = $0 { bytes > 30_000 } else { false }
            } == 1
        )
        #expect(try await Database.payloads(on: channel).count == 2)
        #expect(receivingRelay.counters.missing == 0)
        try await stop(sending)
        try await stop(receiving)
    }

    @Test("durable: the maximum mail size is configurable, and a larger mail is reported")
    func oversizeDurable() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sendingRelay = try makeRelay(here, on: channel) { $0.maximumMailBytes = 1_000 }
        let sending = try await start(sendingRelay)
        let receiving = try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        await here.post(ChatLine(text: String(repeating: "x", count: 2_000)))
        await here.post(ChatLine(text: String(repeating: "z", count: 20_000)))  // fine in durable mode
        await here.post(ChatLine(text: "small"))
        #expect(try await first(1, of: lines).map(\.text) == ["small"])
        #expect(sendingRelay.counters.oversize == 2)
        try await stop(sending)
        try await stop(receiving)
    }

    @Test("durable: past the 8,000-byte NOTIFY limit, mail still travels")
    func largeDurable() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sending = try await start(makeRelay(here, on: channel))
        let receiving = try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        let large = String(repeating: "q", count: 50_000)
        await here.post(ChatLine(text: large))
        #expect(try await first(1, of: lines).map(\.text) == [large])
        try await stop(sending)
        try await stop(receiving)
    }

    @Test("ephemeral: gaps are detected with their exact count, from posts, heartbeats and spilled rows gone")
    func gapDetection() async throws {
        let channel = try freshChannel()
        let there = Mailroom()
        let relay = try makeRelay(there, on: channel, mode: .ephemeral)
        let events = EventLog(relay)
        let receiving = try await start(relay)
        let lines = await there.subscribe(to: ChatLine.self)
        try await Database.notify(on: channel, #"{"o":"fake","n":1,"t":"chat.line","c":1,"m":[{"text":"one"}]}"#)
        try await Database.notify(
            on: channel,
            #"{"o":"fake","n":4,"t":"chat.line","c":2,"m":[{"text":"four"},{"text":"five"}]}"#
        )
        try await Database.notify(on: channel, #"{"o":"fake","h":8}"#)  // 6, 7 and 8 never arrived
        try await Database.notify(on: channel, #"{"o":"fake","n":9,"t":"chat.line","c":1,"m":[{"text":"nine"}]}"#)
        try await Database.notify(on: channel, #"{"o":"fake","n":10,"c":3,"r":-1}"#)  // spilled; no row -1, ever
        try await Database.notify(on: channel, #"{"o":"fake","n":13,"t":"chat.line","c":1,"m":[{"text":"13"}]}"#)
        #expect(try await first(5, of: lines).map(\.text) == ["one", "four", "five", "nine", "13"])
        let gaps = events.all.compactMap { event -> Int? in
            if case .gap(origin: "fake", missing: let missing) = event { return missing }
            return nil
        }
        #expect(gaps == [2, 3, 3])
        #expect(relay.counters.missing == 8)
        try await stop(receiving)
    }

    @Test("durable: a batch published again after a lost commit answer is delivered once")
    func durableRepeatDroppedOnce() async throws {
        let channel = try freshChannel()
        let there = Mailroom()
        let relay = try makeRelay(there, on: channel)
        let receiving = try await start(relay)
        let lines = await there.subscribe(to: ChatLine.self)
        // What a publisher writes when it retries a batch whose commit succeeded: the same rows,
        // with the same numbers, again.
        func write(_ payloads: [String]) async throws {
            try await Database.execute(
                """
                WITH inserted AS (
                    INSERT INTO asyncmail_relay (channel, payload)
                    SELECT \(channel.name), p FROM unnest(\(payloads)::text[]) WITH ORDINALITY AS rows(p, position)
                    ORDER BY position
                )
                SELECT pg_notify(\(channel.name), '')
                """
            )
        }
        let batch = [
            #"{"o":"other","n":1,"t":"chat.line","c":2,"m":[{"text":"one"},{"text":"two"}]}"#,
            #"{"o":"other","n":3,"t":"chat.line","c":1,"m":[{"text":"three"}]}"#,
        ]
        try await write(batch)
        try await write(batch)
        try await write([#"{"o":"other","n":4,"t":"chat.line","c":1,"m":[{"text":"four"}]}"#])
        // Order is kept, so had the repeat been delivered, it would have come before "four".
        #expect(try await first(4, of: lines).map(\.text) == ["one", "two", "three", "four"])
        #expect(relay.counters.duplicates == 3)
        #expect(relay.counters.received == 4)
        try await stop(receiving)
    }

    @Test("unknown types and undecodable mail are counted and reported; the relay carries on")
    func unknownType() async throws {
        let channel = try freshChannel()
        let there = Mailroom()
        let relay = try makeRelay(there, on: channel, mode: .ephemeral)
        let events = EventLog(relay)
        let receiving = try await start(relay)
        let lines = await there.subscribe(to: ChatLine.self)
        try await Database.notify(on: channel, #"{"o":"fake","n":1,"t":"chat.line.v9","c":3,"m":[1,2,3]}"#)
        try await Database.notify(on: channel, #"{"o":"fake","n":4,"t":"chat.line","c":1,"m":[{"wrong":"shape"}]}"#)
        try await Database.notify(on: channel, "not json at all")
        try await Database.notify(on: channel, #"{"o":"fake","n":5,"t":"chat.line","c":1,"m":[{"text":"still here"}]}"#)
        #expect(try await first(1, of: lines).map(\.text) == ["still here"])
        #expect(relay.counters.unknownType == 3)
        #expect(relay.counters.decodeFailures == 1, "mail of a registered type in the wrong shape")
        #expect(relay.counters.rejected == 1, "text that is not an envelope")
        #expect(relay.counters.missing == 0)
        #expect(events.count { $0 == .unknownType("chat.line.v9") } == 1)
        try await stop(receiving)
    }

    @Test("a full outbound queue is reported, never silent")
    func queueOverflow() async throws {
        let channel = try freshChannel()
        let here = Mailroom()
        let relay = try makeRelay(here, on: channel) { $0.outboundQueueLimit = 3 }
        let log = EventLog(relay)
        let running = try await start(relay)
        // Holding the channel's advisory lock keeps the publisher's first statement waiting: it
        // holds at most one batch (the queue's three at most), three more wait in the queue and
        // three between the tap and the queue, so at least one of ten posts is refused.
        let blocker = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 96,
            logger: Database.logger
        )
        do {
            try await blocker.query("SELECT pg_advisory_lock(hashtext(\(channel.name)))", logger: Database.logger)
            for number in 0..<10 { await here.post(ChatLine(text: "\(number)")) }
            try await eventually { relay.counters.queued + relay.counters.queueOverflow == 10 }
            #expect(relay.counters.queueOverflow >= 1)
            try await eventually {
                let reported = log.all.reduce(0) { sum, event in
                    if case .queueOverflow(let posts) = event { sum + posts } else { sum }
                }
                return reported == relay.counters.queueOverflow
            }
            try await blocker.query("SELECT pg_advisory_unlock(hashtext(\(channel.name)))", logger: Database.logger)
        } catch {
            Issue.record(error)
        }
        try await blocker.close()
        try await stop(running)
    }

    // MARK: Faults

    @Test(
        "durable: the listener's backend terminated mid-stream at 1,000 mails/s loses nothing",
        .timeLimit(.minutes(2))
    )
    func terminatedListenerDurable() async throws {
        try await terminatedListener(mode: .durable())
    }

    @Test("ephemeral: the listener's backend terminated mid-stream is reported exactly", .timeLimit(.minutes(2)))
    func terminatedListenerEphemeral() async throws {
        try await terminatedListener(mode: .ephemeral)
    }

    private func terminatedListener(mode: PostgresRelay.Mode) async throws {
        let (receivingRelay, events) = try await streamThroughFault(
            mode: mode,
            named: "terminated\(mode == .ephemeral ? "e" : "d")"
        ) { receivingRelay in try await Database.terminate(receivingRelay.applicationName) }
        if mode == .ephemeral {
            #expect(
                receivingRelay.counters.missing > 0,
                "terminating the listener lost nothing; the test proved nothing"
            )
        }
        #expect(events.count { if case .disconnected = $0 { true } else { false } } >= 1)
    }

    @Test(
        "durable: a server restart mid-stream loses nothing",
        .enabled(if: Database.control != nil, "needs ASYNCMAIL_PG_CONTROL (Scripts/postgres.sh)"),
        .timeLimit(.minutes(2))
    )
    func restartDurable() async throws {
        try await restart(mode: .durable())
    }

    @Test(
        "ephemeral: a server restart mid-stream is reported exactly",
        .enabled(if: Database.control != nil, "needs ASYNCMAIL_PG_CONTROL (Scripts/postgres.sh)"),
        .timeLimit(.minutes(2))
    )
    func restartEphemeral() async throws {
        try await restart(mode: .ephemeral)
    }

    private func restart(mode: PostgresRelay.Mode) async throws {
        // A fast restart may fall between two publishes and lose nothing; what is lost must be counted.
        _ = try await streamThroughFault(
            mode: mode,
            named: "restart\(mode == .ephemeral ? "e" : "d")",
            hearingWithin: .seconds(90),
            accountingWithin: .seconds(60)
        ) { _ in try await Database.control("restart") }
    }

    /// Posts 3,000 numbered lines at 1,000/s from one relay to another, runs `fault` at line 1,000,
    /// and checks the mode's promise: durable hears every line in order; ephemeral hears or counts
    /// missing every line. Returns the receiving relay and its events for the caller's own checks.
    private func streamThroughFault(
        mode: PostgresRelay.Mode,
        named name: String,
        hearingWithin hearingLimit: Duration = .seconds(60),
        accountingWithin accountingLimit: Duration = .seconds(30),
        fault: @escaping @Sendable (PostgresRelay) async throws -> Void
    ) async throws -> (PostgresRelay, EventLog) {
        let channel = try freshChannel(name)
        let (here, there) = (Mailroom(), Mailroom())
        let receivingRelay = try makeRelay(there, on: channel, mode: mode)
        let events = EventLog(receivingRelay)
        let sending = try await start(makeRelay(here, on: channel, mode: mode))
        let receiving = try await start(receivingRelay)
        let lines = await there.subscribe(to: ChatLine.self)
        let total = 3_000
        try await postPaced(total, to: here, perSecond: 1_000) { number in
            if number == 1_000 { try await fault(receivingRelay) }
        }
        switch mode {
        case .durable:
            let heard = try await first(total, of: lines, within: hearingLimit).map(\.text)
            #expect(heard == (0..<total).map { "\($0)" })
        case .ephemeral:
            // Every mail is either heard or counted missing, once the last heartbeat is in.
            let heard = Locked(0)
            let counting = Task { for await _ in lines { heard.withLock { $0 += 1 } } }
            try await eventually(accountingLimit) { heard.withLock { $0 } + receivingRelay.counters.missing == total }
            counting.cancel()
        }
        try await stop(sending)
        try await stop(receiving)
        return (receivingRelay, events)
    }

    @Test(
        "durable: an outage of several seconds is caught up",
        .enabled(if: Database.control != nil, "needs ASYNCMAIL_PG_CONTROL (Scripts/postgres.sh)"),
        .timeLimit(.minutes(2))
    )
    func outage() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sending = try await start(makeRelay(here, on: channel))
        let receiving = try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        await here.post(ChatLine(text: "before"))
        #expect(try await first(1, of: lines).map(\.text) == ["before"])
        try await Database.control("stop")
        for number in 0..<100 { await here.post(ChatLine(text: "during \(number)")) }
        try await Task.sleep(for: .seconds(3))  // the outage itself
        try await Database.control("start")
        await here.post(ChatLine(text: "after"))
        let heard = try await first(101, of: lines, within: .seconds(60)).map(\.text)
        #expect(heard == (0..<100).map { "during \($0)" } + ["after"])
        try await stop(sending)
        try await stop(receiving)
    }

    @Test(
        "a half-open listening connection is detected by the heartbeat and replaced",
        .enabled(if: Database.control != nil, "stops a server process: needs the tests' own cluster"),
        .timeLimit(.minutes(1))
    )
    func halfOpen() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let receivingRelay = try makeRelay(there, on: channel)
        let events = EventLog(receivingRelay)
        let receiving = try await start(receivingRelay)
        let sending = try await start(makeRelay(here, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        // The listener's server process stops answering without closing anything: from the
        // relay's side, exactly a half-open connection.
        let pids = try await Database.pids(named: receivingRelay.applicationName)
        #expect(pids.count == 1)
        for pid in pids { kill(pid_t(pid), SIGSTOP) }
        defer { for pid in pids { kill(pid_t(pid), SIGCONT) } }
        await here.post(ChatLine(text: "while it hung"))
        try await eventually {
            events.count { $0 == .listening } >= 2
                && events.count { if case .disconnected = $0 { true } else { false } } >= 1
        }
        #expect(try await first(1, of: lines).map(\.text) == ["while it hung"])
        #expect(events.all.contains { "\($0)".contains("no answer to a heartbeat") })
        try await stop(sending)
        try await stop(receiving)
    }

    @Test(
        "rows older than the retention (durable) or the spill retention (ephemeral) are deleted, younger ones kept",
        arguments: [PostgresRelay.Mode.durable(retention: .seconds(3600)), .ephemeral]
    )
    func retention(mode: PostgresRelay.Mode) async throws {
        let channel = try freshChannel()
        let relay = try makeRelay(Mailroom(), on: channel, mode: mode)
        // The table exists once a relay has started; then age one row by two hours.
        let running = try await start(relay)
        for text in ["old", "young"] {
            try await Database.execute(
                "INSERT INTO asyncmail_relay (channel, payload) VALUES (\(channel.name), \(text))"
            )
        }
        try await Database.execute(
            "UPDATE asyncmail_relay SET created_at = now() - interval '2 hours' WHERE channel = \(channel.name) AND payload = 'old'"
        )
        // The listener's first heartbeat cleans up.
        try await eventually { try await Database.payloads(on: channel) == ["young"] }
        try await stop(running)
    }

    // MARK: Lifecycle

    @Test("cancellation leaves no backend behind")
    func noBackendLeft() async throws {
        let channel = try freshChannel()
        let here = Mailroom()
        let relay = try makeRelay(here, on: channel)
        let running = try await start(relay)
        await here.post(ChatLine(text: "opens the publisher's connection"))
        try await eventually { relay.counters.published == 1 }
        #expect(try await Database.backends(named: relay.applicationName) == 2)
        try await stop(running)
        try await eventually { try await Database.backends(named: relay.applicationName) == 0 }
    }

    @Test("a graceful shutdown publishes everything queued before it returns")
    func gracefulShutdownFlushes() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let receiving = try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        let sendingRelay = try makeRelay(here, on: channel)
        let group = ServiceGroup(configuration: .init(services: [sendingRelay], logger: Database.logger))
        let events = sendingRelay.events()
        let running = Task { try await group.run() }
        try await withTimeout {
            for await event in events where event == .listening { return }
        }
        for number in 0..<2_000 { await here.post(ChatLine(text: "\(number)")) }
        await group.triggerGracefulShutdown()
        try await withTimeout { try await running.value }
        #expect(sendingRelay.counters.published == 2_000)
        #expect(try await first(2_000, of: lines).map(\.text) == (0..<2_000).map { "\($0)" })
        #expect(try await Database.backends(named: sendingRelay.applicationName) == 0)
        try await stop(receiving)
    }

    @Test("the table's payloads are compressed with lz4 when the server has it")
    func payloadCompression() async throws {
        let table = "asyncmail_relay_lz4_\(UInt32.random(in: 0...UInt32.max))"
        let running = try await start(makeRelay(Mailroom(), on: freshChannel()) { $0.table = table })
        try await stop(running)
        let method = try await Database.values(
            """
            SELECT attcompression::text FROM pg_attribute
            WHERE attrelid = to_regclass(\(table)) AND attname = 'payload'
            """,
            as: String.self
        )
        // A server built without lz4 refuses it; then the column keeps the default.
        let serverHasLZ4 = (try? await Database.execute("CREATE TEMP TABLE lz4_probe (x text COMPRESSION lz4)")) != nil
        #expect(method == [serverHasLZ4 ? "l" : ""])
        try await Database.execute("DROP TABLE \(unescaped: table)")
    }

    @Test("the table made beforehand with the article's SQL serves a role that may not create tables")
    func documentedMigration() async throws {
        let article = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AsyncMailPostgres/AsyncMailPostgres.docc/AcrossProcessesAndMachines.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let blocks = text.components(separatedBy: "```sql").dropFirst()
        try #require(blocks.count == 1, "the article has one SQL block")
        let sql = blocks.first!.components(separatedBy: "```")[0]
        let statements = sql.split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("--") }
            .joined(separator: " ")
            .split(separator: ";")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        // Run as written, in a schema of its own, then handed to a role that may only use it.
        let suffix = UInt32.random(in: 0...UInt32.max)
        let (schema, role) = ("migration_\(suffix)", "asyncmail_migrated_\(suffix)")
        let admin = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 97,
            logger: Database.logger
        )
        try await admin.query("CREATE SCHEMA \(unescaped: schema)", logger: Database.logger)
        try await admin.query("SET search_path = \(unescaped: schema)", logger: Database.logger)
        for statement in statements {
            try await admin.query(PostgresQuery(unsafeSQL: statement), logger: Database.logger)
        }
        for grant in [
            "CREATE ROLE \(role) LOGIN",
            "GRANT USAGE ON SCHEMA \(schema) TO \(role)",
            "GRANT SELECT, INSERT, DELETE ON asyncmail_relay TO \(role)",
            "GRANT USAGE ON SEQUENCE asyncmail_relay_id_seq TO \(role)",
        ] {
            try await admin.query(PostgresQuery(unsafeSQL: grant), logger: Database.logger)
        }
        var restricted = Database.configuration
        restricted.username = role
        restricted.options.additionalStartupParameters.append(("search_path", schema))
        let channel = try freshChannel()
        let relays = try [Mailroom(), Mailroom()].map { try makeRelay($0, on: channel, connection: restricted) }
        let running = [try await start(relays[0]), try await start(relays[1])]
        let lines = await relays[1].mailroom.subscribe(to: ChatLine.self)
        await relays[0].mailroom.post(ChatLine(text: "through the migrated table"))
        #expect(try await first(1, of: lines).map(\.text) == ["through the migrated table"])
        for task in running { try await stop(task) }
        try await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: Database.logger)
        try await admin.query("DROP ROLE \(unescaped: role)", logger: Database.logger)
        try await admin.close()
    }

    @Test("a role that may not create the table gets a clear error")
    func tableSetupRefused() async throws {
        try await Database.execute("DROP ROLE IF EXISTS asyncmail_norights")
        try await Database.execute("CREATE ROLE asyncmail_norights LOGIN")
        try await Database.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        var configuration = Database.configuration
        configuration.username = "asyncmail_norights"
        let relay = try PostgresRelay(
            mailroom: Mailroom(),
            connection: configuration,
            configuration: .init(channel: freshChannel(), table: "asyncmail_relay_refused"),
            logger: Database.logger
        )
        await #expect {
            try await withTimeout { try await relay.run() }
        } throws: { error in
            guard case .tableSetupFailed(table: "asyncmail_relay_refused", let reason) = error as? RelayError else {
                return false
            }
            return reason.contains("permission denied")
        }
    }
}

/// Posts `total` numbered lines at about `perSecond`, calling `during` with each number first.
func postPaced(
    _ total: Int,
    to mailroom: Mailroom,
    perSecond: Int,
    during: (Int) async throws -> Void
) async throws {
    let clock = ContinuousClock()
    let start = clock.now
    for number in 0..<total {
        try await during(number)
        await mailroom.post(ChatLine(text: "\(number)"))
        if number % 10 == 9 {
            // Pacing the load, not waiting for an event: 10 mails per 10 ms.
            try await clock.sleep(until: start + .milliseconds((number + 1) * 1_000 / perSecond))
        }
    }
}

enum RelayPeer {
    /// The RelayPeer executable beside the test bundle, wherever SwiftPM built it (under
    /// `--scratch-path` too), or ASYNCMAIL_RELAY_PEER.
    static var path: String {
        if let path = ProcessInfo.processInfo.environment["ASYNCMAIL_RELAY_PEER"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().appendingPathComponent("RelayPeer").path
    }

    /// Starts RelayPeer with `arguments` on `channel`; returns it with the lines it prints.
    static func launch(
        _ arguments: [String],
        on channel: RelayChannel,
        environment extra: [String: String] = [:]
    ) throws -> (Process, AsyncStream<String>) {
        #expect(FileManager.default.isExecutableFile(atPath: path), "build RelayPeer first: swift build")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["RELAY_CHANNEL"] = channel.name
        environment.merge(extra) { _, new in new }
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, lines(of: pipe))
    }
}
