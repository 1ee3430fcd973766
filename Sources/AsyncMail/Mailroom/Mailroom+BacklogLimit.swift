// Not inlinable: subscribing is not the hot path, and this keeps `EndSignal` out of the ABI.
extension Mailroom {
    /// Subscribes to mail of a type with a backlog limit: a consumer that falls `backlogLimit`
    /// mails behind is ended instead of buffering without bound.
    ///
    /// Use it wherever mail feeds something that can stall, such as one WebSocket connection:
    /// the worst a stalled consumer costs is `backlogLimit` buffered mails, then its subscription
    /// is removed and its loop throws ``BacklogLimitExceeded`` (see ``BoundedStream``). The post
    /// that ends it counts it in ``Receipt/ended``. A limit below zero is treated as zero: the
    /// consumer must already be waiting for each mail.
    ///
    /// Choose the limit from the longest burst a consumer that *is* reading must absorb: mail is
    /// posted without waiting, so a burst of 1,000 posts to a room arrives faster than any
    /// network consumer takes it, and a limit under 1,000 would end a healthy client. The
    /// buffer holds mail, not bytes, so the memory bound is `backlogLimit` times the mail size.
    ///
    /// The subscription is live when this returns; `from`, `startingWithLatest` and `where` work
    /// as in ``subscribe(to:from:bufferingPolicy:startingWithLatest:where:)``. This is the form
    /// for one connection in one room:
    ///
    /// ```swift
    /// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby")), backlogLimit: 4_096)
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<M> {
        bounded(backlogLimit) { bufferingPolicy, endSignal in
            subscription(
                to: M.self,
                from: senders,
                bufferingPolicy: bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: endSignal
            )
        }
    }

    /// Subscribes to mail posted by any sender that is an `S`, handed over with its sender, with a
    /// backlog limit.
    ///
    /// Senders match as in ``subscribe(to:fromAny:bufferingPolicy:startingWithLatest:where:)``;
    /// the backlog limit works as in ``subscribe(to:from:backlogLimit:startingWithLatest:where:)``.
    ///
    /// ```swift
    /// let moves = await mailroom.subscribe(to: Moved.self, fromAny: Player.self, backlogLimit: 256)
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<Envelope<M, S>> {
        bounded(backlogLimit) { bufferingPolicy, endSignal in
            subscription(
                to: M.self,
                fromAny: S.self,
                bufferingPolicy: bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: endSignal
            )
        }
    }

    /// Taps every post of every mail type with a backlog limit: a tap that falls `backlogLimit`
    /// posted mails behind is ended instead of buffering without bound.
    ///
    /// Taps are never counted in receipts, so the post that ends one does not count it in
    /// ``Receipt/ended`` either: the tap's loop throws ``BacklogLimitExceeded``, which is where
    /// the loss is seen. Everything else works as in ``tap(bufferingPolicy:where:)``.
    ///
    /// ```swift
    /// let audit = await mailroom.tap(backlogLimit: 10_000)
    /// ```
    public nonisolated(nonsending) func tap(
        backlogLimit: Int,
        where isIncluded: (@Sendable (PostedMail) -> Bool)? = nil
    ) async -> BoundedStream<PostedMail> {
        bounded(backlogLimit) { bufferingPolicy, endSignal in
            _switchboard.subscribe(
                Filing<NoMail, PostedMail>(
                    .tap,
                    bufferingPolicy: bufferingPolicy,
                    accepts: isIncluded,
                    endSignal: endSignal
                )
            )
        }
    }

    /// The one way a bounded subscription is made: a limit below zero is zero, the stream buffers
    /// up to the limit, and the post that finds it full ends it (see ``EndSignal``).
    nonisolated func bounded<Element: Sendable>(
        _ backlogLimit: Int,
        _ subscribe: (AsyncStream<Element>.Continuation.BufferingPolicy, EndSignal) -> RegisteredStream<Element>
    ) -> BoundedStream<Element> {
        let endSignal = EndSignal(limit: max(backlogLimit, 0))
        return BoundedStream(subscribe(.bufferingOldest(endSignal.limit), endSignal), endSignal: endSignal)
    }
}
