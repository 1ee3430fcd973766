import AsyncMail
import AsyncMailRelay
import AsyncMailTesting
import Foundation
import Testing

/// What every relay promises, checked against each engine with the same code. One test at a
/// time: the PostgreSQL engine's tests share one server.
@Suite("The relays' contract, against every engine", .serialized, .stopsRelays)
struct ContractTests {
    @Test(
        "mail crosses with its value sender, in order; a pinned subscription hears only its room",
        arguments: Engine.all
    )
    func crossesWithSender(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let (here, there) = (Mailroom(), Mailroom())
        try await start(engine.makeRelay(here, place, Settings()))
        try await start(engine.makeRelay(there, place, Settings()))
        let lobby = await there.subscribe(to: ChatLine.self, from: .only(RoomID(name: "lobby")))
        let kitchen = await there.subscribe(to: ChatLine.self, from: .only(RoomID(name: "kitchen")))

        for number in 0..<50 { await here.post(ChatLine(text: "lobby \(number)"), from: RoomID(name: "lobby")) }
        await here.post(ChatLine(text: "kitchen"), from: RoomID(name: "kitchen"))

        #expect(try await lobby.first(50).map(\.text) == (0..<50).map { "lobby \($0)" })
        #expect(try await kitchen.first(1).map(\.text) == ["kitchen"])
    }

    @Test("a batch arrives as one batch", arguments: Engine.all)
    func batchArrivesAsOne(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let (here, there) = (Mailroom(), Mailroom())
        try await start(engine.makeRelay(here, place, Settings()))
        try await start(engine.makeRelay(there, place, Settings()))
        let tap = await there.tap()
        await here.post(contentsOf: (1...5).map { ChatLine(text: "\($0)") }, from: RoomID(name: "lobby"))
        let seen = try await tap.first(5)
        #expect(seen.map(\.isLastInPost) == [false, false, false, false, true])
        #expect(seen.compactMap { $0.mail(as: ChatLine.self)?.text } == ["1", "2", "3", "4", "5"])
    }

    @Test(
        "no echo and no loop among three relays: each hears the others' mail once, never its own",
        arguments: Engine.all
    )
    func noEcho(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let mailrooms = [Mailroom(), Mailroom(), Mailroom()]
        var relays: [any MailRelay] = []
        for mailroom in mailrooms {
            let relay = try engine.makeRelay(mailroom, place, Settings())
            relays.append(relay)
            try await start(relay)
        }
        var streams: [AsyncStream<ChatLine>] = []
        for mailroom in mailrooms { streams.append(await mailroom.subscribe(to: ChatLine.self)) }
        for (index, mailroom) in mailrooms.enumerated() { await mailroom.post(ChatLine(text: "from \(index)")) }
        for relay in relays { try await relay.flush() }
        // Written after every relay's own row: a relay that read the others' markers has read
        // its own row too, so an echo would have arrived by then.
        for (index, mailroom) in mailrooms.enumerated() { await mailroom.post(ChatLine(text: "end \(index)")) }
        for (index, stream) in streams.enumerated() {
            let heard = try await stream.first(6).map(\.text)
            #expect(heard.filter { $0 == "from \(index)" }.count == 1, "its own, posted here, once: \(heard)")
            #expect(Set(heard) == ["from 0", "from 1", "from 2", "end 0", "end 1", "end 2"], "\(heard)")
        }
        // A relay counts what it receives before delivering it.
        for (index, relay) in relays.enumerated() {
            #expect(relay.counters.received == 4, "relay \(index) received only the others' mail")
        }
    }

    @Test("mail from an object sender, and mail of unregistered types, stays local", arguments: Engine.all)
    func localStaysLocal(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let (here, there) = (Mailroom(), Mailroom())
        let relay = try engine.makeRelay(here, place, Settings())
        try await start(relay)
        try await start(engine.makeRelay(there, place, Settings()))
        let heard = await there.subscribe(to: ChatLine.self)
        let speaker = Speaker()
        await here.post(ChatLine(text: "from an object"), from: speaker)
        await here.post(LocalNote(text: "never registered"))
        await here.post(ChatLine(text: "marker"))
        try await relay.flush()
        #expect(try await heard.first(1).map(\.text) == ["marker"], "the marker alone crossed")
        #expect(relay.counters.published == 1)
    }

    @Test(
        "three concurrent writers: every process reads every mail, each writer's in order, all in one order",
        arguments: Engine.all
    )
    func oneOrder(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let writers = [Mailroom(), Mailroom(), Mailroom()]
        let readers = [Mailroom(), Mailroom()]
        for mailroom in writers + readers { try await start(engine.makeRelay(mailroom, place, Settings())) }
        var heard: [AsyncStream<ChatLine>] = []
        for reader in readers { heard.append(await reader.subscribe(to: ChatLine.self)) }
        let perWriter = 100
        await withTaskGroup(of: Void.self) { group in
            for (index, writer) in writers.enumerated() {
                group.addTask {
                    for number in 0..<perWriter { await writer.post(ChatLine(text: "\(index).\(number)")) }
                }
            }
        }
        var orders: [[String]] = []
        for stream in heard { orders.append(try await stream.first(3 * perWriter).map(\.text)) }
        #expect(orders[0] == orders[1], "every reader hears one order")
        for index in 0..<3 {
            let own = orders[0].filter { $0.hasPrefix("\(index).") }
            #expect(own == (0..<perWriter).map { "\(index).\($0)" }, "writer \(index)'s mail in its order")
        }
    }

