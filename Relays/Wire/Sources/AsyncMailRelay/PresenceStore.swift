@_spi(AsyncMailRelay) import RelayWire

/// Where an engine keeps presence: one row per tracked entry, one per instance with its last
/// heartbeat. `PresenceKeeper` runs the loop; the store only reads and writes.
@_spi(AsyncMailRelay)
public protocol PresenceStore: Sendable {
    /// Beats, then writes this instance's rows and announces each topic that changed. With
    /// `whole`, `writes` are all of this instance's rows and its others are deleted; otherwise
    /// `removals` are deleted. True when the instance's heartbeat row was missing: another
    /// instance found it dead and removed its rows, which must all be written again.
    func write(_ writes: [PresenceWrite], removing removals: [PresenceReplica.Slot], whole: Bool) async throws -> Bool

    /// Deletes the rows of instances whose last heartbeat is older than `age`, and rows of no
    /// instance, and announces each topic that changed: how many rows each such instance had.
    func sweep(olderThan age: Duration) async throws -> [(instance: String, entries: Int)]

    /// Other instances' rows of `topic` (of every topic, when nil), at most `limit`.
    func read(_ topic: String?, limit: Int) async throws -> [PresenceRecord.Columns]

    /// The topics announced as changed since the last call, or nil when they cannot be told
    /// (more than the store keeps): then every topic is read. An engine whose database sends the
    /// topics itself (PostgreSQL's `NOTIFY`) returns none.
    func changedTopics() async throws -> [String]?
}

/// One of this instance's presence rows to write: where, what, and its signature.
@_spi(AsyncMailRelay)
public struct PresenceWrite: Sendable {
    public let topic: String
    public let key: String
    /// The metadata as JSON (`PresenceRecord.json(of:)`).
    public let meta: String
    /// Empty without a key.
    public let signature: String
}
