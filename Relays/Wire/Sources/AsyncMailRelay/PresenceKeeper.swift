@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import RelayWire

/// Presence as every engine keeps it: the public calls (track, untrack, lists, changes), their
/// counters and metric, and the loop that writes this instance's entries with a heartbeat,
/// removes dead instances and reads the others' from a `PresenceStore`.
@_spi(AsyncMailRelay)
public final class PresenceKeeper: Sendable {
    /// Who is in each topic, this instance's entries and the others'.
    public let replica: PresenceReplica
    /// The settings, or nil when presence is off.
    public let settings: RelayPresence?
    /// How often this instance beats.
    public let heartbeat: Duration
    /// What a row's signature covers besides the entry: the relay channel, or the file's table.
    public let scope: String
    private let origin: String
    private let signer: PayloadSigner?
    private let reporter: RelayReporter

    public init(
        settings: RelayPresence?,
        heartbeat: Duration,
        scope: String,
        origin: String,
        signer: PayloadSigner?,
        reporter: RelayReporter
    ) {
        self.replica = PresenceReplica(origin: origin, limit: settings?.maximumEntries ?? 0)
        self.settings = settings
        self.heartbeat = heartbeat
        self.scope = scope
        self.origin = origin
        self.signer = signer
        self.reporter = reporter
    }

    /// Tracks `key` in `topic`, or changes its metadata (`track(_:in:meta:)` of each relay).
    public func track(_ key: String, in topic: String, meta: [String: String]) throws(RelayConfigurationError) {
        guard settings != nil else {
            throw .presenceUnavailable(reason: "presence is off; set Configuration.presence")
        }
        if let problem = PresenceRecord.problem(with: topic, as: "topic")
            ?? PresenceRecord.problem(with: key, as: "key") ?? PresenceRecord.problem(with: meta)
        {
            throw .presenceUnavailable(reason: problem)
        }
        guard let diff = replica.track(key, in: topic, meta: meta) else { return }
        count(diff)
    }

    /// Stops tracking `key` in `topic`; nothing happens when it is not tracked.
    public func untrack(_ key: String, in topic: String) {
        guard let left = replica.untrack(key, in: topic) else { return }
        count(PresenceDiff(leaves: [left]))
    }

    /// Counts joins and leaves, and the entries now listed; nothing for a reading that changed
    /// nothing, which most are.
    public func count(_ diff: PresenceDiff) {
        guard !diff.isEmpty else { return }
        reporter.count {
            $0.presenceJoins.addSaturating(diff.joins.count)
            $0.presenceLeaves.addSaturating(diff.leaves.count)
        }
        // A track on the caller's thread and a reading on the presence loop's can record in the
        // other order than they counted; whoever records last checks it recorded what is listed.
        var recorded = replica.count
        while true {
            reporter.metrics.presenceEntries(recorded)
            let now = replica.count
            if now == recorded { break }
            recorded = now
        }
    }

    /// A topic named from outside the process (a notification's payload), untrusted: read again
    /// when it could be a topic, rejected and counted otherwise.
    public func topicChanged(_ name: String) {
        if let problem = PresenceRecord.problem(with: name, as: "topic") {
            reporter.report(.rejected(reason: "a presence notification naming \(problem)")) { $0.rejected += 1 }
        } else {
            replica.topicChanged(name)
        }
    }

    /// Asks for a heartbeat every `heartbeat`, and every 60th for every topic to be read again,
    /// until cancelled.
    public func beat() async throws {
        var beats = 0
        while true {
            try await Task.sleep(for: heartbeat)
            beats += 1
            // Now and then every topic again, in case a row changed without a word.
            replica.beatLater(readingAll: beats % 60 == 0)
        }
    }

    /// Ends every watcher's sequence: the relay stopped.
    public func end() {
        replica.end()
        reporter.metrics.presenceEntries(0)
    }

