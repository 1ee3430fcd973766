import AsyncMail
import Foundation
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

@testable import AsyncMailPostgres

extension RelayTests {
    // MARK: Bad input

    @Test("ephemeral: a post too large for one notification travels through the table, in order")
    func spillEphemeral() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sendingRelay = try makeRelay(here, on: channel, mode: .ephemeral) { $0.maximumMailBytes = 20_000 }
        let events = EventLog(sendingRelay)
        try await start(sendingRelay)
        let receivingRelay = try makeRelay(there, on: channel, mode: .ephemeral)
        try await start(receivingRelay)
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
        // The publisher counts once the database has answered, which can be after the receiver
        // has the mail.
        try await waitUntil("all 403 spilled") { sendingRelay.counters.spilled == 403 }
        #expect(sendingRelay.counters.oversize == 1)
        #expect(
            events.count {
                $0.code == .oversize && $0.wireName == "chat.line" && ($0.bytes ?? 0) > 30_000
            } == 1
        )
        #expect(try await Database.payloads(on: channel).count == 2)
        #expect(receivingRelay.counters.missing == 0)
    }

    @Test("durable: the maximum mail size is configurable, and a larger mail is reported")
    func oversizeDurable() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let sendingRelay = try makeRelay(here, on: channel) { $0.maximumMailBytes = 1_000 }
        try await start(sendingRelay)
        try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        await here.post(ChatLine(text: String(repeating: "x", count: 2_000)))
        await here.post(ChatLine(text: String(repeating: "z", count: 20_000)))  // fine in durable mode
        await here.post(ChatLine(text: "small"))
        #expect(try await first(1, of: lines).map(\.text) == ["small"])
        #expect(sendingRelay.counters.oversize == 2)
    }

    @Test("durable: past the 8,000-byte NOTIFY limit, mail still travels")
    func largeDurable() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        try await start(makeRelay(here, on: channel))
        try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        let large = String(repeating: "q", count: 50_000)
        await here.post(ChatLine(text: large))
        #expect(try await first(1, of: lines).map(\.text) == [large])
    }

    @Test("ephemeral: gaps are detected with their exact count, from posts, heartbeats and spilled rows gone")
    func gapDetection() async throws {
        let channel = try freshChannel()
        let there = Mailroom()
        let relay = try makeRelay(there, on: channel, mode: .ephemeral)
        let events = EventLog(relay)
        try await start(relay)
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
        let gaps: @Sendable () -> [Int] = {
            events.all.compactMap { event -> Int? in
                if event.code == .gap, event.origin == "fake" { return event.mails }
                return nil
            }
        }
        // The events reach the log on a task of its own: wait for them, not only for the mail
        // (under load the last gap was read before the log had it: [2, 3] for [2, 3, 3]).
        try await waitUntil("three gaps logged") { gaps().count >= 3 }
        #expect(gaps() == [2, 3, 3])
        #expect(relay.counters.missing == 8)
    }

    @Test("durable: a batch published again after a lost commit answer is delivered once")
    func durableRepeatDroppedOnce() async throws {
        let channel = try freshChannel()
        let there = Mailroom()
        let relay = try makeRelay(there, on: channel)
        try await start(relay)
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
    }

    @Test("unknown types and undecodable mail are counted and reported; the relay carries on")
    func unknownType() async throws {
        let channel = try freshChannel()
        let there = Mailroom()
        let relay = try makeRelay(there, on: channel, mode: .ephemeral)
        let events = EventLog(relay)
        try await start(relay)
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
    }

    @Test("a full outbound queue, with .drop, is reported, never silent")
    func queueOverflow() async throws {
        let channel = try freshChannel()
        let here = Mailroom()
        let relay = try makeRelay(here, on: channel) {
            $0.outboundQueueLimit = 3
            $0.backpressure = .drop
        }
        let log = EventLog(relay)
        try await start(relay)
        // Holding the channel's advisory lock keeps the publisher's first statement waiting: it
        // holds at most one batch (the queue's three at most) and three more wait in the queue or
        // between the tap and the queue, so at least one of ten posts is refused.
        let blocker = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 96,
            logger: Database.logger
        )
        do {
            try await blocker.query("SELECT pg_advisory_lock(hashtext(\(channel.name)))", logger: Database.logger)
            for number in 0..<10 { await here.post(ChatLine(text: "\(number)")) }
            try await waitUntil("all ten counted") { relay.counters.queued + relay.counters.queueOverflow == 10 }
            #expect(relay.counters.queueOverflow >= 1)
            try await waitUntil("every overflow is reported") {
                let reported = log.all.reduce(0) { sum, event in
                    event.code == .queueOverflow ? sum + (event.posts ?? 0) : sum
                }
                return reported == relay.counters.queueOverflow
            }
            try await blocker.query("SELECT pg_advisory_unlock(hashtext(\(channel.name)))", logger: Database.logger)
        } catch {
            Issue.record(error)
        }
        try await blocker.close()
    }

    @Test("a full outbound queue, by default, holds async posts until the publisher takes what waits: none lost")
    func queueBackpressure() async throws {
        let channel = try freshChannel()
        let here = Mailroom()
        let relay = try makeRelay(here, on: channel) { $0.outboundQueueLimit = 3 }
        try await start(relay)
        // The advisory lock keeps the publisher's first statement waiting, so the queue fills.
        let blocker = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 97,
            logger: Database.logger
        )
        do {
            try await blocker.query("SELECT pg_advisory_lock(hashtext(\(channel.name)))", logger: Database.logger)
            let posting = Task { for number in 0..<10 { await here.post(ChatLine(text: "\(number)")) } }
            try await waitUntil("a post waits for room") { relay.waitingPostsForTesting > 0 }
            try await blocker.query("SELECT pg_advisory_unlock(hashtext(\(channel.name)))", logger: Database.logger)
            await posting.value
            try await relay.flush()
            #expect(relay.counters.queueOverflow == 0)
            #expect(relay.counters.published == 10)
        } catch {
            Issue.record(error)
        }
        try await blocker.close()
    }
}
