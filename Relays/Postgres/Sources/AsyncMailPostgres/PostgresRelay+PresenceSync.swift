@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

// The presence loop: a connection of its own that listens for changed topics, and on which the
// shared `PresenceKeeper` writes this instance's entries and heartbeat, removes dead instances,
// and reads others' entries.
extension PostgresRelay {
    /// Keeps presence until cancelled, reconnecting with backoff.
    func keepPresence() async {
        guard configuration.presence != nil else { return }
        await reconnecting(what: "presence: ") { connection in try await self.keepPresence(on: connection) }
    }

    /// Removes this instance's entries at once, when it stops: tried on a connection of its own
    /// even when the relay was cancelled, within the call deadline.
    func leavePresence() async {
        guard configuration.presence != nil else { return }
        await Task {
            guard let connection = try? await self.connect() else { return }
            _ = try? await self.withDeadline(
                self.callDeadline,
                for: "removing this instance's presence",
                closing: connection,
                marking: Unanswered()
            ) { [presenceTable] in try await presenceTable.leave(on: connection) }
            await self.close(connection)
        }.value
        presence.end()
    }

    /// One connection's presence: set up, listen, then write and read until something fails.
    private func keepPresence(on connection: PostgresConnection) async throws {
        let store = Store(relay: self, connection: connection, unanswered: Unanswered())
        let wakes = presence.replica.startLoop()
        do {
            try await store.call("the presence tables' set-up") { [presenceTable] in
                try await presenceTable.setUp(on: connection)
            }
            try await Deadline.firstToEnd([
                {
                    try await connection.listen(on: self.presenceTable.notifications) { notifications in
                        // LISTEN is in place: every change from here on is announced, so the
                        // first reading, after it, leaves no window.
                        try await Deadline.firstToEnd([
                            {
                                for try await notification in notifications {
                                    self.presence.topicChanged(notification.payload)
                                }
                                throw ListenerEnded()
                            },
                            { try await self.presence.keep(store, wakes: wakes) },
                        ])
                    }
                },
                { try await self.presence.beat() },
            ])
        } catch {
            throw store.unanswered.noAnswer ?? error
        }
    }

    /// The presence tables on one connection, each call bounded by the call deadline.
    private struct Store: PresenceStore {
        let relay: PostgresRelay
        let connection: PostgresConnection
        let unanswered: Unanswered

        func write(
            _ writes: [PresenceWrite],
            removing removals: [PresenceReplica.Slot],
            whole: Bool
        ) async throws
            -> Bool
        {
            try await call("writing presence") { [relay, connection] in
                try await relay.presenceTable.write(writes, removing: removals, whole: whole, on: connection)
            }
        }

        func sweep(olderThan age: Duration) async throws -> [(instance: String, entries: Int)] {
            try await call("the presence sweep") { [relay, connection] in
                try await relay.presenceTable.sweep(olderThan: age, on: connection)
            }
        }

        func read(_ topic: String?, limit: Int) async throws -> [PresenceRecord.Columns] {
            try await call("reading presence") { [relay, connection] in
                try await relay.presenceTable.read(topic, limit: limit, on: connection)
            }
        }

        /// None: `NOTIFY` names each changed topic as it happens.
        func changedTopics() async throws -> [String]? { [] }

        func call<Result: Sendable>(
            _ what: String,
            _ body: @escaping @Sendable () async throws -> Result
        ) async throws -> Result {
            try await relay.withDeadline(relay.callDeadline, for: what, closing: connection, marking: unanswered, body)
        }
    }
}
