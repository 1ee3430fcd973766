@_spi(AsyncMailRelay) import AsyncMailRelay
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// Presence across the fleet: who is in each topic, as every instance on the channel lists it.
    ///
    /// Each relay writes the entries it tracks to the presence tables (`asyncmail_presence`,
    /// `asyncmail_presence_instances`) on a connection of its own, with a heartbeat every
    /// ``Configuration/heartbeatInterval``, and reads the others' when a `NOTIFY` says their topic
    /// changed. See *Across Processes and Machines*.
    ///
    /// - Expiry: an instance that stops beating (killed, or cut off from the database) is removed
    ///   from every list within `expiry` by the first live instance that notices, which reports
    ///   `RelayEvent.presenceExpired(instance:entries:)`. An instance removed that way while
    ///   still alive writes its entries again on its next heartbeat.
    /// - A clean stop (``PostgresRelay/run()`` returning) removes the instance's entries at once.
    /// - Reconnecting, an instance reads every topic again and writes all of its own entries as
    ///   one, so a lost connection or a database restart neither loses a change nor counts an
    ///   entry twice.
    ///
    /// ```swift
    /// var configuration = PostgresRelay.Configuration(channel: try RelayChannel("chat"))
    /// configuration.presence = .init(expiry: .seconds(15))
    /// ```
    public struct Presence: Sendable, Hashable {
        /// How long after an instance's last heartbeat its entries are gone from every list: at
        /// least five heartbeats. A live instance is taken for dead only after missing three in a
        /// row (its entries are then removed early, two heartbeats before the expiry, so that
        /// they are gone within it).
        public var expiry: Duration
        /// How many entries of other instances this relay keeps, in all topics; more are left
        /// out of its lists and reported (`RelayEvent.rejected(reason:)`), so a flooded table
        /// cannot grow memory without bound.
        public var maximumEntries: Int

        /// Presence with an expiry of `expiry` (15 s unless set) and at most `maximumEntries`
        /// entries of other instances.
        public init(expiry: Duration = .seconds(15), maximumEntries: Int = 100_000) {
            self.expiry = expiry
            self.maximumEntries = maximumEntries
        }
    }

    /// Tracks `key` in `topic` across the fleet, with `meta`; tracking it again changes its
    /// metadata.
    ///
    /// This instance lists the entry at once; others within a round trip to the database once
    /// the relay is running. It stays until ``untrack(_:in:)`` or the relay stops.
    ///
    /// ```swift
    /// try relay.track(connectionID, in: room, meta: ["user": name])
    /// defer { relay.untrack(connectionID, in: room) }
    /// ```
    ///
    /// - Throws: `RelayConfigurationError.presenceUnavailable(reason:)` when
    ///   ``Configuration/presence`` is not set, or `key`, `topic` or `meta` is out of bounds:
    ///   a key and a topic are 1–256 UTF-8 bytes without NUL, `meta` at most 4,096 bytes as JSON.
    public func track(_ key: String, in topic: String, meta: [String: String] = [:]) throws(RelayConfigurationError) {
        guard configuration.presence != nil else {
            throw .presenceUnavailable(reason: "presence is off; set Configuration.presence")
        }
        if let problem = PresenceRecord.problem(with: topic, as: "topic") ?? PresenceRecord.problem(
            with: key,
            as: "key"
        )
            ?? PresenceRecord.problem(with: meta)
        {
            throw .presenceUnavailable(reason: problem)
        }
        guard let diff = presence.track(key, in: topic, meta: meta) else { return }
        countPresence(diff)
    }

    /// Stops tracking `key` in `topic`; nothing happens when it is not tracked.
    public func untrack(_ key: String, in topic: String) {
        guard let left = presence.untrack(key, in: topic) else { return }
        countPresence(PresenceDiff(leaves: [left]))
    }

    /// Everyone in `topic`: this instance's entries as they are, the others' as last read,
    /// ordered by instance, then key.
    ///
    /// While the relay is not connected, the others' entries are those last read; once it has
    /// stopped, only this instance's are listed.
    ///
    /// ```swift
    /// let connections = relay.presence(in: "lobby").count
    /// ```
    public func presence(in topic: String) -> [PresenceEntry] {
        presence.list(topic)
    }

    /// `topic`'s presence as it changes: the whole list first, as joins, then each change.
    ///
    /// See `PresenceChanges` for coalescing and the end.
    public func presenceChanges(in topic: String) -> PresenceChanges {
        PresenceChanges(replica: presence, topic: topic)
    }

    /// Counts joins and leaves, and the entries now listed; nothing for a reading that changed
    /// nothing, which most are.
    func countPresence(_ diff: PresenceDiff) {
        guard !diff.isEmpty else { return }
        count {
            $0.presenceJoins.addSaturating(diff.joins.count)
            $0.presenceLeaves.addSaturating(diff.leaves.count)
        }
        // A track on the caller's thread and a reading on the presence loop's can record in the
        // other order than they counted; whoever records last checks it recorded what is listed.
        var recorded = presence.count
        while true {
            metrics.presenceEntries(recorded)
            let now = presence.count
            if now == recorded { break }
            recorded = now
        }
    }
}
