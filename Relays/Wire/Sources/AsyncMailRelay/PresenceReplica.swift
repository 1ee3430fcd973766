@_spi(AsyncMailInternal) import AsyncMail

/// A relay's view of presence: the entries it tracks itself, exact at once, and every other
/// instance's, as last read from the presence table; with the changes still to write and the
/// topics still to read, and the sequences waiting on each topic.
///
/// Only the presence loop replaces other instances' entries, so a topic's rows are read and
/// stored without a lock held across the read. Continuations are resumed after unlocking.
@_spi(AsyncMailRelay)
public final class PresenceReplica: Sendable {
    /// Where one of this instance's entries is: its topic and key.
    public struct Slot: Hashable, Sendable {
        public let topic: String
        public let key: String
    }

    /// What the presence loop is to do next, taken in one go.
    public struct Work: Sendable {
        /// Changes to this instance's entries, not yet written: metadata, or nil to remove it.
        public var writes: [Slot: [String: String]?] = [:]
        public var topics: Set<String> = []
        public var readAll = false
        /// A heartbeat is due: write it, and remove instances whose heartbeats stopped.
        public var beat = false
        /// Another instance may have changed a topic: ask the store which (an engine whose
        /// database names the topics in a table, not in a notification).
        public var look = false
    }

    private struct State {
        /// What this instance tracks: topic, key, metadata.
        var own: [String: [String: [String: String]]] = [:]
        var work = Work()
        var remote: [String: [PresenceEntry.ID: PresenceEntry]] = [:]
        var remoteCount = 0
        var watchers: [UInt64: (topic: String, wake: AsyncStream<Void>.Continuation)] = [:]
        var nextWatcher: UInt64 = 0
        /// Wakes the presence loop.
        var loop: AsyncStream<Void>.Continuation?
        var ended = false
    }

    /// How many topics may wait to be read before the loop reads them all instead: notifications
    /// naming a flood of topics cannot grow memory.
    public static let topicsBeforeReadingAll = 1_024

    public let origin: String
    public let limit: Int
    private let state = Guarded(State())

    public init(origin: String, limit: Int) {
        self.origin = origin
        self.limit = limit
    }

    /// Entries in total, this instance's and others'.
    public var count: Int {
        state.withLock { state in state.remoteCount + state.own.values.reduce(0) { $0 + $1.count } }
    }

    /// Tracks `key` in `topic`, or changes its metadata: the change, nil when nothing changed.
    public func track(_ key: String, in topic: String, meta: [String: String]) -> PresenceDiff? {
        let (diff, wakes) = state.withLock { state -> (PresenceDiff?, [AsyncStream<Void>.Continuation]) in
            let before = state.own[topic]?[key]
            guard before != meta else { return (nil, []) }
            state.own[topic, default: [:]][key] = meta
            state.work.writes[Slot(topic: topic, key: key)] = .some(meta)
            var diff = PresenceDiff(joins: [PresenceEntry(key: key, meta: meta, instance: origin)])
            if let before { diff.leaves = [PresenceEntry(key: key, meta: before, instance: origin)] }
            return (diff, Self.wakes(for: [topic], in: state, loop: true))
        }
        for wake in wakes { wake.yield() }
        return diff
    }

    /// Stops tracking `key` in `topic`: the entry that left, nil when it was not tracked.
    public func untrack(_ key: String, in topic: String) -> PresenceEntry? {
        let (left, wakes) = state.withLock { state -> (PresenceEntry?, [AsyncStream<Void>.Continuation]) in
            guard let meta = state.own[topic]?.removeValue(forKey: key) else { return (nil, []) }
            if state.own[topic]?.isEmpty == true { state.own[topic] = nil }
            state.work.writes[Slot(topic: topic, key: key)] = .some(nil)
            return (
                PresenceEntry(key: key, meta: meta, instance: origin), Self.wakes(for: [topic], in: state, loop: true)
            )
        }
        for wake in wakes { wake.yield() }
        return left
    }

    /// A topic's entries, this instance's and others', ordered by instance, then key.
    public func list(_ topic: String) -> [PresenceEntry] {
        snapshot(topic).values.sorted { $0.id < $1.id }
    }

    /// A topic's entries by what makes each one.
    public func snapshot(_ topic: String) -> [PresenceEntry.ID: PresenceEntry] {
        state.withLock { state in
            var entries = state.remote[topic] ?? [:]
            for (key, meta) in state.own[topic] ?? [:] {
                let entry = PresenceEntry(key: key, meta: meta, instance: origin)
                entries[entry.id] = entry
            }
            return entries
        }
    }

