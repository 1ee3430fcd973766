@_spi(AsyncMailRelay) import AsyncMailRelay

extension SQLiteRelay {
    /// Presence across the processes: who is in each topic, as every process sharing the file
    /// lists it.
    ///
    /// Each relay writes the entries it tracks to presence tables in the file, on a connection
    /// of its own, with a heartbeat every ``Configuration/heartbeatInterval``; a change nudges
    /// the other processes' wake-up sockets, and they read the topics it names. `RelayPresence`
    /// says how expiry works: a process killed with `SIGKILL` leaves every list within the
    /// expiry.
    ///
    /// ```swift
    /// var configuration = SQLiteRelay.Configuration()
    /// configuration.presence = .init(expiry: .seconds(15))
    /// ```
    public typealias Presence = RelayPresence

    /// Tracks `key` in `topic` across the processes, with `meta`; tracking it again changes its
    /// metadata.
    ///
    /// This process lists the entry at once; others within a millisecond or so once the relay
    /// is running. It stays until ``untrack(_:in:)`` or the relay stops.
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

    /// Everyone in `topic`: this process's entries as they are, the others' as last read,
    /// ordered by instance, then key.
    ///
    /// Once the relay has stopped, only this process's are listed.
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

    /// Keeps presence in the file until cancelled: wakes the loop on each presence nudge, beats,
    /// and after a failed call (the file busy past the timeout, the disk full) reports it and
    /// starts a new session with backoff, writing every entry again.
    func keepPresence(_ tables: PresenceTables, _ wakeUps: WakeUps) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in wakeUps.presenceArrivals { self.presence.replica.lookLater() }
            }
            group.addTask { try? await self.presence.beat() }
            defer { group.cancelAll() }
            var attempt = 0
            while !Task.isCancelled {
                do {
                    try await presence.keep(tables, wakes: presence.replica.startLoop())
                } catch {
                    if Task.isCancelled { return }
                    reporter.report(.disconnected(reason: "presence: \(error)")) { $0.disconnects += 1 }
                    attempt += 1
                    guard await backoff(attempt: attempt) else { return }
                }
            }
        }
    }

    /// Removes this process's entries at once, as it stops, even when cancelled; then ends every
    /// presence sequence.
    func leavePresence(_ tables: PresenceTables) async {
        await Task { try? await tables.leave() }.value
        presence.end()
    }
}
