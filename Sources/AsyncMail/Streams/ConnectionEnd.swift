/// Why ``BoundedStream/serve(delivering:receiving:)`` returned: which end of the connection
/// ended first.
///
/// Whatever the ``code``, by the time it is returned both ends have stopped and the subscription
/// has been removed. A server uses it to close the connection with a fitting reason. Codes may be
/// added in any release, so a `switch` over them keeps a `default`:
///
/// ```swift
/// switch end.code {
/// case .backlogLimitExceeded: try await socket.close(code: .tryAgainLater)
/// case .inboundEnded, .failed: break  // the client is gone already
/// default: try await socket.close(code: .goingAway)  // subscription ended, cancelled, or newer
/// }
/// ```
public struct ConnectionEnd: Sendable, CustomStringConvertible {
    /// Which end ended first. A struct rather than an enum, so that a code added later breaks
    /// no one's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Sendable, Hashable {
            case inboundEnded, backlogLimitExceeded, subscriptionEnded, cancelled, failed
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// `receiving` returned: the client closed the connection or stopped sending.
        public static let inboundEnded = Code(.inboundEnded)
        /// The consumer fell more than the stream's backlog limit behind, so its subscription
        /// ended; ``ConnectionEnd/error`` is the ``BacklogLimitExceeded``.
        public static let backlogLimitExceeded = Code(.backlogLimitExceeded)
        /// The subscription ended: the mailroom closed, or the object sender it was pinned to is gone.
        public static let subscriptionEnded = Code(.subscriptionEnded)
        /// The task running `serve` was cancelled, as a service group does at shutdown.
        public static let cancelled = Code(.cancelled)
        /// `delivering` or `receiving` threw ``ConnectionEnd/error``, such as a write to a closed socket.
        public static let failed = Code(.failed)

        public var description: String {
            switch base {
            case .inboundEnded: "inbound ended"
            case .backlogLimitExceeded: "backlog limit exceeded"
            case .subscriptionEnded: "subscription ended"
            case .cancelled: "cancelled"
            case .failed: "failed"
            }
        }
    }

    /// Which end ended first.
    public let code: Code
    /// The error behind the end: what `delivering` or `receiving` threw for ``Code/failed``, the
    /// ``BacklogLimitExceeded`` for ``Code/backlogLimitExceeded``; nil otherwise.
    public let error: (any Error)?

    /// An end with `code`, and the error behind it if there is one; for a server's own tests of
    /// how it closes a connection.
    public init(_ code: Code, error: (any Error)? = nil) {
        self.code = code
        self.error = error
    }

    /// What ended, and the error behind it: "failed: connection reset", "backlog limit of 64
    /// exceeded", "cancelled".
    public var description: String {
        switch (code, error) {
        case (.backlogLimitExceeded, let error as BacklogLimitExceeded):
            "backlog limit of \(error.limit) exceeded"
        case (_, let error?):
            "\(code): \(error)"
        default:
            code.description
        }
    }
}