    @Test(
        "with a key, mail signed with another key is rejected, counted and reported, never delivered",
        arguments: Engine.all
    )
    func signatures(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let key = try RelayKey(Array(repeating: UInt8(7), count: 32))
        let other = try RelayKey(Array(repeating: UInt8(9), count: 32))
        let (signed, forger, listener) = (Mailroom(), Mailroom(), Mailroom())
        try await start(engine.makeRelay(signed, place, Settings(key: key)))
        let forging = try engine.makeRelay(forger, place, Settings(key: other))
        try await start(forging)
        let listening = try engine.makeRelay(listener, place, Settings(key: key))
        let events = listening.events()
        try await start(listening)
        let heard = await listener.subscribe(to: ChatLine.self)
        await forger.post(ChatLine(text: "forged"))
        try await forging.flush()
        try await withTimeout {
            for await event in events where event.code == .rejected { return }
        }
        await signed.post(ChatLine(text: "genuine"))
        #expect(try await heard.first(1).map(\.text) == ["genuine"], "the forged mail never arrived")
        #expect(listening.counters.rejected == 1)
        #expect(listening.counters.missing == 0, "rejected, not also reported lost")
    }

    @Test("flush returns once the mail is stored: the counters say it is published", arguments: Engine.all)
    func flushPublishes(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let mailroom = Mailroom()
        let relay = try engine.makeRelay(mailroom, place, Settings())
        await #expect(throws: RelayError.notRunning) { try await relay.flush() }
        try await start(relay)
        for number in 0..<20 { await mailroom.post(ChatLine(text: "\(number)")) }
        try await relay.flush()
        #expect(relay.counters.published == 20)
        #expect(relay.counters.queued == 20)
    }

    @Test("shared positions: a client resumes in another process with nothing lost or repeated", arguments: Engine.all)
    func sharedPositions(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let settings = Settings(sharedPositions: true)
        let lobby = RoomID(name: "lobby")
        let first = Mailroom()
        await first.retainHistory(ChatLine.self, count: 100)
        try await start(engine.makeRelay(first, place, settings))
        let resumption = try await first.subscribe(to: ChatLine.self, from: .only(lobby), after: nil)
        for number in 0..<5 { await first.post(ChatLine(text: "\(number)"), from: lobby) }
        let heard = try await resumption.mail.first(5)
        #expect(heard.map(\.mail.text) == ["0", "1", "2", "3", "4"])
        let position = heard[2].position

        // Another process, started after: its history comes from the shared store.
        let second = Mailroom()
        await second.retainHistory(ChatLine.self, count: 100)
        try await start(engine.makeRelay(second, place, settings))
        await first.post(ChatLine(text: "5"), from: lobby)
        let resumed = try await second.subscribe(to: ChatLine.self, from: .only(lobby), after: position)
        #expect(resumed.gap == nil)
        let rest = try await resumed.mail.first(3)
        #expect(rest.map(\.mail.text) == ["3", "4", "5"], "after the position, once each")
    }

    @Test(
        "mail the retention deleted before a running relay read it is reported as the next row is read, exactly",
        arguments: Engine.all
    )
    func lossWhileRunning(engine: Engine) async throws {
        let place = try engine.makePlace(#function)
        let settings = Settings(sharedPositions: true)
        let lobby = RoomID(name: "lobby")
        let (here, there) = (Mailroom(), Mailroom())
        for mailroom in [here, there] { await mailroom.retainHistory(ChatLine.self, count: 100) }
        try await start(engine.makeRelay(here, place, settings))
        let listening = try engine.makeRelay(there, place, settings)
        let events = listening.events()
        try await start(listening)
        let heard = try await there.subscribe(to: ChatLine.self, from: .only(lobby), after: nil)
        await here.post(ChatLine(text: "seen"), from: lobby)
        #expect(try await heard.mail.first(1).map(\.mail.text) == ["seen"])

        // Three mails written and deleted while the relay was between two reads.
        try await engine.loseUnread(place, 3)
        await here.post(ChatLine(text: "after"), from: lobby)
        let expired: RelayEvent? = try await withTimeout {
            for await event in events where event.code == .expired { return event }
            return nil
        }
        #expect(expired == .expired(mails: 3))
        #expect(listening.counters.missing == 3)
        #expect(try await heard.mail.first(1).map(\.mail.text) == ["after"], "the mail after the loss still arrives")
    }
}
