// Not inlinable: subscribing is not the hot path, and this keeps the overflow types out of the ABI.
extension Mailroom {
    /// Subscribes to mail of a type with a backlog: what happens when the consumer falls
    /// `backlog.limit` mails behind, instead of buffering without bound.
    ///
    /// Use it wherever mail feeds something that can stall, such as one WebSocket connection. The
    /// value picks the stream (see ``Backlog``):
    /// - ``Backlog/ending(past:)`` hands out a ``BoundedStream``: the worst a stalled consumer costs
    ///   is `limit` buffered mails, then its subscription is removed and its loop throws
    ///   ``BacklogLimitExceeded``; the post that ends it counts it in ``Receipt/ended``.
    /// - ``Backlog/droppingOldest(past:)`` and ``Backlog/droppingNewest(past:)`` hand out a
    ///   ``DroppingStream``: the consumer keeps its subscription, and its loop gets each loss in
    ///   order, with the exact count, as a ``Delivery/lost(_:)``; the posts count the same drops in
    ///   ``Receipt/dropped``.
    ///
    /// Choose the limit from the longest burst a consumer that *is* reading must absorb: mail is
    /// posted without waiting, so a burst of 1,000 posts to a room arrives faster than any
    /// network consumer takes it, and a limit under 1,000 would end, or drop mail for, a healthy
    /// client. The buffer holds mail, not bytes, so the memory bound is the limit times the mail
    /// size. A limit below zero is zero: the consumer must already be waiting for each mail.
    ///
    /// The subscription is live when this returns; `from`, `startingWithLatest` and `where` work
    /// as in ``subscribe(to:from:bufferingPolicy:startingWithLatest:where:)``. This is the form
    /// for one connection in one room:
    ///
    /// ```swift
    /// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby")), backlog: .ending(past: 4_096))
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, Stream>(
        to type: M.Type,
        from senders: Senders = .everyone,
        backlog: Backlog<M, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> Stream {
        backlog.stream { overflow in
            subscription(
                to: M.self,
                from: senders,
                bufferingPolicy: overflow.bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: overflow.endSignal,
                dropBuffer: overflow.dropBuffer
            )
        }
    }

    /// Subscribes to mail posted by any sender that is an `S`, handed over with its sender, with a
    /// backlog.
    ///
    /// Senders match as in ``subscribe(to:fromAny:bufferingPolicy:startingWithLatest:where:)``;
    /// the backlog works as in ``subscribe(to:from:backlog:startingWithLatest:where:)``.
    ///
    /// ```swift
    /// let moves = await mailroom.subscribe(to: Moved.self, fromAny: Player.self, backlog: .ending(past: 256))
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable, Stream>(
        to type: M.Type,
        fromAny senderType: S.Type,
        backlog: Backlog<Envelope<M, S>, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> Stream {
        backlog.stream { overflow in
            subscription(
                to: M.self,
                fromAny: S.self,
                bufferingPolicy: overflow.bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: overflow.endSignal,
                dropBuffer: overflow.dropBuffer
            )
        }
    }

    /// Taps every post of every mail type with a backlog: what happens when a tap falls
    /// `backlog.limit` posted mails behind, instead of buffering without bound.
    ///
    /// Taps are never counted in receipts, so the post that ends or drops for one does not count
    /// it in ``Receipt/ended`` or ``Receipt/dropped`` either: the tap's loop is where the loss is
    /// seen (``BacklogLimitExceeded``, or a ``Delivery/lost(_:)``). Everything else works as in
    /// ``tap(bufferingPolicy:where:)``.
    ///
    /// ```swift
    /// let audit = await mailroom.tap(backlog: .ending(past: 10_000))
    /// ```
    public nonisolated(nonsending) func tap<Stream>(
        backlog: Backlog<PostedMail, Stream>,
        where isIncluded: (@Sendable (PostedMail) -> Bool)? = nil
    ) async -> Stream {
        backlog.stream { overflow in
            _switchboard.subscribe(
                Filing<NoMail, PostedMail>(
                    .tap,
                    bufferingPolicy: overflow.bufferingPolicy,
                    accepts: isIncluded,
                    endSignal: overflow.endSignal,
                    dropBuffer: overflow.dropBuffer
                )
            )
        }
    }
}
