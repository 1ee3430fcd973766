import AsyncMail
import AsyncMailPostgres
import AsyncMailTesting
import Foundation
import MetricsTestKit
import PostgresNIO
import Testing

/// A relay with presence on `channel`, whose instances expire after `expiry`.
private func presenceRelay(
    on channel: RelayChannel,
    expiry: Duration = .seconds(60),
    key: RelayKey? = nil,
    metrics: TestMetrics? = nil
) throws -> PostgresRelay {
    try makeRelay(Mailroom(), on: channel) { configuration in
        configuration.presence = .init(expiry: expiry)
        configuration.authenticationKey = key
        configuration.metricsFactory = metrics
    }
}

/// The keys `relay` lists in `topic`, sorted.
private func keys(_ relay: PostgresRelay, _ topic: String = "lobby") -> [String] {
    relay.presence(in: topic).map(\.key).sorted()
}

/// Writes an entry as another instance would, or as anyone who can write the table can.
private func forge(
    _ key: String,
    in topic: String = "lobby",
    instance: String,
    meta: String = "{}",
    signature: String = "",
    on channel: RelayChannel,
    beating: Bool = true
) async throws {
    if beating {
        try await Database.execute(
            """
            INSERT INTO asyncmail_presence_instances (channel, instance) VALUES (\(channel.name), \(instance))
            ON CONFLICT (channel, instance) DO UPDATE SET beat = now()
            """
        )
    }
    try await Database.execute(
        """
        INSERT INTO asyncmail_presence (channel, instance, topic, key, meta, signature)
        VALUES (\(channel.name), \(instance), \(topic), \(key), \(meta), \(signature))
        """
    )
    try await Database.execute("SELECT pg_notify(\(channel.name + "_presence"), \(topic))")
}

/// A consumer of a topic's changes, as an application keeps its member list: every diff applied.
private final class Follower: Sendable {
    private let state = Locked<(members: Set<PresenceEntry>, diffs: Int, doubled: [PresenceEntry])>(([], 0, []))
    private let task: Task<Void, Never>

    init(_ changes: PresenceChanges) {
        let state = self.state
        task = Task {
            for await diff in changes {
                state.withLock { state in
                    state.diffs += 1
                    state.members.subtract(diff.leaves)
                    state.doubled += diff.joins.filter { state.members.contains($0) }
                    state.members.formUnion(diff.joins)
                }
            }
        }
    }

    deinit { task.cancel() }

    var members: Set<PresenceEntry> { state.withLock { $0.members } }
    var keys: [String] { members.map(\.key).sorted() }
    var diffs: Int { state.withLock { $0.diffs } }
    /// Entries that joined while listed: a double count.
    var doubled: [PresenceEntry] { state.withLock { $0.doubled } }
}

extension RelayTests {
    // MARK: Presence

    @Test("presence: entries tracked on two instances are listed on both, with diffs, and leave on both")
    func presenceAcrossInstances() async throws {
        let channel = try freshChannel()
        let (a, b) = (try presenceRelay(on: channel), try presenceRelay(on: channel))
        let follower = Follower(b.presenceChanges(in: "lobby"))
        try await waitUntil("the first diff, the whole list, came") { follower.diffs == 1 }
        #expect(follower.members.isEmpty)
        try await start(a)
        try await start(b)
        try a.track("ann", in: "lobby", meta: ["name": "Ann"])
        try a.track("al", in: "kitchen")
        try b.track("bob", in: "lobby")
        #expect(keys(b) == ["bob"], "an instance lists its own entry at once")

        try await waitUntil("B's diffs bring A's entry") { follower.keys == ["ann", "bob"] }
        #expect(follower.members.contains(PresenceEntry(key: "ann", meta: ["name": "Ann"], instance: a.origin)))
        try await waitUntil("A lists B's entry") { keys(a) == ["ann", "bob"] }
        // Each topic is read on its own notification, so B's kitchen may come after its lobby.
        try await waitUntil("B lists A's kitchen") { keys(b, "kitchen") == ["al"] }
        #expect(keys(a, "kitchen") == ["al"] && keys(b) == ["ann", "bob"], "topics are apart")

        try a.track("ann", in: "lobby", meta: ["name": "Ann B."])
        try await waitUntil("B has the new metadata") {
            b.presence(in: "lobby").first { $0.key == "ann" }?.meta == ["name": "Ann B."]
        }
        a.untrack("ann", in: "lobby")
        try await waitUntil("B's diffs bring A's leave") { follower.keys == ["bob"] }
        #expect(follower.doubled.isEmpty)
        b.untrack("bob", in: "lobby")
        try await waitUntil("A sees B's leave") { keys(a).isEmpty }
        // A reading is counted just after it is listed.
        try await waitUntil("A counted its last reading") { a.counters.presenceLeaves >= 3 }
        #expect(a.counters.presenceJoins == 4, "A: its own two, the new metadata, and bob")
        #expect(a.counters.presenceLeaves == 3, "A: the old metadata, its untrack, and bob")
        #expect(a.counters.rejected == 0 && b.counters.rejected == 0)
    }

