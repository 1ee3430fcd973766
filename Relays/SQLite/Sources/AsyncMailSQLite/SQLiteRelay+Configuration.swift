@_spi(AsyncMailRelay) import AsyncMailRelay
import CoreMetrics

extension SQLiteRelay {
    /// How a relay uses its database file, and what it keeps.
    public struct Configuration: Sendable {
        /// How long a row is kept: a client that comes back within it (with a host-wide
        /// position) resumes with nothing lost. Rows older than that are deleted, about once a
        /// minute, and a reader that had not read them reports exactly how many mails it missed
        /// (`RelayEvent.expired(mails:)`). Also how long an origin's numbering is remembered
        /// without mail from it.
        public var retention: Duration
        /// The largest encoded mail the relay carries; larger ones are reported as
        /// `RelayEvent.oversize(type:bytes:)` and stay local.
        public var maximumMailBytes: Int
        /// The largest row the relay writes or reads: one post, a whole batch. A larger batch is
        /// reported as `RelayEvent.oversize(type:bytes:)` and stays local; a larger row read is
        /// not transferred, and `RelayEvent.rejected(reason:)` says so. At least
        /// ``maximumMailBytes``.
        public var maximumPostBytes: Int
        /// How many mails may wait to be written: posted, and not yet taken by the writer. A post
        /// starts only while fewer wait (it then goes in whole); while the queue is full an
        /// asynchronous post waits or goes on, as ``backpressure`` says, and mail not relayed is
        /// reported (`RelayEvent.queueOverflow(posts:)`).
        public var outboundQueueLimit: Int
        /// What an asynchronous `post` of a relayed type does while the outbound queue is full:
        /// waits for room, at most 30 s by default, or, with `.drop`, goes on at once and leaves
        /// its mail unrelayed (see `OutboundBackpressure`). `postSynchronously` never waits.
        public var backpressure: OutboundBackpressure
        /// How often the reader checks the database for rows whose wake-up was lost (a writer
        /// that died between its commit and its nudge), and whether the file is still the one
        /// it opened; and how often the retention runs (every 60 checks).
        public var checkInterval: Duration
        /// How long a write waits for another process's write lock (one stopped while it held
        /// it, say) before it fails, is reported (`RelayEvent.publishFailed(reason:mails:)`) and
        /// is tried again.
        public var busyTimeout: Duration
        /// The first and the longest wait before a failed write or read is tried again; each
        /// wait doubles, with jitter.
        public var retryBackoff: ClosedRange<Duration>
        /// The key every process signs and verifies rows with, or `nil` (the default) to trust
        /// whatever the file holds. The file is its owner's only (0600), so a key guards against
        /// other programs of the same user. See `RelayKey`.
        public var authenticationKey: RelayKey?
        /// Where the relay's metrics go; `nil`, the default, reads `MetricsSystem.factory` when
        /// the first metric is recorded. The metrics are the PostgreSQL relay's, with
        /// `messaging.system` `asyncmail-sqlite` and the file's name as the destination.
        public var metricsFactory: (any MetricsFactory)?
        /// Presence across the processes (``SQLiteRelay/track(_:in:meta:)``), or `nil` (the
        /// default) for none: with it set, the relay opens one more connection to the file, for
        /// presence.
        public var presence: Presence?
        /// How often a relay with ``presence`` writes its heartbeat and removes processes whose
        /// heartbeats stopped; the presence expiry is at least five of these.
        public var heartbeatInterval: Duration

        /// A configuration with defaults: a day's retention, 1 MiB mails, 16 MiB posts, 10,000
        /// mails queued, posts waiting up to 30 s for room, a check every second, a 5 s busy
        /// timeout, no presence, a heartbeat every second.
        public init(
            retention: Duration = .seconds(24 * 3600),
            maximumMailBytes: Int = 1 << 20,
            maximumPostBytes: Int = 16 << 20,
            outboundQueueLimit: Int = 10_000,
            backpressure: OutboundBackpressure = .wait(atMost: .seconds(30)),
            checkInterval: Duration = .seconds(1),
            busyTimeout: Duration = .seconds(5),
            retryBackoff: ClosedRange<Duration> = .milliseconds(50) ... .seconds(5),
            authenticationKey: RelayKey? = nil,
            metricsFactory: (any MetricsFactory)? = nil,
            presence: Presence? = nil,
            heartbeatInterval: Duration = .seconds(1)
        ) {
            self.retention = retention
            self.maximumMailBytes = maximumMailBytes
            self.maximumPostBytes = maximumPostBytes
            self.outboundQueueLimit = outboundQueueLimit
            self.backpressure = backpressure
            self.checkInterval = checkInterval
            self.busyTimeout = busyTimeout
            self.retryBackoff = retryBackoff
            self.authenticationKey = authenticationKey
            self.metricsFactory = metricsFactory
            self.presence = presence
            self.heartbeatInterval = heartbeatInterval
        }
    }

    /// Whose positions a relayed type's mail carries: this mailroom's own, or the database's,
    /// which every process on the host shares.
    ///
    /// A struct rather than an enum, so that a kind added later breaks no one's `switch`.
    public struct Positions: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable { case local, hostWide }
        let base: Base

        /// Positions of this mailroom's own (see `Mailroom.retainHistory`): delivered here at
        /// once, but a position is good only in the process that gave it. The default.
        public static let local = Positions(base: .local)
        /// The database's positions, the same in every process that shares the file: a client
        /// that comes back to any of them resumes where it left off, and a process that starts
        /// fills the type's history from the file. Posts of the type are delivered here, too,
        /// only once their row is committed and read back, in the file's order.
        public static let hostWide = Positions(base: .hostWide)

        public var description: String {
            switch base {
            case .local: "local"
            case .hostWide: "hostWide"
            }
        }
    }
}

@_spi(AsyncMailRelay) extension SQLiteRelay.Configuration: RelaySettings {}
