import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import Foundation
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire
import Testing

@testable import AsyncMailPostgres

extension RelayTests {
    // MARK: Untrusted input

    @Test("ephemeral, with a key: a forged NOTIFY is rejected and counted, never delivered")
    func forgedNotify() async throws {
        let channel = try freshChannel()
        let key = try RelayKey(Array("a fleet's shared secret, 32+ bytes".utf8))
        let (here, there) = (Mailroom(), Mailroom())
        let sender = try makeRelay(here, on: channel, mode: .ephemeral) { $0.authenticationKey = key }
        let receiver = try makeRelay(there, on: channel, mode: .ephemeral) { $0.authenticationKey = key }
        try await start(sender)
        try await start(receiver)
        let events = receiver.events()
        let lines = await there.subscribe(to: ChatLine.self)
        try await Database.notify(on: channel, #"{"o":"fake","n":1,"t":"chat.line","c":1,"m":[{"text":"forged"}]}"#)
        let wrongKey = try RelayKey(Array(repeating: 1, count: 32))
        try await Database.notify(
            on: channel,
            wrongKey.signer.sign(#"{"o":"fake","n":2,"t":"chat.line","c":1,"m":[{"text":"forged too"}]}"#)
        )
        try await awaitEvents(2, from: events) { $0.code == .rejected }
        await here.post(ChatLine(text: "signed"))
        #expect(try await first(1, of: lines).map(\.text) == ["signed"])
        #expect(receiver.counters.rejected == 2)
        #expect(receiver.counters.received == 1)
    }

    @Test(
        "durable: mail the retention deleted before a reader got to it is reported with its exact count",
        .timeLimit(.minutes(2))
    )
    func durableGapAfterRetention() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let writer = try makeRelay(here, on: channel)
        let runningWriter = try await start(writer)  // the table exists from here on
        // The reader runs under a role of its own, so that it can be kept from the database.
        let role = "asyncmail_reader_\(UInt32.random(in: 0...UInt32.max))"
        try await Database.execute(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN"))
        try await Database.execute(
            PostgresQuery(unsafeSQL: "GRANT SELECT, INSERT, DELETE ON asyncmail_relay TO \(role)")
        )
        try await Database.execute(
            PostgresQuery(unsafeSQL: "GRANT USAGE ON SEQUENCE asyncmail_relay_id_seq TO \(role)")
        )
        try await Database.execute(
            PostgresQuery(unsafeSQL: "GRANT SELECT, INSERT, UPDATE, DELETE ON asyncmail_relay_counters TO \(role)")
        )
        var asReader = Database.configuration
        asReader.username = role
        let reader = try makeRelay(there, on: channel, connection: asReader)
        let events = reader.events()
        let runningReader = try await start(reader)
        let lines = await there.subscribe(to: ChatLine.self)
        await here.post(ChatLine(text: "before"))
        #expect(try await first(1, of: lines).map(\.text) == ["before"])

        try await Database.execute(PostgresQuery(unsafeSQL: "ALTER ROLE \(role) NOLOGIN"))
        try await Database.terminate(reader.applicationName)
        for number in 1...50 { await here.post(ChatLine(text: "lost \(number)")) }
        try await writer.flush()
        // As the retention clean-up deletes them, before the reader is back.
        try await Database.execute("DELETE FROM asyncmail_relay WHERE channel = \(channel.name)")
        try await Database.execute(PostgresQuery(unsafeSQL: "ALTER ROLE \(role) LOGIN"))

        // Reported as the reader comes back, though nobody posts again: the channel's numbering
        // says so, where the writer's own would wait for its next post.
        try await awaitEvents(1, from: events) { $0 == .expired(mails: 50) }
        #expect(reader.counters.missing == 50)
        await here.post(ChatLine(text: "after"))
        #expect(try await first(1, of: lines).map(\.text) == ["after"])
        #expect(reader.counters.missing == 50, "counted once: the writer's numbering does not count it again")
        try await stop(runningReader)
        try await stop(runningWriter)
        try await Database.execute(PostgresQuery(unsafeSQL: "DROP OWNED BY \(role)"))
        try await Database.execute(PostgresQuery(unsafeSQL: "DROP ROLE \(role)"))
    }

    // MARK: Start-up and the listening connection's edges

    @Test("a database out of reach at start-up: mail that cannot travel is never buffered; the bound holds")
    func unreachableAtStartup() async throws {
        // Nothing listens on port 1: every attempt is refused.
        let unreachable = PostgresConnection.Configuration(
            host: "127.0.0.1",
            port: 1,
            username: "postgres",
            password: nil,
            database: nil,
            tls: .disable
        )
        let mailroom = Mailroom()
        // With `.drop`, so that posts past the bound go on at once (by default they would wait).
        let relay = try makeRelay(mailroom, on: freshChannel(), connection: unreachable) {
            $0.outboundQueueLimit = 50
            $0.backpressure = .drop
        }
        let events = relay.events()
        let running = Task { try await relay.run() }
        try await awaitEvents(1, from: events) { $0.code == .disconnected }

        for number in 0..<5_000 {
            await mailroom.post(LocalNote(text: "\(number)"))
            await mailroom.post(ChatLine(text: "\(number)"), from: Speaker())
        }
        #expect(relay.tapCounts.admitted == 0, "unregistered types and object senders are never buffered")

        for number in 0..<5_000 { await mailroom.post(ChatLine(text: "\(number)")) }
        // Every post not queued is reported. (Counted after the loop hands a mail on, so this
        // waits on the counters themselves, not on the tap's progress.)
        try await waitUntil("every post counted") { relay.counters.queued + relay.counters.queueOverflow == 5_000 }
        #expect(relay.counters.queued <= 50, "the outbound queue holds at most its limit")
        #expect(relay.tapCounts.lost == relay.counters.queueOverflow)
        running.cancel()
        _ = try? await withTimeout { try await running.value }
    }

    @Test("a connection lost during table set-up is retried, not fatal", .timeLimit(.minutes(1)))
    func setupConnectionLost() async throws {
        // Holding the set-up lock parks the relay inside set-up, where its connection is then cut.
        // Taken before the relay starts: otherwise a relay quick to connect could finish its
        // set-up first, and then nothing would ever wait for the lock.
        let holder = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 96,
            logger: Database.logger
        )
        try await holder.query("SELECT pg_advisory_lock(hashtext('asyncmail-relay-setup'))", logger: Database.logger)
        let relay = try makeRelay(Mailroom(), on: freshChannel())
        let events = relay.events()
        let running = Task { try await relay.run() }
        do {
            // This suite runs one test at a time, so the one session waiting is this relay's.
            try await waitUntil("set-up waits for the lock") { try await Database.advisoryLockWaiters() == 1 }
            try await Database.terminate(relay.applicationName)
            try await awaitEvents(1, from: events) { $0.code == .disconnected }
            try await holder.query(
                "SELECT pg_advisory_unlock(hashtext('asyncmail-relay-setup'))",
                logger: Database.logger
            )
            try await awaitEvents(1, from: events) { $0 == .listening }
        } catch {
            Issue.record(error)
        }
        try await holder.close()
        running.cancel()
        try await withTimeout { try await running.value }
    }

    @Test("a retention clean-up that hangs has a deadline: the connection is replaced", .timeLimit(.minutes(2)))
    func retentionDeadline() async throws {
        let channel = try freshChannel()
        let relay = try makeRelay(Mailroom(), on: channel)
        try await stop(try await start(relay))  // the table exists
        // An expired row, locked by an open transaction: the clean-up's DELETE waits on it.
        try await Database.execute(
            "INSERT INTO asyncmail_relay (channel, payload, created_at) VALUES (\(channel.name), '{}', now() - interval '2 days')"
        )
        let holder = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 95,
            logger: Database.logger
        )
        try await holder.query("BEGIN", logger: Database.logger)
        try await holder.query(
            "SELECT id FROM asyncmail_relay WHERE channel = \(channel.name) FOR UPDATE",
            logger: Database.logger
        )
        let again = try makeRelay(Mailroom(), on: channel)
        let events = again.events()
        do {
            let running = try await start(again)
            // The event comes at the call deadline, 5 s here: the guard is ten times that and more.
            try await awaitEvents(1, from: events, within: .seconds(60)) { event in
                event.code == .disconnected && event.reason?.contains("retention") == true
            }
            try await stop(running)
        } catch {
            Issue.record(error)
        }
        try await holder.query("ROLLBACK", logger: Database.logger)
        try await holder.close()
    }