    @Test("presence: an instance that stops cleanly is removed from every list at once, long before the expiry")
    func presenceCleanStop() async throws {
        let channel = try freshChannel()
        let (a, b) = (try presenceRelay(on: channel, expiry: .seconds(600)), try presenceRelay(on: channel))
        let runningA = try await start(a)
        try await start(b)
        let events = EventLog(b)
        for key in ["one", "two", "three"] { try a.track(key, in: "lobby") }
        try await waitUntil("B lists A's entries") { keys(b).count == 3 }
        try await stop(runningA)
        #expect(keys(a) == ["one", "three", "two"], "a stopped relay lists only its own entries")
        try await waitUntil("B no longer lists them", within: .seconds(60)) { keys(b).isEmpty }
        #expect(events.count { $0.code == .presenceExpired } == 0, "removed by A itself, not by expiry")
        let rows = try await Database.values(
            "SELECT count(*) FROM asyncmail_presence WHERE channel = \(channel.name)",
            as: Int64.self
        )
        #expect(rows == [0])
    }

    @Test("presence: an instance that stops beating is removed from every list after the expiry, and reported")
    func presenceExpiry() async throws {
        let channel = try freshChannel()
        let b = try presenceRelay(on: channel, expiry: .milliseconds(1_500))
        let events = b.events()
        try await start(b)
        try b.track("alive", in: "lobby")
        let started = ContinuousClock.now
        // An instance that wrote two entries and a heartbeat, then died.
        try await forge("ghost 1", instance: "dead-instance", on: channel)
        try await forge("ghost 2", instance: "dead-instance", on: channel)
        try await waitUntil("B lists the dead instance's entries") { keys(b).count == 3 }
        try await awaitEvents(1, from: events) { $0.code == .presenceExpired && $0.entries == 2 }
        #expect(ContinuousClock.now - started >= .milliseconds(1_100), "not before the expiry, less two heartbeats")
        try await waitUntil("its entries are gone; B's own stay, its heartbeat being current") { keys(b) == ["alive"] }
        #expect(b.counters.presenceExpired == 1)
        #expect(RelayEvent.presenceExpired(instance: "dead-instance", entries: 2).entries == 2)
    }

    @Test("presence: lost connections and a database restart neither lose a change nor count an entry twice")
    func presenceThroughReconnects() async throws {
        let channel = try freshChannel()
        let (a, b) = (try presenceRelay(on: channel), try presenceRelay(on: channel))
        try await start(a)
        try await start(b)
        let events = b.events()
        try a.track("a1", in: "lobby")
        try a.track("a2", in: "lobby")
        try b.track("b1", in: "lobby")
        try await waitUntil("both list three") { keys(a).count == 3 && keys(b).count == 3 }
        let follower = Follower(b.presenceChanges(in: "lobby"))

        // B loses its connections; A changes its entries meanwhile.
        try await Database.terminate(b.applicationName)
        try await awaitEvents(1, from: events) { $0.code == .disconnected }
        a.untrack("a1", in: "lobby")
        try a.track("a3", in: "lobby")
        try await waitUntil("B's diffs bring what changed while it was away") { follower.keys == ["a2", "a3", "b1"] }
        try await waitUntil("A lists B's entry again, once") { keys(a) == ["a2", "a3", "b1"] }

        // A loses its connections: its entries are written again, not twice.
        try await Database.terminate(a.applicationName)
        try a.track("a4", in: "lobby")
        try await waitUntil("B's diffs bring A's new entry") { follower.keys == ["a2", "a3", "a4", "b1"] }
        let rows = try await Database.values(
            "SELECT count(*) FROM asyncmail_presence WHERE channel = \(channel.name)",
            as: Int64.self
        )
        #expect(rows == [4], "one row per entry")

        if Database.control != nil {
            try await Database.control("restart")
            b.untrack("b1", in: "lobby")
            try await waitUntil("A hears B's leave made across the restart", within: .seconds(60)) {
                keys(a) == ["a2", "a3", "a4"]
            }
            try await waitUntil("B's own leave is in its diffs") { follower.keys == ["a2", "a3", "a4"] }
        }
        #expect(follower.doubled.isEmpty, "no entry joined twice")
        #expect(keys(b) == keys(a))
    }