    /// Writes every entry, then does what each wake-up (of ``PresenceReplica/startLoop()``)
    /// brings, until `wakes` ends or a call throws: the caller starts again with a new session.
    public func keep(_ store: some PresenceStore, wakes: AsyncStream<Void>) async throws {
        guard let settings else { return }
        var whole: [PresenceReplica.Slot: [String: String]]? = replica.beginSession()
        var wakeUps = wakes.makeAsyncIterator()
        while true {
            if let entries = whole {
                whole = nil
                _ = try await write(entries.map { ($0.key, $0.value) }, removing: [], whole: true, store)
            }
            var work = replica.takeWork()
            if !work.writes.isEmpty || work.beat {
                var writes: [(PresenceReplica.Slot, [String: String])] = []
                var removals: [PresenceReplica.Slot] = []
                for (slot, meta) in work.writes {
                    if let meta { writes.append((slot, meta)) } else { removals.append(slot) }
                }
                if try await write(writes, removing: removals, whole: false, store) {
                    // Another instance found this one dead and removed its rows: all of them again.
                    whole = replica.beginSession()
                    continue
                }
            }
            if work.beat {
                // Two heartbeats short of the expiry: a beat is up to one old when its instance
                // dies, and the sweep runs once a beat, so the entries go within the expiry.
                for (instance, entries) in try await store.sweep(olderThan: settings.expiry - heartbeat * 2) {
                    reporter.report(.presenceExpired(instance: instance, entries: entries)) {
                        $0.presenceExpired += 1
                    }
                }
            }
            // After the sweep, whose changed topics are announced too: read now, not a beat later.
            if work.look || work.beat {
                if let topics = try await store.changedTopics() {
                    for topic in topics {
                        if let problem = PresenceRecord.problem(with: topic, as: "topic") {
                            reporter.report(.rejected(reason: "a changed presence topic naming \(problem)")) {
                                $0.rejected += 1
                            }
                        } else {
                            work.topics.insert(topic)
                        }
                    }
                    if work.topics.count > PresenceReplica.topicsBeforeReadingAll { work.readAll = true }
                } else {
                    work.readAll = true
                }
            }
            if work.readAll {
                try await readAll(settings, store)
            } else {
                for topic in work.topics { try await read(topic, store) }
            }
            guard await wakeUps.next() != nil else { throw CancellationError() }
        }
    }

    /// Writes rows, signed, and the heartbeat: true when this instance's heartbeat row was
    /// missing.
    private func write(
        _ entries: [(PresenceReplica.Slot, [String: String])],
        removing removals: [PresenceReplica.Slot],
        whole: Bool,
        _ store: some PresenceStore
    ) async throws -> Bool {
        let writes = entries.map { slot, meta in
            let json = PresenceRecord.json(of: meta)
            return PresenceWrite(
                topic: slot.topic,
                key: slot.key,
                meta: json,
                signature: PresenceRecord.signature(
                    channel: scope,
                    topic: slot.topic,
                    key: slot.key,
                    instance: origin,
                    meta: json,
                    signer: signer
                )
            )
        }
        return try await store.write(writes, removing: removals, whole: whole)
    }

    /// Reads one topic's rows of other instances, and takes them as the topic's.
    private func read(_ topic: String, _ store: some PresenceStore) async throws {
        let room = replica.room(for: topic)
        let rows = try await store.read(topic, limit: room + 1)
        let entries = accept(rows, room: room)
        count(replica.replace(topic, with: entries.filter { $0.topic == topic }.map(\.entry)))
    }

    /// Reads every topic's rows of other instances, and takes them as the whole.
    private func readAll(_ settings: RelayPresence, _ store: some PresenceStore) async throws {
        let limit = settings.maximumEntries
        let rows = try await store.read(nil, limit: limit + 1)
        var byTopic: [String: [PresenceEntry]] = [:]
        for (topic, entry) in accept(rows, room: limit) { byTopic[topic, default: []].append(entry) }
        let diffs = replica.replace(byTopic, all: true)
        count(PresenceDiff(joins: diffs.values.flatMap(\.joins), leaves: diffs.values.flatMap(\.leaves)))
    }

    /// The rows that pass every check, at most `room` of them; the others are rejected, counted
    /// and reported.
    private func accept(_ rows: [PresenceRecord.Columns], room: Int) -> [(topic: String, entry: PresenceEntry)] {
        var accepted: [(topic: String, entry: PresenceEntry)] = []
        for row in rows.prefix(room) {
            switch PresenceRecord.decode(row, channel: scope, signer: signer) {
            case .success(let record):
                accepted.append(
                    (record.topic, PresenceEntry(key: record.key, meta: record.meta, instance: record.instance))
                )
            case .failure(let rejection):
                reporter.report(.rejected(reason: rejection.reason)) { $0.rejected += 1 }
            }
        }
        if rows.count > room {
            let limit = replica.limit
            reporter.report(
                .rejected(
                    reason: "presence holds more than \(limit) entries of other instances; the rest are not listed"
                )
            ) { $0.rejected += 1 }
        }
        return accepted
    }
}
