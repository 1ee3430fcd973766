/// Running totals of what a relay did, read with its `counters` (`PostgresRelay.counters`,
/// `SQLiteRelay.counters`).
public struct RelayCounters: Sendable, Hashable {
    /// Mails taken for publishing; in durable mode, `queued - published` is what waits for the
    /// database.
    public var queued = 0
    /// Mails published to the database.
    public var published = 0
    /// Ephemeral mode: published mails whose post did not fit one notification, so it was kept in
    /// the table and its notification carried the row's id.
    public var spilled = 0
    /// Mails received from other processes and posted into the local mailroom.
    public var received = 0
    /// Times a connection was lost or failed to connect.
    public var disconnects = 0
    /// Mails received a second time and dropped: in durable mode an origin publishes a batch
    /// again when the answer to its commit was lost; in ephemeral mode only a replayed
    /// notification repeats.
    public var duplicates = 0
    /// Mails known to be lost: from their origins' numbering (``RelayEvent/gap(origin:missing:)``),
    /// or in durable mode from the channel's (``RelayEvent/expired(mails:)``).
    public var missing = 0
    /// Publish attempts that failed.
    public var publishFailures = 0
    /// Mails not relayed because they were too large.
    public var oversize = 0
    /// Received mails of an unknown wire name.
    public var unknownType = 0
    /// Received mails that failed to decode.
    public var decodeFailures = 0
    /// Posts not relayed because the outbound queue was full.
    public var queueOverflow = 0
    /// Received payloads dropped as not what a relay sends (``RelayEvent/rejected(reason:)``).
    public var rejected = 0
    /// Presence: entries that joined a topic, as this instance saw them (its own and others').
    public var presenceJoins = 0
    /// Presence: entries that left a topic, as this instance saw them (its own and others').
    public var presenceLeaves = 0
    /// Presence: instances this relay found dead and removed
    /// (``RelayEvent/presenceExpired(instance:entries:)``).
    public var presenceExpired = 0

    public init() {}
}

@_spi(AsyncMailRelay)
extension Int {
    /// Adds without trapping: a count that a hostile payload inflates stops at `Int.max`.
    public mutating func addSaturating(_ other: Int) {
        let (sum, overflow) = addingReportingOverflow(other)
        self = overflow ? (other > 0 ? .max : .min) : sum
    }
}