    @Test("presence: rows and notifications that are not what a relay writes are rejected, counted and not listed")
    func presenceUntrusted() async throws {
        let channel = try freshChannel()
        let key = try RelayKey(Array(repeating: UInt8(7), count: 32))
        let (a, b) = (try presenceRelay(on: channel, key: key), try presenceRelay(on: channel, key: key))
        try await start(a)
        try await start(b)
        try a.track("signed", in: "lobby", meta: ["role": "member"])
        try await waitUntil("a signed entry is listed") { keys(b) == ["signed"] }

        try await forge("unsigned", instance: "forger", on: channel)
        try await forge("bad signature", instance: "forger", signature: String(repeating: "A", count: 44), on: channel)
        try await forge("big", instance: "forger", meta: String(repeating: "x", count: 5_000), on: channel)
        try await forge("not json", instance: "forger", meta: "[1, 2]", on: channel)
        try await forge(String(repeating: "k", count: 300), instance: "forger", on: channel)
        try await Database.execute(
            "SELECT pg_notify(\(channel.name + "_presence"), \(String(repeating: "t", count: 300)))"
        )
        try await Database.execute("SELECT pg_notify(\(channel.name + "_presence"), '')")
        // Each row is rejected at every reading of the topic; at least once each, and the two
        // notifications once.
        try await waitUntil("every forgery rejected") { b.counters.rejected >= 7 }
        #expect(keys(b) == ["signed"], "only the genuine entry is listed")
        #expect(b.presence(in: "lobby").first?.meta == ["role": "member"])
    }

    @Test("presence: the relay's metrics count joins, leaves, expired instances and the entries listed")
    func presenceMetrics() async throws {
        let channel = try freshChannel()
        let metrics = TestMetrics()
        let b = try presenceRelay(on: channel, expiry: .milliseconds(1_000), metrics: metrics)
        try await start(b)
        try b.track("here", in: "lobby")
        try await forge("gone soon", instance: "dead-instance", on: channel)
        try await waitUntil("the instance expired") { b.counters.presenceExpired == 1 }
        b.untrack("here", in: "lobby")
        let dimensions = [("messaging.system", "asyncmail-postgres"), ("messaging.destination.name", channel.name)]
        // The gauge is set just after the counters move.
        try await waitUntil("the metrics follow the counters") {
            (try? metrics.expectCounter("asyncmail.relay.presence.leaves", dimensions))?.totalValue == 2
                && (try? metrics.expectGauge("asyncmail.relay.presence.entries", dimensions))?.lastValue == 0
        }
        #expect(try metrics.expectCounter("asyncmail.relay.presence.joins", dimensions).totalValue == 2)
        #expect(try metrics.expectCounter("asyncmail.relay.presence.expired_instances", dimensions).totalValue == 1)
        #expect(try metrics.expectGauge("asyncmail.relay.presence.entries", dimensions).lastValue == 0)
    }

    @Test("presence: asked for where it cannot be had, a clear error that says what to do")
    func presenceMisuse() throws {
        let channel = try freshChannel()
        let off = try makeRelay(Mailroom(), on: channel)
        #expect(
            throws: RelayConfigurationError.presenceUnavailable(reason: "presence is off; set Configuration.presence")
        ) {
            try off.track("k", in: "t")
        }
        #expect(throws: RelayConfigurationError.self) {
            try makeRelay(Mailroom(), on: channel) { $0.presence = .init(expiry: .milliseconds(900)) }
        }
        let on = try presenceRelay(on: channel)
        for (key, topic, meta) in [
            ("", "t", [:]), ("k", String(repeating: "t", count: 257), [:]), ("k\u{0}", "t", [:]),
            ("k", "t", ["m": String(repeating: "m", count: 5_000)]),
        ] as [(String, String, [String: String])] {
            #expect(throws: RelayConfigurationError.self) { try on.track(key, in: topic, meta: meta) }
        }
        #expect(on.presence(in: "t").isEmpty)
        let error = RelayConfigurationError.presenceUnavailable(reason: "why")
        #expect(error.code == .presenceUnavailable && error.description.contains("why"))
    }
}
