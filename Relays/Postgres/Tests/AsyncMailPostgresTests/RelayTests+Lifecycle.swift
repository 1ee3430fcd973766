import AsyncMail
import AsyncMailPostgres
import Foundation
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

extension RelayTests {
    // MARK: Lifecycle

    @Test("cancellation leaves no backend behind")
    func noBackendLeft() async throws {
        let channel = try freshChannel()
        let here = Mailroom()
        let relay = try makeRelay(here, on: channel)
        let running = try await start(relay)
        await here.post(ChatLine(text: "opens the publisher's connection"))
        try await waitUntil("the post is published") { relay.counters.published == 1 }
        // The listener's and the publisher's; the set-up connection's backend, closed before the
        // relay listened, may take a moment to leave the server's list under load.
        try await waitUntil("two backends") { try await Database.backends(named: relay.applicationName) == 2 }
        try await stop(running)
        try await waitUntil("its backends are gone") { try await Database.backends(named: relay.applicationName) == 0 }
    }

    @Test("cancelled with a publish in flight: it waits for the answer, and what committed is counted as published")
    func cancelledMidPublish() async throws {
        let channel = try freshChannel()
        let here = Mailroom()
        let relay = try makeRelay(here, on: channel)
        let events = EventLog(relay)
        let running = try await start(relay)
        // Holding the channel's advisory lock keeps the publisher's statement waiting for its answer.
        let blocker = try await PostgresConnection.connect(
            configuration: Database.configuration,
            id: 94,
            logger: Database.logger
        )
        try await blocker.query("SELECT pg_advisory_lock(hashtext(\(channel.name)))", logger: Database.logger)
        await here.post(ChatLine(text: "in flight"))
        try await waitUntil("the publisher waits for the lock") { try await Database.advisoryLockWaiters() == 1 }
        running.cancel()  // while the statement is sent and unanswered
        try await blocker.query("SELECT pg_advisory_unlock(hashtext(\(channel.name)))", logger: Database.logger)
        try await blocker.close()
        try await stop(running)
        await events.watcher.value  // the relay has stopped, so its events have ended
        #expect(try await Database.payloads(on: channel).count == 1, "the statement committed")
        #expect(relay.counters.published == 1)
        #expect(relay.counters.publishFailures == 0)
        #expect(!events.all.contains { $0.code == .publishFailed })
    }

    @Test("the fixture stops every relay a test started, even when the test throws before stopping them")
    func fixtureStopsRelaysOnThrow() async throws {
        struct Thrown: Error {}
        let channel = try freshChannel()
        let relay = try makeRelay(Mailroom(), on: channel)
        let test = try #require(Test.current)
        await #expect(throws: Thrown.self) {
            try await StopsRelays().provideScope(for: test, testCase: Test.Case.current) {
                _ = try await start(relay)
                // The set-up connection is closed by now, but its server process can take a moment
                // to leave pg_stat_activity.
                try await waitUntil("only the listener is connected") {
                    try await Database.backends(named: relay.applicationName) == 1
                }
                throw Thrown()
            }
        }
        // A relay left running would keep its listener's backend for good; a stopped one's server
        // processes leave pg_stat_activity a moment after its connections are closed.
        try await waitUntil("stopped before the scope ended: no backend left") {
            try await Database.backends(named: relay.applicationName) == 0
        }
    }

    @Test("a graceful shutdown publishes everything queued before it returns")
    func gracefulShutdownFlushes() async throws {
        let channel = try freshChannel()
        let (here, there) = (Mailroom(), Mailroom())
        try await start(makeRelay(there, on: channel))
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
        try await waitUntil("no backend left") { try await Database.backends(named: sendingRelay.applicationName) == 0 }
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

    @Test("the tables made beforehand with the article's SQL serve a role that may not create tables, presence too")
    func documentedMigration() async throws {
        let article = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/AsyncMailPostgres/AsyncMailPostgres.docc/AcrossProcessesAndMachines.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let blocks = text.components(separatedBy: "```sql").dropFirst()
        try #require(blocks.count == 2, "the article has two SQL blocks: the relay's tables, and presence's")
        let sql = blocks.map { $0.components(separatedBy: "```")[0] }.joined(separator: "\n")
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
        // A connection dropped unclosed traps: closed on every way out.
        do {
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
                "GRANT SELECT, INSERT, UPDATE, DELETE ON asyncmail_relay_counters TO \(role)",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON asyncmail_presence TO \(role)",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON asyncmail_presence_instances TO \(role)",
            ] {
                try await admin.query(PostgresQuery(unsafeSQL: grant), logger: Database.logger)
            }
            var restricted = Database.configuration
            restricted.username = role
            restricted.options.additionalStartupParameters.append(("search_path", schema))
            let channel = try freshChannel()
            let relays = try [Mailroom(), Mailroom()].map { mailroom in
                try makeRelay(mailroom, on: channel, connection: restricted) { $0.presence = .init() }
            }
            let running = [try await start(relays[0]), try await start(relays[1])]
            let lines = await relays[1].mailroom.subscribe(to: ChatLine.self)
            await relays[0].mailroom.post(ChatLine(text: "through the migrated table"))
            #expect(try await first(1, of: lines).map(\.text) == ["through the migrated table"])
            try relays[0].track("here", in: "lobby")
            try await waitUntil("presence through the migrated tables") { relays[1].presence(in: "lobby").count == 1 }
            #expect(relays[0].counters.disconnects == 0 && relays[1].counters.disconnects == 0)
            for task in running { try await stop(task) }
            try await admin.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: Database.logger)
            try await admin.query("DROP ROLE \(unescaped: role)", logger: Database.logger)
        } catch {
            try? await admin.close()
            throw error
        }
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
            guard let error = error as? RelayError, error.code == .tableSetupFailed else { return false }
            return error.table == "asyncmail_relay_refused" && error.reason?.contains("permission denied") == true
        }
    }
}