    /// Wakes `wake` on every change to `topic`, until ``unwatch(_:)`` or ``end()``; false when
    /// the replica has ended.
    public func watch(_ topic: String, waking wake: AsyncStream<Void>.Continuation) -> UInt64? {
        state.withLock { state in
            guard !state.ended else { return nil }
            defer { state.nextWatcher += 1 }
            state.watchers[state.nextWatcher] = (topic, wake)
            return state.nextWatcher
        }
    }

    public func unwatch(_ watcher: UInt64) {
        _ = state.withLock { $0.watchers.removeValue(forKey: watcher) }
    }

    /// The presence loop's wake-ups, from now on: a change to write or a topic to read.
    public func startLoop() -> AsyncStream<Void> {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let previous = state.withLock { state in
            defer { state.loop = wake }
            return state.loop
        }
        previous?.finish()
        return wakes
    }

    /// A connection's start: every entry this instance tracks, to be written as the whole of its
    /// rows, which makes every change waiting to be written moot; and a reading of every topic.
    public func beginSession() -> [Slot: [String: String]] {
        state.withLock { state in
            state.work = Work(readAll: true)
            var entries: [Slot: [String: String]] = [:]
            for (topic, keys) in state.own {
                for (key, meta) in keys { entries[Slot(topic: topic, key: key)] = meta }
            }
            return entries
        }
    }

    /// Takes what is to be done. Writes that then fail are not put back: the next connection
    /// writes every entry (``beginSession()``).
    public func takeWork() -> Work {
        state.withLock { state in
            defer { state.work = Work() }
            return state.work
        }
    }

    /// Asks for `topic` to be read, as a notification says it changed.
    public func topicChanged(_ topic: String) {
        let loop = state.withLock { state in
            if state.work.topics.count >= Self.topicsBeforeReadingAll {
                state.work.topics = []
                state.work.readAll = true
            }
            if !state.work.readAll { state.work.topics.insert(topic) }
            return state.loop
        }
        loop?.yield()
    }

    /// Asks for a heartbeat, and with `readingAll` for every topic to be read: a row may have
    /// changed without a notification (an operator's statement, say).
    public func beatLater(readingAll: Bool) {
        let loop = state.withLock { state in
            state.work.beat = true
            if readingAll { state.work.readAll = true }
            return state.loop
        }
        loop?.yield()
    }

    /// Asks the loop to ask the store which topics changed: another instance says it wrote.
    public func lookLater() {
        let loop = state.withLock { state in
            state.work.look = true
            return state.loop
        }
        loop?.yield()
    }

    /// How many entries of other instances `topic` may hold, given everything else kept.
    public func room(for topic: String) -> Int {
        state.withLock { state in max(limit - (state.remoteCount - (state.remote[topic]?.count ?? 0)), 0) }
    }

    /// Replaces what other instances have in `topic` with what was read: the change.
    public func replace(_ topic: String, with entries: [PresenceEntry]) -> PresenceDiff {
        replace([topic: entries], all: false)[topic] ?? PresenceDiff()
    }

    /// Replaces what other instances have in every topic of `byTopic` (in every topic, when
    /// `all`) with what was read: the change in each topic that changed.
    public func replace(_ byTopic: [String: [PresenceEntry]], all: Bool) -> [String: PresenceDiff] {
        let (diffs, wakes) = state.withLock { state -> ([String: PresenceDiff], [AsyncStream<Void>.Continuation]) in
            var diffs: [String: PresenceDiff] = [:]
            let topics = all ? Set(byTopic.keys).union(state.remote.keys) : Set(byTopic.keys)
            for topic in topics {
                var after: [PresenceEntry.ID: PresenceEntry] = [:]
                for entry in byTopic[topic] ?? [] where entry.instance != origin { after[entry.id] = entry }
                let before = state.remote[topic] ?? [:]
                let diff = PresenceDiff.between(before, after)
                guard !diff.isEmpty else { continue }
                state.remoteCount += after.count - before.count
                state.remote[topic] = after.isEmpty ? nil : after
                diffs[topic] = diff
            }
            return (diffs, Self.wakes(for: Set(diffs.keys), in: state, loop: false))
        }
        for wake in wakes { wake.yield() }
        return diffs
    }

    /// Ends every watcher's sequence and forgets other instances' entries: the relay stopped,
    /// and they can no longer be kept current.
    public func end() {
        let wakes = state.withLock { state in
            defer {
                state.watchers = [:]
                state.remote = [:]
                state.remoteCount = 0
                state.loop = nil
                state.ended = true
            }
            return state.watchers.values.map(\.wake) + (state.loop.map { [$0] } ?? [])
        }
        for wake in wakes { wake.finish() }
    }

    private static func wakes(for topics: Set<String>, in state: State, loop: Bool) -> [AsyncStream<Void>.Continuation]
    {
        var wakes = state.watchers.values.filter { topics.contains($0.topic) }.map(\.wake)
        if loop, let wake = state.loop { wakes.append(wake) }
        return wakes
    }
}
