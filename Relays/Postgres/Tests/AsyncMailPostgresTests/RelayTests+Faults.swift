import AsyncMail
@_spi(AsyncMailRelay) import AsyncMailRelay
import AsyncMailTesting
import Foundation
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

@testable import AsyncMailPostgres

extension RelayTests {
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
        // In ephemeral mode the fault must lose something, or the accounting is not tested; on a
        // loaded machine the poster can stall through the whole reconnect and lose nothing, so
        // the stream is run again, up to three times, until a fault lands mid-stream.
        for attempt in 1...3 {
            let (receivingRelay, events) = try await streamThroughFault(
                mode: mode,
                named: "terminated\(mode == .ephemeral ? "e" : "d")\(attempt)"
            ) { receivingRelay in try await Database.terminate(receivingRelay.applicationName) }
            #expect(events.count { $0.code == .disconnected } >= 1)
            if mode != .ephemeral || receivingRelay.counters.missing > 0 { return }
        }
        Issue.record("terminating the listener lost nothing in 3 streams; the test proved nothing")
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
            try await waitUntil("every line heard or counted missing", within: accountingLimit) {
                heard.withLock { $0 } + receivingRelay.counters.missing == total
            }
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
        try await start(makeRelay(here, on: channel))
        try await start(makeRelay(there, on: channel))
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
        try await start(receivingRelay)
        try await start(makeRelay(here, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        // The listener's server process stops answering without closing anything: from the
        // relay's side, exactly a half-open connection.
        let pids = try await Database.pids(named: receivingRelay.applicationName)
        #expect(pids.count == 1)
        for pid in pids { kill(pid_t(pid), SIGSTOP) }
        defer { for pid in pids { kill(pid_t(pid), SIGCONT) } }
        await here.post(ChatLine(text: "while it hung"))
        try await waitUntil("the hung listener is replaced") {
            events.count { $0 == .listening } >= 2
                && events.count { $0.code == .disconnected } >= 1
        }
        #expect(try await first(1, of: lines).map(\.text) == ["while it hung"])
        #expect(events.all.contains { "\($0)".contains("no answer to a heartbeat") })
    }

    @Test("durable: a publish whose backend is terminated while it waits for the channel's lock is published again")
    func publishTerminatedWhileWaiting() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        let writer = try makeRelay(here, on: channel)
        let events = writer.events()
        try await start(writer)
        try await start(makeRelay(there, on: channel))
        let lines = await there.subscribe(to: ChatLine.self)
        let blocker = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 96,
            logger: Database.logger
        )
        do {
            try await blocker.query("SELECT pg_advisory_lock(hashtext(\(channel.name)))", logger: Database.logger)
            await here.post(ChatLine(text: "held"))
            try await waitUntil("the publisher waits for the lock") { try await Database.advisoryLockWaiters() == 1 }
            // Its statement was described, then fails: that once passed for success, and was lost.
            try await Database.terminate(writer.applicationName)
            try await awaitEvents(1, from: events) { $0.code == .publishFailed }
            try await blocker.query("SELECT pg_advisory_unlock(hashtext(\(channel.name)))", logger: Database.logger)
            #expect(try await first(1, of: lines).map(\.text) == ["held"])
            // Counted once the insert has answered, which the reader may beat.
            try await waitUntil("published once") { writer.counters.published == 1 }
            try await blocker.close()
        } catch {
            try? await blocker.close()
            throw error
        }
    }

    @Test("a call whose connection the server closes ends at once, even when the call itself never answers")
    func callOnClosedConnection() async throws {
        // As a postgres-nio call can, after the server terminates its connection (seen in about one
        // table set-up in ten): the body stays suspended, so only the connection's state can tell.
        let relay = try makeRelay(Mailroom(), on: freshChannel())
        var configuration = Database.configuration
        configuration.options.additionalStartupParameters.append(("application_name", relay.applicationName))
        let connection = try await PostgresConnection.connect(
            configuration: configuration,
            id: 93,
            logger: Database.logger
        )
        let call = Task {
            try await relay.withDeadline(.seconds(600), for: "a call", closing: connection, marking: Unanswered()) {
                try await Task.sleep(for: .seconds(3_600))
            }
        }
        try await Database.terminate(relay.applicationName)
        let outcome = try await withTimeout { await call.result }
        #expect(throws: ConnectionClosed.self) { try outcome.get() }
        call.cancel()
    }

    @Test(
        "rows older than the retention (durable) or the spill retention (ephemeral) are deleted, younger ones kept",
        arguments: [PostgresRelay.Mode.durable(retention: .seconds(3600)), .ephemeral]
    )
    func retention(mode: PostgresRelay.Mode) async throws {
        let channel = try freshChannel()
        let relay = try makeRelay(Mailroom(), on: channel, mode: mode)
        // The table exists once a relay has started; then age one row by two hours.
        try await start(relay)
        for text in ["old", "young"] {
            try await Database.execute(
                "INSERT INTO asyncmail_relay (channel, payload) VALUES (\(channel.name), \(text))"
            )
        }
        try await Database.execute(
            "UPDATE asyncmail_relay SET created_at = now() - interval '2 hours' WHERE channel = \(channel.name) AND payload = 'old'"
        )
        // The listener's first heartbeat cleans up.
        try await waitUntil("the old row is deleted") { try await Database.payloads(on: channel) == ["young"] }
    }
}
