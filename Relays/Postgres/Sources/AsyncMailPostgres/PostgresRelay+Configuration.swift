extension PostgresRelay {
    /// How mail crosses the database, and what each way promises.
    public enum Mode: Sendable, Hashable {
        /// Nothing lost: every post is appended to a table in one statement, `NOTIFY` only wakes
        /// the readers, and each reader reads everything past its cursor, so a reader that was
        /// disconnected, or whose database restarted, catches up with all it missed that is
        /// younger than `retention`. Rows older than that are deleted. Each origin numbers its
        /// rows, so a batch published again (its commit succeeded, but the answer was lost) is
        /// delivered once.
        case durable(retention: Duration = .seconds(24 * 3600))
        /// At most once, and never silently lost: each post travels in one `NOTIFY` payload,
        /// numbered per origin, with a heartbeat carrying the last number, so every mail lost in
        /// transit is reported with its exact count (``RelayEvent/gap(origin:missing:)``).
        ///
        /// A post whose payload would not fit one notification (PostgreSQL's limit is 8,000 bytes)
        /// is kept in the table for five minutes instead, and its notification carries the row's
        /// id; receivers read the row once. Posts that waited together for the publisher travel
        /// as one, so a busy relay takes this path for large mail (``RelayCounters/spilled``).
        case ephemeral
    }

    /// What a relay connects and how it behaves.
    public struct Configuration: Sendable {
        /// The channel every relay of the fleet shares; relays on other channels never meet.
        public var channel: RelayChannel
        /// Durable (the default) or ephemeral.
        public var mode: Mode
        /// The table of the durable mode's rows and the ephemeral mode's spilled posts, created at
        /// start-up when missing.
        public var table: String
        /// The largest encoded mail the relay carries; larger ones are reported as
        /// ``RelayEvent/oversize(type:bytes:)`` and stay local.
        public var maximumMailBytes: Int
        /// How many posts may wait to be published; beyond it a post is not relayed and
        /// ``RelayEvent/queueOverflow(posts:)`` says so.
        public var outboundQueueLimit: Int
        /// How often the listening connection is checked (a half-open connection is detected
        /// within three of these) and, in ephemeral mode, how often a heartbeat is sent.
        public var heartbeatInterval: Duration
        /// The first and the longest wait before reconnecting; each wait doubles, with jitter.
        public var reconnectBackoff: ClosedRange<Duration>

        /// A configuration for `channel`, with defaults for the rest.
        public init(
            channel: RelayChannel,
            mode: Mode = .durable(),
            table: String = "asyncmail_relay",
            maximumMailBytes: Int = 1 << 20,
            outboundQueueLimit: Int = 10_000,
            heartbeatInterval: Duration = .seconds(1),
            reconnectBackoff: ClosedRange<Duration> = .milliseconds(50) ... .seconds(5)
        ) {
            self.channel = channel
            self.mode = mode
            self.table = table
            self.maximumMailBytes = maximumMailBytes
            self.outboundQueueLimit = outboundQueueLimit
            self.heartbeatInterval = heartbeatInterval
            self.reconnectBackoff = reconnectBackoff
        }

        /// The table name, checked to be a plain lower-case SQL identifier.
        func validatedTable() throws(RelayConfigurationError) -> String {
            let bytes = Array(table.utf8)
            let valid =
                (1...63).contains(bytes.count)
                && bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
                && !(bytes[0] >= 0x30 && bytes[0] <= 0x39)
            guard valid else { throw .invalidTableName(table) }
            return table
        }
    }
}
