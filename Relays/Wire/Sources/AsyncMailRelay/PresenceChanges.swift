/// A topic's presence as it changes: first the whole list as joins, then each change as a
/// ``PresenceDiff``; from `presenceChanges(in:)`.
///
/// - Coalescing: a consumer that falls behind is given one diff from what it was last told to
///   what the topic holds now, so memory stays bounded by the topic's size. An entry that joined
///   and left again in between is in neither list; what the consumer knows is always a list the
///   topic really had.
/// - Each iterator is independent: it starts from the whole list, whenever it is made.
/// - It ends when the relay stops (after `run()` returns) or the consuming task is
///   cancelled.
///
/// ```swift
/// var members: [String: PresenceEntry] = [:]
/// for await diff in relay.presenceChanges(in: "lobby") {
///     for entry in diff.leaves { members[entry.key] = nil }
///     for entry in diff.joins { members[entry.key] = entry }
/// }
/// ```
public struct PresenceChanges: AsyncSequence, Sendable {
    public typealias Element = PresenceDiff
    public typealias Failure = Never

    let replica: PresenceReplica
    let topic: String

    /// The changes of `topic` in `replica`.
    @_spi(AsyncMailRelay) public init(replica: PresenceReplica, topic: String) {
        self.replica = replica
        self.topic = topic
    }

    public func makeAsyncIterator() -> Iterator {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        if let watcher = replica.watch(topic, waking: wake) {
            let replica = replica
            wake.onTermination = { _ in replica.unwatch(watcher) }
        } else {
            wake.finish()  // the relay has stopped: the whole list once, then the end
        }
        return Iterator(replica: replica, topic: topic, wakes: wakes.makeAsyncIterator())
    }

    /// Yields the next change once there is one.
    public struct Iterator: AsyncIteratorProtocol {
        let replica: PresenceReplica
        let topic: String
        var wakes: AsyncStream<Void>.Iterator
        /// What the consumer was last told; nil before the first diff.
        var told: [PresenceEntry.ID: PresenceEntry]?

        public mutating func next() async -> PresenceDiff? {
            guard let told else {
                let now = replica.snapshot(topic)
                self.told = now
                return PresenceDiff.between([:], now)
            }
            var before = told
            while await wakes.next() != nil {
                let now = replica.snapshot(topic)
                let diff = PresenceDiff.between(before, now)
                before = now
                if !diff.isEmpty {
                    self.told = now
                    return diff
                }
            }
            return nil
        }
    }
}
