import AsyncMail
import AsyncMailTesting
import Foundation
import SQLiteNIO
import Testing

@testable import AsyncMailSQLite

extension SQLiteRelayTests {
    @Test(
        "hostile presence rows and changed topics in the file: rejected, counted and reported; the good entry still listed"
    )
    func hostilePresenceRows() async throws {
        try await withTemporaryFolder { folder in
            let relay = try SQLiteRelay(
                mailroom: Mailroom(),
                path: folder + "/relay.sqlite",
                configuration: .init(
                    checkInterval: .milliseconds(100),
                    presence: .init(expiry: .seconds(5)),
                    heartbeatInterval: .milliseconds(100)
                ),
                logger: logger
            )
            let task = try await running(relay)
            defer { task.cancel() }
            let joins = AsyncStream<PresenceEntry>.makeStream()
            let follower = Task {
                for await diff in relay.presenceChanges(in: "lobby") {
                    for entry in diff.joins { joins.continuation.yield(entry) }
                }
            }
            defer { follower.cancel() }
            let writer = try await #require(relay.databaseForTesting).openConnectionForTesting(logger: logger)
            // Another instance that beats far ahead, so no sweep removes it; its good entry, one
            // whose metadata is not JSON, one whose metadata is over 4,096 bytes; an instance whose
            // beat is text, which the sweep removes with its entry; and the log naming the lobby
            // and a topic that is not text.
            let future = SQLiteRelay.milliseconds() + 3_600_000
            // The presence loop writes too: take the lock as a relay does, without a busy handler.
            try await writer.writing {
                _ = try await writer.query(
                    "INSERT INTO asyncmail_relay_presence_instances (instance, beat) VALUES ('other', ?), ('stale', 'never')",
                    [.integer(Int(future))]
                )
                _ = try await writer.query(
                    """
                    INSERT INTO asyncmail_relay_presence (instance, topic, key, meta, signature) VALUES
                        ('other', 'lobby', 'good', '{"name":"Ann"}', ''),
                        ('other', 'lobby', 'not-json', 'not json', ''),
                        ('other', 'lobby', 'huge', ?, ''),
                        ('stale', 'lobby', 'gone', '{}', '')
                    """,
                    [.text("{\"a\":\"" + String(repeating: "x", count: 5_000) + "\"}")]
                )
                _ = try await writer.query(
                    "INSERT INTO asyncmail_relay_presence_changes (topic) VALUES ('lobby'), (x'00ff')"
                )
            }
            try await writer.close().get()
            // No nudge: the next heartbeat looks at the log.
            let joined = try await joins.stream.first(1)
            #expect(joined == [PresenceEntry(key: "good", meta: ["name": "Ann"], instance: "other")])
            #expect(relay.presence(in: "lobby") == joined)
            #expect(relay.counters.rejected == 3, "the topic that is not text, and the two bad rows")
        }
    }

    @Test("a presence expiry under five heartbeats, or no room for entries, is refused with the reason")
    func refusedPresence() throws {
        #expect(
            throws: RelayConfigurationError.presenceUnavailable(
                reason: "an expiry of 4.0 seconds is under five heartbeats of 1.0 seconds"
            )
        ) {
            try SQLiteRelay(
                mailroom: Mailroom(),
                path: "/tmp/x.sqlite",
                configuration: .init(presence: .init(expiry: .seconds(4)))
            )
        }
        #expect(throws: RelayConfigurationError.presenceUnavailable(reason: "maximumEntries of 0; use 1 or more")) {
            try SQLiteRelay(
                mailroom: Mailroom(),
                path: "/tmp/x.sqlite",
                configuration: .init(presence: .init(maximumEntries: 0))
            )
        }
        let relay = try SQLiteRelay(mailroom: Mailroom(), path: "/tmp/x.sqlite")
        #expect(
            throws: RelayConfigurationError.presenceUnavailable(reason: "presence is off; set Configuration.presence")
        ) {
            try relay.track("a", in: "lobby")
        }
    }
}
