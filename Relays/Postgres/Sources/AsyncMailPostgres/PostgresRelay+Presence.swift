@_spi(AsyncMailRelay) import AsyncMailRelay
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// Presence across the fleet: who is in each topic, as every instance on the channel lists it.
    ///
    /// Each relay writes the entries it tracks to the presence tables (`asyncmail_presence`,
    /// `asyncmail_presence_instances`) on a connection of its own, with a heartbeat every
    /// ``Configuration/heartbeatInterval``, and reads the others' when a `NOTIFY` says their topic
    /// changed. See *Across Processes and Machines*. `RelayPresence` says how expiry works.
    ///
    /// Reconnecting, an instance reads every topic again and writes all of its own entries as
    /// one, so a lost connection or a database restart neither loses a change nor counts an
    /// entry twice.
    ///
    /// ```swift
    /// var configuration = PostgresRelay.Configuration(channel: try RelayChannel("chat"))
    /// configuration.presence = .init(expiry: .seconds(15))
    /// ```
    public typealias Presence = RelayPresence

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
        try presence.track(key, in: topic, meta: meta)
    }

    /// Stops tracking `key` in `topic`; nothing happens when it is not tracked.
    public func untrack(_ key: String, in topic: String) {
        presence.untrack(key, in: topic)
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
        presence.replica.list(topic)
    }

    /// `topic`'s presence as it changes: the whole list first, as joins, then each change.
    ///
    /// See `PresenceChanges` for coalescing and the end.
    public func presenceChanges(in topic: String) -> PresenceChanges {
        PresenceChanges(replica: presence.replica, topic: topic)
    }
}
