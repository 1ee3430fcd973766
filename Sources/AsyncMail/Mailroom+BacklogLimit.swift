// Not inlinable: subscribing is not the hot path, and this keeps `EndSignal` out of the ABI.
extension Mailroom {
    /// Subscribes to every mail of a type with a backlog limit: a consumer that falls
    /// `backlogLimit` mails behind is ended instead of buffering without bound.
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
    /// The subscription is live when this returns; the other parameters are those of
    /// ``subscribe(to:bufferingPolicy:startingWithLatest:where:)``.
    ///
    /// ```swift
    /// let orders = await mailroom.subscribe(to: OrderPlaced.self, backlogLimit: 1_024)
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail>(
        to type: M.Type,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<M> {
        bounded(backlogLimit) { bufferingPolicy, endSignal in
            subscription(
                to: M.self,
                bufferingPolicy: bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: endSignal
            )
        }
    }

    /// Subscribes to mail from one sender value, such as a room id, with a backlog limit.
    ///
    /// The sender matches exactly as in ``subscribe(to:from:bufferingPolicy:startingWithLatest:where:)-1kkxi``;
    /// the backlog limit works as in ``subscribe(to:backlogLimit:startingWithLatest:where:)``.
    /// This is the form for one connection in one room:
    ///
    /// ```swift
    /// let inbox = await mailroom.subscribe(to: ChatLine.self, from: RoomID("lobby"), backlogLimit: 4_096)
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, S: Hashable & Sendable>(
        to type: M.Type,
        from sender: S,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<M> {
        bounded(backlogLimit) { bufferingPolicy, endSignal in
            subscription(
                to: M.self,
                from: sender,
                bufferingPolicy: bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: endSignal
            )
        }
    }

    /// Subscribes to mail from one object or actor, matched by identity, with a backlog limit.
    ///
    /// The sender is held weakly, exactly as in the unbounded form; once it has gone, the stream
    /// ends without an error. The backlog limit works as in
    /// ``subscribe(to:backlogLimit:startingWithLatest:where:)``.
    ///
    /// ```swift
    /// let fromLobby = await mailroom.subscribe(to: Joined.self, from: lobby, backlogLimit: 64)
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, S: AnyObject & Sendable>(
        to type: M.Type,
        from sender: S,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<M> {
        bounded(backlogLimit) { bufferingPolicy, endSignal in
            subscription(
                to: M.self,
                fromObject: sender,
                bufferingPolicy: bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: endSignal
            )
        }
    }

    /// Subscribes to mail from one object that is also `Hashable`, matched by identity, with a
    /// backlog limit; behaves exactly like the form for any object.
    public nonisolated(nonsending) func subscribe<M: Mail, S: AnyObject & Hashable & Sendable>(
        to type: M.Type,
        from sender: S,
        backlogLimit: Int,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async -> BoundedStream<M> {
        bounded(backlogLimit) { bufferingPolicy, endSignal in
            subscription(
                to: M.self,
                fromObject: sender,
                bufferingPolicy: bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: endSignal
            )
        }
    }

    /// The one way a bounded subscription is made: a limit below zero is zero, the stream buffers
    /// up to the limit, and the post that finds it full ends it (see ``EndSignal``).
    private nonisolated func bounded<M: Mail>(
        _ backlogLimit: Int,
        _ subscribe: (AsyncStream<M>.Continuation.BufferingPolicy, EndSignal) -> Subscription<M>
    ) -> BoundedStream<M> {
        let endSignal = EndSignal(limit: max(backlogLimit, 0))
        return BoundedStream(subscribe(.bufferingOldest(endSignal.limit), endSignal), endSignal: endSignal)
    }
}
