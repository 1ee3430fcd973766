import AsyncMail
import AsyncMailRelay
import AsyncMailTesting
import Testing

/// Every count a relay reports is exact: what it says it gave up is what another process misses.
extension ContractTests {
    @Test(
        "a burst past the outbound queue: flush's count and the overflow counter equal the mails another process missed",
        arguments: Engine.all,
        [false, true]
    )
    func overflowCountsExactly(engine: Engine, sharedPositions: Bool) async throws {
        let place = try engine.makePlace(#function)
        let settings = Settings(sharedPositions: sharedPositions, queueLimit: 4)
        let lobby = RoomID(name: "lobby")
        let (here, there) = (Mailroom(), Mailroom())
        for mailroom in [here, there] { await mailroom.retainHistory(ChatLine.self, count: 10_000) }
        let posting = try engine.makeRelay(here, place, settings)
        try await start(posting)
        try await start(engine.makeRelay(there, place, Settings(sharedPositions: sharedPositions)))
        let heard = await there.subscribe(to: ChatLine.self, from: .only(lobby))

        // Posted without waiting, far faster than a relay writes one post at a time behind a
        // queue of four: most of the burst is given up, and counted.
        let burst = 2_000
        for number in 0..<burst { here.postSynchronously(ChatLine(text: "\(number)"), from: lobby) }
        var notRelayed = 0
        do { try await posting.flush() } catch let error as RelayError where error.code == .notRelayed {
            notRelayed = error.mails ?? -1
        }
        #expect(notRelayed > 0, "the burst overflowed the queue")

        // Everything relayed was stored before the flush returned; the marker, stored after it,
        // arrives after every row before it.
        await here.post(ChatLine(text: "end"), from: lobby)
        try await posting.flush()
        let received = try await withTimeout {
            var received = 0
            for await line in heard {
                if line.text == "end" { break }
                received += 1
            }
            return received
        }
        #expect(received + notRelayed == burst, "received \(received), reported \(notRelayed) of \(burst)")
        #expect(posting.counters.queueOverflow == notRelayed, "one mail a post: the overflow counter counts posts")
        #expect(posting.counters.queued == received + 1)
    }

    @Test(
        "async posts from 8 tasks past a queue of 4: by default they wait and every mail arrives, in each task's order; with .drop, flush counts what was missed",
        arguments: Engine.all,
        [true, false]
    )
    func burstWaitsForRoom(engine: Engine, waits: Bool) async throws {
        let place = try engine.makePlace(#function)
        let lobby = RoomID(name: "lobby")
        let (here, there) = (Mailroom(), Mailroom())
        let settings = Settings(queueLimit: 4, backpressure: waits ? .wait(atMost: .seconds(600)) : .drop)
        let posting = try engine.makeRelay(here, place, settings)
        try await start(posting)
        try await start(engine.makeRelay(there, place, Settings()))
        let heard = await there.subscribe(to: ChatLine.self, from: .only(lobby))

        // Far faster than a relay writes behind a queue of four mails.
        let (tasks, each) = (8, 250)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for number in 0..<each { await here.post(ChatLine(text: "\(task) \(number)"), from: lobby) }
                }
            }
        }
        var notRelayed = 0
        do { try await posting.flush() } catch let error as RelayError where error.code == .notRelayed {
            notRelayed = error.mails ?? -1
        }
        await here.post(ChatLine(text: "end"), from: lobby)
        try await posting.flush()
        let received = try await withTimeout {
            var received: [Int: [Int]] = [:]
            for await line in heard {
                if line.text == "end" { break }
                let parts = line.text.split(separator: " ").compactMap { Int($0) }
                received[parts[0], default: []].append(parts[1])
            }
            return received
        }
        let count = received.values.reduce(0) { $0 + $1.count }
        for (task, numbers) in received { #expect(numbers == numbers.sorted(), "task \(task)'s posts in its order") }
        #expect(posting.counters.queueOverflow == notRelayed, "one mail a post: the overflow counter counts posts")
        if waits {
            #expect(count == tasks * each, "\(count) of \(tasks * each) arrived")
            #expect(notRelayed == 0)
        } else {
            #expect(notRelayed > 0, "the burst overflowed the queue")
            #expect(count + notRelayed == tasks * each, "received \(count), reported \(notRelayed)")
        }
    }

    @Test(
        "a start taken in a room nothing was posted to resumes after a restart, and on another instance, with all posted since",
        arguments: Engine.all
    )
    func quietStartResumes(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let settings = Settings(sharedPositions: true)
        let quiet = RoomID(name: "quiet")
        let before = Mailroom()
        await before.retainHistory(ChatLine.self, count: 1_000)
        try await start(engine.makeRelay(before, place, settings))
        let heard = try await before.subscribe(to: ChatLine.self, from: .only(quiet), after: nil)
        let quietStart = try #require(heard.start)
        #expect(quietStart.sequence == 0)

        // The process restarts: a new mailroom and relay at the same place, where 100 mails are
        // posted to the room before the client comes back with its start.
        let after = Mailroom()
        await after.retainHistory(ChatLine.self, count: 1_000)
        try await start(engine.makeRelay(after, place, settings))
        for number in 0..<100 { await after.post(ChatLine(text: "\(number)"), from: quiet) }
        let posted = (0..<100).map { "\($0)" }
        for mailroom in [after, before] {
            let resumed = try await mailroom.subscribe(to: ChatLine.self, from: .only(quiet), after: quietStart)
            #expect(resumed.gap == nil)
            #expect(try await resumed.mail.first(100).map(\.mail.text) == posted)
        }
        #expect(try await heard.mail.first(100).map(\.mail.text) == posted, "the first subscription, live")
    }

