@_spi(AsyncMailInternal) import AsyncMail
@_spi(AsyncMailRelay) import RelayWire

/// A relay that could not start, or a flush that could not promise publication.
///
/// Switch over ``code``; codes may be added in any release, so such a `switch` keeps a
/// `default`. Each error compares equal to the one made by the factory of the same name, which
/// is what a test expects:
///
/// ```swift
/// do {
///     try await relay.flush()
/// } catch let error as RelayError where error.code == .notRelayed {
///     logger.warning("\(error.mails ?? 0) mails were not relayed")
/// }
/// ```
public struct RelayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. A struct rather than an enum, so that a code added later breaks no
    /// one's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable {
            case tableSetupFailed, notRunning, notRelayed
        }

        let base: Base

        /// The durable mode's table could not be created or read: ``RelayError/table``,
        /// ``RelayError/reason``.
        public static let tableSetupFailed = Code(base: .tableSetupFailed)
        /// `flush()` was called while the relay was not running, or it stopped first.
        public static let notRunning = Code(base: .notRunning)
        /// `flush()`: ``RelayError/mails`` posted since the previous flush were
        /// given up.
        public static let notRelayed = Code(base: .notRelayed)

        public var description: String {
            switch base {
            case .tableSetupFailed: "tableSetupFailed"
            case .notRunning: "notRunning"
            case .notRelayed: "notRelayed"
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// The table that could not be set up (``Code/tableSetupFailed``).
    public let table: String?
    /// Why: in the database's words (``Code/tableSetupFailed``), or the error the relay
    /// stopped on (``Code/notRunning``, when it stopped on one).
    public let reason: String?
    /// How many mails were given up (``Code/notRelayed``).
    public let mails: Int?

    private init(_ code: Code, table: String? = nil, reason: String? = nil, mails: Int? = nil) {
        self.code = code
        self.table = table
        self.reason = reason
        self.mails = mails
    }

    /// The durable mode's table could not be created or read; often the role lacks `CREATE` on
    /// the schema. Create it beforehand with the statement in *Across Processes and Machines*.
    public static func tableSetupFailed(table: String, reason: String) -> RelayError {
        RelayError(.tableSetupFailed, table: table, reason: reason)
    }

    /// `flush()` was called while the relay was not running, or it stopped first.
    public static let notRunning = RelayError(.notRunning)

    /// `flush()` was called after the relay stopped on an error, or the relay stopped on one
    /// first: ``reason`` is that error, which `run()` threw too. The code is
    /// ``Code/notRunning``.
    public static func stopped(reason: String) -> RelayError {
        RelayError(.notRunning, reason: reason)
    }

    /// `flush()`: this many mails posted since the previous flush returned were
    /// given up (too large, the outbound queue full, or dropped by a failed ephemeral publish),
    /// each also reported as its ``RelayEvent``. The count may include mail posted while the
    /// flush waited. Each mail given up is counted once, whatever positions its type has.
    ///
    /// Where the queue was full, the description names the fixes: a larger
    /// `outboundQueueLimit` in the relay's configuration, or posts that wait for room (an
    /// asynchronous `post` with `backpressure` `.wait(atMost:)`, the default, rather than
    /// `postSynchronously` or `.drop`).
    public static func notRelayed(mails: Int) -> RelayError {
        RelayError(.notRelayed, mails: mails)
    }

    /// What happened, and what to do about it.
    public var description: String {
        switch code.base {
        case .tableSetupFailed:
            "could not set up the relay table \(table ?? "?"): \(reason ?? "no reason given"). Grant the role "
                + "CREATE on the schema, or create the table beforehand (see Across Processes and Machines)"
        case .notRunning:
            if let reason {
                "the relay stopped: \(reason). run() threw this error too; flush waits only while run() runs"
            } else {
                "the relay is not running: flush only while run() is running (a service group starts it)"
            }
        case .notRelayed:
            "\(counting(mails ?? 0, "mail")) posted since the last flush \(mails == 1 ? "was" : "were") not relayed (too large, the outbound queue "
                + "full, or dropped by a failed publish); each was reported as a RelayEvent and counted. If the queue was full "
                + "(RelayEvent.queueOverflow), raise the configuration's outboundQueueLimit, or let posts wait for room: "
                + "await post (not postSynchronously) with backpressure .wait(atMost:), the default, not .drop"
        }
    }
}
