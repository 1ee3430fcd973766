/// Running totals of what a relay did, read with ``PostgresRelay/counters``.
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
    /// Durable mode: mails received a second time and dropped (an origin published a batch again
    /// because the answer to its commit was lost).
    public var duplicates = 0
    /// Ephemeral mode: mails detected lost in transit.
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

    public init() {}
}
