/// Something a relay did or met, for monitoring; every event is also logged and counted in
/// ``RelayCounters``.
public enum RelayEvent: Sendable, Hashable, CustomStringConvertible {
    /// The listening connection is up and `LISTEN` is in place (after the first connect and after
    /// every reconnect). In durable mode, what was missed meanwhile has been caught up.
    case listening
    /// A connection was lost or could not be made; the relay reconnects with backoff.
    case disconnected(reason: String)
    /// Ephemeral mode: mail from `origin` was lost in transit, exactly `missing` mails.
    case gap(origin: String, missing: Int)
    /// Publishing failed; durable mode retries the same mail after reconnecting, ephemeral mode
    /// drops it and says how many mails that was.
    case publishFailed(reason: String, mails: Int)
    /// A mail larger than ``PostgresRelay/Configuration/maximumMailBytes`` was not relayed (it was
    /// still delivered locally).
    case oversize(type: String, bytes: Int)
    /// Received mail of a wire name this process has not registered (a rolling deploy); skipped.
    case unknownType(String)
    /// Received mail that did not decode as its registered type; skipped.
    case decodeFailed(type: String, reason: String)
    /// The outbound queue was full, so this many posts were not relayed.
    case queueOverflow(posts: Int)

    public var description: String {
        switch self {
        case .listening: "listening"
        case .disconnected(let reason): "disconnected: \(reason)"
        case .gap(let origin, let missing): "gap: \(missing) mails from \(origin) lost"
        case .publishFailed(let reason, let mails): "publishing \(mails) mails failed: \(reason)"
        case .oversize(let type, let bytes): "oversize: a \(type) of \(bytes) bytes was not relayed"
        case .unknownType(let name): "unknown wire type \"\(name)\""
        case .decodeFailed(let type, let reason): "a \(type) failed to decode: \(reason)"
        case .queueOverflow(let posts): "outbound queue full: \(posts) posts not relayed"
        }
    }
}
