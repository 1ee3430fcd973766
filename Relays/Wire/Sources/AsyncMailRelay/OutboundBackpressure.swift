/// What an asynchronous `post` of a relayed type does while the relay's outbound queue is full:
/// wait for room (the default), or go on at once and leave its mail unrelayed.
///
/// The queue holds mail posted but not yet taken by the writer; its size is the relay
/// configuration's `outboundQueueLimit`. While it is full:
///
/// - `.wait(atMost:)`: `await mailroom.post(…)` waits until the writer takes what is queued, as
///   a Kafka producer blocks, so a burst is written whole, only as fast as the database takes
///   it. Posts that wait are let in first come, first served. A post that has waited the whole
///   limit, or whose task is cancelled, goes on without room, as `.drop` does. Subscribers in
///   this process hear the post once it is made, not before.
/// - `.drop`: the post is made at once; its mail is delivered in this process but not relayed.
///
/// Either way, mail that is not relayed is counted: `RelayEvent.queueOverflow(posts:)`, the
/// `queueOverflow` counter, and the next `flush()`, which throws `RelayError.notRelayed(mails:)`.
/// `postSynchronously` cannot wait, so it behaves as `.drop` under both.
///
/// A struct rather than an enum, so that a policy added later breaks no one's `switch`.
///
/// ```swift
/// var configuration = SQLiteRelay.Configuration()
/// configuration.backpressure = .wait(atMost: .seconds(5))  // or .drop
/// ```
public struct OutboundBackpressure: Sendable, Hashable, CustomStringConvertible {
    enum Base: Sendable, Hashable {
        case wait(Duration)
        case drop
    }

    let base: Base

    /// An asynchronous post waits for room, at most `limit`, then goes on without it.
    public static func wait(atMost limit: Duration) -> OutboundBackpressure {
        OutboundBackpressure(base: .wait(max(limit, .zero)))
    }

    /// A post never waits: while the queue is full its mail stays local, and is counted.
    public static let drop = OutboundBackpressure(base: .drop)

    /// How long an asynchronous post waits for room: nil for `.drop`.
    @_spi(AsyncMailRelay) public var waitLimit: Duration? {
        if case .wait(let limit) = base { limit } else { nil }
    }

    public var description: String {
        switch base {
        case .wait(let limit): "wait(atMost: \(limit))"
        case .drop: "drop"
        }
    }
}