    // MARK: Flush

    @Test("flush: not running is an error; returns once published; says what was given up since the last")
    func flushOutcomes() async throws {
        let mailroom = Mailroom()
        let relay = try makeRelay(mailroom, on: freshChannel()) { $0.maximumMailBytes = 300 }
        await #expect(throws: RelayError.notRunning) { try await relay.flush() }
        let running = try await start(relay)
        for number in 1...20 { await mailroom.post(ChatLine(text: "\(number)")) }
        try await relay.flush()
        #expect(relay.counters.published == 20)
        await mailroom.post(ChatLine(text: String(repeating: "x", count: 1_000)))  // too large: stays local
        await mailroom.post(ChatLine(text: "fits"))
        await #expect(throws: RelayError.notRelayed(mails: 1)) { try await relay.flush() }
        try await relay.flush()  // nothing given up since the last flush
        #expect(relay.counters.published == 21)
        try await stop(running)
        await #expect(throws: RelayError.notRunning) { try await relay.flush() }
    }

    @Test("a process killed right after flush() returned lost none of what it flushed", .timeLimit(.minutes(2)))
    func flushSurvivesSIGKILL() async throws {
        let channel = try freshChannel()
        let here = Mailroom()
        try await start(makeRelay(here, on: channel))
        let lobby = await here.subscribe(to: ChatLine.self, from: .only(RoomID(name: "lobby")))

        let (process, output) = try RelayPeer.launch(
            ["talk", "2000"],
            on: channel,
            environment: ["RELAY_PEER_HANG": "1"]
        )
        defer { if process.isRunning { process.terminate() } }
        #expect(try await first(2, of: output) == ["listening", "flushed"])
        kill(process.processIdentifier, SIGKILL)
        try await waitUntil("the killed peer is gone") { !process.isRunning }

        let heard = try await first(2_000, of: lobby)
        #expect(heard.count == 2_000)
        #expect(Set(heard.map(\.text)).count == 2_000, "each line once")
    }
}
