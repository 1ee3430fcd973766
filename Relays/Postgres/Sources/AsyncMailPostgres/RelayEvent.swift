/// Something a relay did or met, for monitoring; every event is also logged and counted in
/// ``RelayCounters``.
public enum RelayEvent: Sendable, Hashable, CustomStringConvertible {
    /// The listening connection is up and `LISTEN` is in place (after the first connect and after
    /// every reconnect). In durable mode, what was missed meanwhile has been caught up.
    case listening
    /// A connection was lost or could not be made; the relay reconnects with backoff.
    case disconnected(reason: String)
    /// Mail from `origin` never arrived: exactly `missing` mails, known from the origin's
    /// numbering. Ephemeral mode: lost in transit (a disconnect, a failed publish, a spilled
    /// row read too late). Durable mode: deleted by the retention before this relay read it.
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
    /// A received payload was not one a relay sends, and was dropped: not JSON or the wrong
    /// shape, a number or count out of range or inconsistent, a signature that does not verify
    /// (with ``PostgresRelay/Configuration/authenticationKey`` set), a spill notice whose row
    /// does not match it, or a row larger than ``PostgresRelay/Configuration/maximumPostBytes``.
    /// Anything that can `NOTIFY` on the channel, or write the table, can send such a payload.
    case rejected(reason: String)

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
        case .rejected(let reason): "rejected a received payload: \(reason)"
        }
    }

    /// The event's case, without its values.
    enum Kind: Sendable, Hashable {
        case listening, disconnected, gap, publishFailed, oversize, unknownType, decodeFailed, queueOverflow, rejected
    }

    var kind: Kind {
        switch self {
        case .listening: .listening
        case .disconnected: .disconnected
        case .gap: .gap
        case .publishFailed: .publishFailed
        case .oversize: .oversize
        case .unknownType: .unknownType
        case .decodeFailed: .decodeFailed
        case .queueOverflow: .queueOverflow
        case .rejected: .rejected
        }
    }
}
