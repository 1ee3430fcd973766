/// What a subscription does when its consumer falls behind: how much mail it buffers, and what
/// happens past that. The value picks the stream `subscribe` hands out.
///
/// - ``ending(past:)``: past the limit the subscription ends, and its loop throws
///   ``BacklogLimitExceeded`` (a ``BoundedStream``). For a consumer that can come back and resume
///   by position, such as a WebSocket client: nothing it gets has a hole in it.
/// - ``droppingOldest(past:)`` and ``droppingNewest(past:)``: past the limit the subscription
///   drops mail and keeps going, and tells each loss in its loop, in order, with the exact count
///   (a ``DroppingStream`` of ``Delivery``). For a consumer that would rather keep up than be
///   ended: a live dashboard, a game's positions.
///
/// The limit counts mail, not bytes; a limit below zero is zero (the consumer must already be
/// waiting for each mail). Choose it from the longest burst a consumer that *is* reading must
/// absorb: mail is posted without waiting.
///
/// ```swift
/// let ended = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .ending(past: 4_096))
/// let dropping = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .droppingOldest(past: 256))
/// ```
public struct Backlog<Element: Sendable, Stream: AsyncSequence & Sendable>: Sendable where Stream.Element: Sendable {
    /// The most mail the subscription buffers for a consumer that is behind.
    public let limit: Int
    /// Makes each subscription's overflow, fresh.
    private let overflow: @Sendable () -> BacklogOverflow<Element>
    /// Makes the stream handed out from the subscription and its overflow.
    private let wrap: @Sendable (RegisteredStream<Element>, BacklogOverflow<Element>) -> Stream
    /// Makes what an observation's loop reads from them: the same elements as the stream's.
    private let feed: @Sendable (RegisteredStream<Element>, BacklogOverflow<Element>) -> ObservationFeed<Stream.Element>

    private init(
        limit: Int,
        overflow: @escaping @Sendable () -> BacklogOverflow<Element>,
        wrap: @escaping @Sendable (RegisteredStream<Element>, BacklogOverflow<Element>) -> Stream,
        feed:
            @escaping @Sendable (RegisteredStream<Element>, BacklogOverflow<Element>) -> ObservationFeed<Stream.Element>
    ) {
        self.limit = max(limit, 0)
        self.overflow = overflow
        self.wrap = wrap
        self.feed = feed
    }

    /// Files one subscription with `subscribe`, given this backlog's overflow for it, and hands
    /// out its stream.
    func stream<Failure: Error>(
        _ subscribe: (BacklogOverflow<Element>) throws(Failure) -> RegisteredStream<Element>
    ) throws(Failure) -> Stream {
        let overflow = overflow()
        return wrap(try subscribe(overflow), overflow)
    }

    /// Files one subscription with `subscribe`, as ``stream(_:)`` does, for an observation.
    func observationFeed(
        _ subscribe: (BacklogOverflow<Element>) -> RegisteredStream<Element>
    ) -> ObservationFeed<Stream.Element> {
        let overflow = overflow()
        return feed(subscribe(overflow), overflow)
    }
}

extension Backlog where Stream == BoundedStream<Element> {
    /// Past `limit` buffered mails, the subscription ends: the post that finds the buffer full
    /// counts it in ``Receipt/ended``, and the consumer's loop throws ``BacklogLimitExceeded``.
    ///
    /// ```swift
    /// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .ending(past: 4_096))
    /// ```
    public static func ending(past limit: Int) -> Self {
        let limit = max(limit, 0)
        return Self(limit: limit) {
            .end(EndSignal(limit: limit))
        } wrap: { registered, overflow in
            guard case .end(let endSignal) = overflow else {
                preconditionFailure("a bounded stream's overflow ends it")
            }
            return BoundedStream(registered, endSignal: endSignal)
        } feed: { registered, overflow in
            ObservationFeed(registered, endSignal: overflow.endSignal)
        }
    }
}

extension Backlog where Stream == DroppingStream<Element> {
    /// Past `limit` buffered mails, each new mail evicts the oldest buffered one: the consumer
    /// always gets the newest mail, and a ``Delivery/lost(_:)`` where the evicted mail stood.
    /// Each eviction is counted in the post's ``Receipt/dropped``.
    ///
    /// ```swift
    /// let prices = await mailroom.subscribe(to: Price.self, backlog: .droppingOldest(past: 100))
    /// ```
    public static func droppingOldest(past limit: Int) -> Self {
        dropping(past: limit, policy: .dropOldest)
    }

    /// Past `limit` buffered mails, new mail is dropped until the consumer makes room: the
    /// consumer gets the buffered mail, then a ``Delivery/lost(_:)`` with how many were dropped,
    /// then what came after. Each dropped mail is counted in the post's ``Receipt/dropped``.
    ///
    /// ```swift
    /// let jobs = await mailroom.subscribe(to: Job.self, backlog: .droppingNewest(past: 1_000))
    /// ```
    public static func droppingNewest(past limit: Int) -> Self {
        dropping(past: limit, policy: .dropNewest)
    }

    private static func dropping(
        past limit: Int,
        policy: DropBufferMachine<Element, DropBuffer<Element>.Waiter>.Policy
    )
        -> Self
    {
        let limit = max(limit, 0)
        return Self(limit: limit) {
            .drop(DropBuffer(limit: limit, policy: policy))
        } wrap: { registered, overflow in
            guard case .drop(let dropBuffer) = overflow else {
                preconditionFailure("a dropping stream's overflow drops")
            }
            return DroppingStream(registered, buffer: dropBuffer)
        } feed: { registered, overflow in
            guard case .drop(let dropBuffer) = overflow else {
                preconditionFailure("a dropping stream's overflow drops")
            }
            // The subscription's own stream carries only the end: the elements come from the buffer.
            return ObservationFeed(
                subscription: registered._continuation,
                elements: AsyncStream(unfolding: { await dropBuffer.next() }),
                weight: { $0.loss?.count ?? 1 },
                holding: registered._stream
            )
        }
    }
}
