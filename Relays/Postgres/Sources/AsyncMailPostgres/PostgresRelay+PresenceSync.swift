@_spi(AsyncMailRelay) import AsyncMailRelay
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

// The presence loop: a connection of its own that listens for changed topics, writes this
// instance's entries and heartbeat, removes dead instances, and reads others' entries.
extension PostgresRelay {
    /// Keeps presence until cancelled, reconnecting with backoff.
    func keepPresence() async {
        guard let settings = configuration.presence else { return }
        await reconnecting(what: "presence: ") { connection in try await self.keepPresence(settings, on: connection) }
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
        metrics.presenceEntries(0)
    }

    /// One connection's presence: set up, listen, then write and read until something fails.
    private func keepPresence(_ settings: Presence, on connection: PostgresConnection) async throws {
        let unanswered = Unanswered()
        let wakes = presence.startLoop()
        do {
            try await call("the presence tables' set-up", on: connection, unanswered) { [presenceTable] in
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
                                    self.presenceNotified(notification.payload)
                                }
                                throw ListenerEnded()
                            },
                            { try await self.work(settings, wakes, on: connection, unanswered) },
                        ])
                    }
                },
                {
                    var beats = 0
                    while true {
                        try await Task.sleep(for: self.configuration.heartbeatInterval)
                        beats += 1
                        // Now and then every topic again, in case a row changed without a word.
                        self.presence.beatLater(readingAll: beats % 60 == 0)
                    }
                },
            ])
        } catch {
            throw unanswered.noAnswer ?? error
        }
    }

    /// A notification's payload, untrusted: the name of a topic to read again.
    private func presenceNotified(_ payload: String) {
        if let problem = PresenceRecord.problem(with: payload, as: "topic") {
            report(.rejected(reason: "a presence notification naming \(problem)")) { $0.rejected += 1 }
        } else {
            presence.topicChanged(payload)
        }
    }

    /// Writes every entry, then does what each wake-up brings.
    private func work(
        _ settings: Presence,
        _ wakes: AsyncStream<Void>,
        on connection: PostgresConnection,
        _ unanswered: Unanswered
    ) async throws {
        var whole: [PresenceReplica.Slot: [String: String]]? = presence.beginSession()
        var wakeUps = wakes.makeAsyncIterator()
        while true {
            if let entries = whole {
                whole = nil
                _ = try await write(
                    entries.map { ($0.key, $0.value) },
                    removing: [],
                    whole: true,
                    connection,
                    unanswered
                )
            }
            let work = presence.takeWork()
            if !work.writes.isEmpty || work.beat {
                var writes: [(PresenceReplica.Slot, [String: String])] = []
                var removals: [PresenceReplica.Slot] = []
                for (slot, meta) in work.writes {
                    if let meta { writes.append((slot, meta)) } else { removals.append(slot) }
                }
                if try await write(writes, removing: removals, whole: false, connection, unanswered) {
                    // Another instance found this one dead and removed its rows: all of them again.
                    whole = presence.beginSession()
                    continue
                }
            }
            if work.beat {
                // Two heartbeats short of the expiry: a beat is up to one old when its instance
                // dies, and the sweep runs once a beat, so the entries go within the expiry.
                let age = settings.expiry - configuration.heartbeatInterval * 2
                let dead = try await call("the presence sweep", on: connection, unanswered) { [presenceTable] in
                    try await presenceTable.sweep(olderThan: age, on: connection)
                }
                for (instance, entries) in dead {
                    report(.presenceExpired(instance: instance, entries: entries)) { $0.presenceExpired += 1 }
                }
            }
            if work.readAll {
                try await readAll(settings, on: connection, unanswered)
            } else {
                for topic in work.topics { try await read(topic, on: connection, unanswered) }
            }
            guard await wakeUps.next() != nil else { throw CancellationError() }
        }
    }

    /// Writes rows and the heartbeat: true when this instance's heartbeat row was missing.
    private func write(
        _ entries: [(PresenceReplica.Slot, [String: String])],
        removing removals: [PresenceReplica.Slot],
        whole: Bool,
        _ connection: PostgresConnection,
        _ unanswered: Unanswered
    ) async throws -> Bool {
        let (channel, origin, signer) = (configuration.channel.name, origin, signer)
        let writes = entries.map { slot, meta in
            let json = PresenceRecord.json(of: meta)
            return PresenceTable.Write(
                topic: slot.topic,
                key: slot.key,
                meta: json,
                signature: PresenceRecord.signature(
                    channel: channel,
                    topic: slot.topic,
                    key: slot.key,
                    instance: origin,
                    meta: json,
                    signer: signer
                )
            )
        }
        return try await call("writing presence", on: connection, unanswered) { [presenceTable] in
            try await presenceTable.write(writes, removing: removals, whole: whole, on: connection)
        }
    }

    /// Reads one topic's rows of other instances, and takes them as the topic's.
    private func read(_ topic: String, on connection: PostgresConnection, _ unanswered: Unanswered) async throws {
        let room = presence.room(for: topic)
        let rows = try await call("reading presence", on: connection, unanswered) { [presenceTable] in
            try await presenceTable.read(topic, limit: room + 1, on: connection)
        }
        let entries = accept(rows, room: room)
        let diff = presence.replace(topic, with: entries.filter { $0.topic == topic }.map(\.entry))
        countPresence(diff)
    }

    /// Reads every topic's rows of other instances, and takes them as the whole.
    private func readAll(_ settings: Presence, on connection: PostgresConnection, _ unanswered: Unanswered) async throws
    {
        let limit = settings.maximumEntries
        let rows = try await call("reading presence", on: connection, unanswered) { [presenceTable] in
            try await presenceTable.read(nil, limit: limit + 1, on: connection)
        }
        var byTopic: [String: [PresenceEntry]] = [:]
        for (topic, entry) in accept(rows, room: limit) { byTopic[topic, default: []].append(entry) }
        let diffs = presence.replace(byTopic, all: true)
        countPresence(
            PresenceDiff(joins: diffs.values.flatMap(\.joins), leaves: diffs.values.flatMap(\.leaves))
        )
    }

    /// The rows that pass every check, at most `room` of them; the others are rejected, counted
    /// and reported.
    private func accept(_ rows: [PresenceRecord.Columns], room: Int) -> [(topic: String, entry: PresenceEntry)] {
        var accepted: [(topic: String, entry: PresenceEntry)] = []
        for row in rows.prefix(room) {
            switch PresenceRecord.decode(row, channel: configuration.channel.name, signer: signer) {
            case .success(let record):
                accepted.append(
                    (record.topic, PresenceEntry(key: record.key, meta: record.meta, instance: record.instance))
                )
            case .failure(let rejection):
                report(.rejected(reason: rejection.reason)) { $0.rejected += 1 }
            }
        }
        if rows.count > room {
            let limit = presence.limit
            report(
                .rejected(
                    reason: "presence holds more than \(limit) entries of other instances; the rest are not listed"
                )
            ) {
                $0.rejected += 1
            }
        }
        return accepted
    }

    /// One call on the presence connection, bounded by the call deadline.
    private func call<Result: Sendable>(
        _ what: String,
        on connection: PostgresConnection,
        _ unanswered: Unanswered,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        try await withDeadline(callDeadline, for: what, closing: connection, marking: unanswered, body)
    }
}
