@_spi(AsyncMailRelay) import AsyncMailRelay
import CoreMetrics

extension PostgresRelay {
    /// How mail crosses the database, and what each way promises.
    public enum Mode: Sendable, Hashable {
        /// Nothing lost: every post is appended to a table in one statement, `NOTIFY` only wakes
        /// the readers, and each reader reads everything past its cursor, so a reader that was
        /// disconnected, or whose database restarted, catches up with all it missed that is
        /// younger than `retention`. Rows older than that are deleted. Each origin numbers its
        /// rows, so a batch published again (its commit succeeded, but the answer was lost) is
        /// delivered once, and mail deleted before a reader got to it (a reader away longer than
        /// `retention`) is reported with its exact count (`RelayEvent.gap(origin:missing:)`).
        case durable(retention: Duration = .seconds(24 * 3600))
        /// At most once, and never silently lost: each post travels in one `NOTIFY` payload,
        /// numbered per origin, with a heartbeat carrying the last number, so every mail lost in
        /// transit is reported with its exact count (`RelayEvent.gap(origin:missing:)`).
        ///
        /// A post whose payload would not fit one notification (PostgreSQL's limit is 8,000 bytes)
        /// is kept in the table for five minutes instead, and its notification carries the row's
        /// id; receivers read the row once. Posts that waited together for the publisher travel
        /// as one, so a busy relay takes this path for large mail (`RelayCounters.spilled`).
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
        /// `RelayEvent.oversize(type:bytes:)` and stay local.
        public var maximumMailBytes: Int
        /// The largest envelope the relay sends or reads: one post, a whole batch. A larger batch
        /// is reported as `RelayEvent.oversize(type:bytes:)` and stays local; a larger row
        /// received is not read, and `RelayEvent.rejected(reason:)` says so. At least
        /// ``maximumMailBytes``.
        public var maximumPostBytes: Int
        /// How many mails may wait to be published: posted, and not yet taken by the writer. A post
        /// starts only while fewer wait (it then goes in whole); while the queue is full an
        /// asynchronous post waits or goes on, as ``backpressure`` says, and mail not relayed is
        /// reported (`RelayEvent.queueOverflow(posts:)`). The bound holds from the first post,
        /// while the database is still out of reach.
        public var outboundQueueLimit: Int
        /// What an asynchronous `post` of a relayed type does while the outbound queue is full:
        /// waits for room, at most 30 s by default, or, with `.drop`, goes on at once and leaves
        /// its mail unrelayed (see `OutboundBackpressure`). `postSynchronously` never waits.
        public var backpressure: OutboundBackpressure
        /// How often the listening connection is checked (a half-open connection is detected
        /// within three of these) and, in ephemeral mode, how often a heartbeat is sent.
        public var heartbeatInterval: Duration
        /// The first and the longest wait before a failed connection, statement or publish is
        /// tried again; each wait doubles, with jitter. The SQLite relay's setting of the same
        /// name does the same for its file.
        public var retryBackoff: ClosedRange<Duration>
        /// The key the fleet signs and verifies payloads with, or `nil` (the default) to trust
        /// whatever arrives on the channel. Every relay of a fleet sets the same key. See
        /// `RelayKey` and *Across Processes and Machines*.
        public var authenticationKey: RelayKey?
        /// Where the relay's metrics go (AsyncMailObservability's *Observability* article lists them); `nil`, the default, reads
        /// `MetricsSystem.factory` when the first metric is recorded, so bootstrapping after making
        /// the relay works.
        public var metricsFactory: (any MetricsFactory)?
        /// Presence across the fleet (``PostgresRelay/track(_:in:meta:)``), or `nil` (the
        /// default) for none: with it set, the relay opens one more connection, for presence.
        public var presence: Presence?

        /// A configuration for `channel`, with defaults for the rest.
        public init(
            channel: RelayChannel,
            mode: Mode = .durable(),
            table: String = "asyncmail_relay",
            maximumMailBytes: Int = 1 << 20,
            maximumPostBytes: Int = 16 << 20,
            outboundQueueLimit: Int = 10_000,
            backpressure: OutboundBackpressure = .wait(atMost: .seconds(30)),
            heartbeatInterval: Duration = .seconds(1),
            retryBackoff: ClosedRange<Duration> = .milliseconds(50) ... .seconds(5),
            authenticationKey: RelayKey? = nil,
            metricsFactory: (any MetricsFactory)? = nil,
            presence: Presence? = nil
        ) {
            self.channel = channel
            self.mode = mode
            self.table = table
            self.maximumMailBytes = maximumMailBytes
            self.maximumPostBytes = maximumPostBytes
            self.outboundQueueLimit = outboundQueueLimit
            self.backpressure = backpressure
            self.heartbeatInterval = heartbeatInterval
            self.retryBackoff = retryBackoff
            self.authenticationKey = authenticationKey
            self.metricsFactory = metricsFactory
            self.presence = presence
        }

        /// How long the relay keeps a row: the durable retention, or the ephemeral mode's five
        /// minutes for spilled posts. Also how long an origin's numbering is remembered without
        /// mail from it.
        @_spi(AsyncMailRelay) public var retention: Duration {
            switch mode {
            case .durable(let retention): retention
            case .ephemeral: EphemeralMode.spillRetention
            }
        }

        /// Presence's settings, checked against the heartbeat.
        func validatedPresence() throws(RelayConfigurationError) {
            try presence?.validated(heartbeat: heartbeatInterval)
        }

        /// The table name, checked to be a plain lower-case SQL identifier.
        func validatedTable() throws(RelayConfigurationError) -> String {
            if let reason = SQLIdentifier.problem(with: table) { throw .invalidTableName(table, reason: reason) }
            return table
        }
    }
}

@_spi(AsyncMailRelay) extension PostgresRelay.Configuration: RelaySettings {}
