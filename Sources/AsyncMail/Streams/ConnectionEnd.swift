/// Why ``BoundedStream/serve(delivering:receiving:)`` returned: which end of the connection
/// ended first.
///
/// Whatever the case, by the time it is returned both ends have stopped and the subscription
/// has been removed. A server uses it to close the connection with a fitting reason:
///
/// ```swift
/// switch end {
/// case .backlogLimitExceeded: try await socket.close(code: .tryAgainLater)
/// case .subscriptionEnded, .cancelled: try await socket.close(code: .goingAway)
/// case .inboundEnded, .failed: break  // the client is gone already
/// }
/// ```
public enum ConnectionEnd: Sendable, CustomStringConvertible {
    /// `receiving` returned: the client closed the connection or stopped sending.
    case inboundEnded
    /// The consumer fell more than the stream's backlog limit behind, so its subscription ended.
    case backlogLimitExceeded(BacklogLimitExceeded)
    /// The subscription ended: the mailroom closed, or the object sender it was pinned to is gone.
    case subscriptionEnded
    /// The task running `serve` was cancelled, as a service group does at shutdown.
    case cancelled
    /// `delivering` or `receiving` threw this error, such as a write to a closed socket.
    case failed(any Error)

    public var description: String {
        switch self {
        case .inboundEnded: "inbound ended"
        case .backlogLimitExceeded(let error): "backlog limit of \(error.limit) exceeded"
        case .subscriptionEnded: "subscription ended"
        case .cancelled: "cancelled"
        case .failed(let error): "failed: \(error)"
        }
    }
}