    @Test(
        "mail the retention deleted before a running relay read it is told, in order, to a subscriber that drops and tells",
        arguments: Engine.all
    )
    func holeIsTold(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let settings = Settings(sharedPositions: true)
        let lobby = RoomID(name: "lobby")
        let (here, there) = (Mailroom(), Mailroom())
        for mailroom in [here, there] { await mailroom.retainHistory(ChatLine.self, count: 100) }
        try await start(engine.makeRelay(here, place, settings))
        try await start(engine.makeRelay(there, place, settings))
        let heard = await there.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .droppingOldest(past: 100))
        await here.post(ChatLine(text: "seen"), from: lobby)
        #expect(try await heard.first(1).map(\.mail?.text) == ["seen"])

        // Three mails written and deleted while the relay was between two reads.
        try await engine.loseUnread(place, 3)
        await here.post(ChatLine(text: "after"), from: lobby)
        let rest = try await heard.first(2)
        #expect(rest.first?.loss == MailLoss(code: .missed, count: 3))
        #expect(rest.last?.mail?.text == "after")
    }

    @Test(
        "random bursts: in another process, mails received + losses told + mails not relayed = mails posted",
        arguments: Engine.all,
        [false, true]
    )
    func burstsAccountExactly(engine: Engine, sharedPositions: Bool) async throws {
        let place = try engine.makePlace(#function)
        let lobby = RoomID(name: "lobby")
        let (here, there) = (Mailroom(), Mailroom())
        for mailroom in [here, there] { await mailroom.retainHistory(ChatLine.self, count: 100) }
        let posting = try engine.makeRelay(here, place, Settings(sharedPositions: sharedPositions, queueLimit: 64))
        try await start(posting)
        try await start(engine.makeRelay(there, place, Settings(sharedPositions: sharedPositions)))
        let heard = await there.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .droppingOldest(past: 16))
        // The listener reads nothing during the first two bursts (its backlog overflows), then
        // reads with pauses of its own while the rest arrive, and stops at "end".
        let (reading, startReading) = AsyncStream.makeStream(of: Void.self)
        let listener = Task { () -> (received: Int, lost: Int) in
            for await _ in reading { break }
            var (received, lost, pause) = (0, 0, 0)
            for await delivery in heard {
                switch delivery {
                case .mail(let line):
                    if line.text == "end" { return (received, lost) }
                    received += 1
                case .lost(let loss):
                    lost += loss.count
                }
                pause += 1
                if pause.isMultiple(of: 5) { await Task.yield() }
            }
            return (received, lost)
        }
        var random = SeededRandomNumberGenerator(seed: sharedPositions ? 7 : 3)
        var (posted, notRelayed) = (0, 0)
        for burst in 0..<5 {
            if burst == 2 { startReading.yield() }
            for _ in 0..<Int.random(in: 1...400, using: &random) {
                here.postSynchronously(ChatLine(text: "\(posted)"), from: lobby)
                posted += 1
            }
            do { try await posting.flush() } catch let error as RelayError where error.code == .notRelayed {
                notRelayed += error.mails ?? 0
            }
        }
        await here.post(ChatLine(text: "end"), from: lobby)
        try await posting.flush()
        let (received, lost) = try await withTimeout { await listener.value }
        #expect(
            received + lost + notRelayed == posted,
            "\(received) received + \(lost) told lost + \(notRelayed) not relayed, of \(posted) posted"
        )
    }

    @Test(
        "a row the relay rejects leaves a hole in its room, told in order to a subscriber that drops and tells",
        arguments: Engine.all
    )
    func rejectedRowIsTold(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let key = try RelayKey(Array(repeating: UInt8(7), count: 32))
        let other = try RelayKey(Array(repeating: UInt8(9), count: 32))
        let lobby = RoomID(name: "lobby")
        let (here, forger, there) = (Mailroom(), Mailroom(), Mailroom())
        for mailroom in [here, forger, there] { await mailroom.retainHistory(ChatLine.self, count: 100) }
        try await start(engine.makeRelay(here, place, Settings(key: key, sharedPositions: true)))
        let forging = try engine.makeRelay(forger, place, Settings(key: other, sharedPositions: true))
        try await start(forging)
        let listening = try engine.makeRelay(there, place, Settings(key: key, sharedPositions: true))
        try await start(listening)
        let heard = await there.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .droppingOldest(past: 100))
        await here.post(ChatLine(text: "seen"), from: lobby)
        #expect(try await heard.first(1).map(\.mail?.text) == ["seen"])

        // A row of the room, numbered by the store like any other, signed with another key.
        await forger.post(ChatLine(text: "forged"), from: lobby)
        try await forging.flush()
        await here.post(ChatLine(text: "after"), from: lobby)
        let rest = try await heard.first(2)
        #expect(rest.first?.loss == MailLoss(code: .missed, count: 1))
        #expect(rest.last?.mail?.text == "after")
        #expect(listening.counters.rejected == 1)
    }
}
