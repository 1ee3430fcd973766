extension Mailroom {
    /// Calls `handler` with mail of a type, for as long as `owner` is alive.
    ///
    /// For code that wants a callback rather than a loop. The owner (any object, actor or
    /// `@MainActor` class) is held weakly and passed to the handler strongly:
    ///
    /// ```swift
    /// await mailroom.observe(Ping.self, owner: self) { owner, ping in
    ///     await owner.handle(ping)
    /// }
    /// ```
    ///
    /// - The subscription is live when this returns.
    /// - Calls run one at a time, in posting order; a handler isolated to an actor (such as
    ///   `@MainActor`) runs there.
    /// - Under a mailroom with a ``MailroomInstrumentation``, each call runs inside the context its
    ///   mail was posted in (a `ServiceContext`, with AsyncMailObservability), so the handler
    ///   continues the poster's trace. With `.bufferingNewest` it does not: a buffer that evicts
    ///   mail cannot keep each mail's context beside it.
    /// - Once the owner is deallocated the observation ends, no later than the next matching
    ///   post. You need not keep the returned ``Observation``, and discarding it does not stop
    ///   anything; call ``Observation/cancel()`` to stop earlier.
    /// - `from`, `bufferingPolicy`, `startingWithLatest` and `where` work as for
    ///   ``subscribe(to:from:bufferingPolicy:startingWithLatest:where:)``.
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        owner: Owner,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        let progress = ObservationProgress()
        let subscription = subscription(
            to: M.self,
            from: senders,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: progress.counting(isIncluded),
            handsOnContext: bufferingPolicy.neverEvicts
        )
        return Observation.start(subscription, progress: progress, owner: owner, handler: handler)
    }

    /// Calls `handler` with mail of a type for as long as `owner` is alive, with a backlog: what
    /// happens once the handler falls `backlog.limit` mails behind.
    ///
    /// With ``Backlog/ending(past:)`` the observation ends: the post that finds the backlog full
    /// counts it in ``Receipt/ended``, no handler call starts afterwards, and
    /// ``Observation/exceededBacklogLimit`` is `true`. With ``Backlog/droppingOldest(past:)`` or
    /// ``Backlog/droppingNewest(past:)`` it goes on, and the handler is called with each
    /// ``Delivery``: the mails, and each loss in order with its exact count. The limit works as in
    /// ``subscribe(to:from:backlog:startingWithLatest:where:)``; everything else as in
    /// ``observe(_:from:owner:bufferingPolicy:startingWithLatest:where:handler:)``.
    ///
    /// ```swift
    /// await mailroom.observe(ChatLine.self, from: .only(room), owner: connection, backlog: .ending(past: 1_024)) {
    ///     connection, line in await connection.send(line)
    /// }
    /// ```
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, Owner: AnyObject & Sendable, Stream>(
        _ type: M.Type,
        from senders: Senders = .everyone,
        owner: Owner,
        backlog: Backlog<M, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Stream.Element) async -> Void
    ) async -> Observation {
        let progress = ObservationProgress()
        let feed = backlog.observationFeed { overflow in
            subscription(
                to: M.self,
                from: senders,
                bufferingPolicy: overflow.bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: progress.counting(isIncluded),
                endSignal: overflow.endSignal,
                dropBuffer: overflow.dropBuffer
            )
        }
        return Observation.start(feed, progress: progress, owner: owner, handler: handler)
    }

    /// Calls `handler` with an ``Envelope`` for mail posted by any sender that is an `S`, for as
    /// long as `owner` is alive.
    ///
    /// Senders match as in ``subscribe(to:fromAny:bufferingPolicy:startingWithLatest:where:)``;
    /// everything else works as in ``observe(_:from:owner:bufferingPolicy:startingWithLatest:where:handler:)``.
    ///
    /// ```swift
    /// await mailroom.observe(Moved.self, fromAny: Player.self, owner: board) { board, envelope in
    ///     await board.move(envelope.sender, to: envelope.mail.square)
    /// }
    /// ```
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, S: Sendable, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        fromAny senderType: S.Type,
        owner: Owner,
        bufferingPolicy: AsyncStream<Envelope<M, S>>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Envelope<M, S>) async -> Void
    ) async -> Observation {
        let progress = ObservationProgress()
        let subscription = subscription(
            to: M.self,
            fromAny: S.self,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: progress.counting(isIncluded),
            handsOnContext: bufferingPolicy.neverEvicts
        )
        return Observation.start(subscription, progress: progress, owner: owner, handler: handler)
    }

    /// Calls `handler` with an ``Envelope`` for mail posted by any sender that is an `S`, for as
    /// long as `owner` is alive, with a backlog, as in
    /// ``observe(_:from:owner:backlog:startingWithLatest:where:handler:)``.
    ///
    /// ```swift
    /// await mailroom.observe(Moved.self, fromAny: Player.self, owner: board, backlog: .droppingOldest(past: 64)) {
    ///     board, delivery in await board.apply(delivery)
    /// }
    /// ```
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, S: Sendable, Owner: AnyObject & Sendable, Stream>(
        _ type: M.Type,
        fromAny senderType: S.Type,
        owner: Owner,
        backlog: Backlog<Envelope<M, S>, Stream>,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Stream.Element) async -> Void
    ) async -> Observation {
        let progress = ObservationProgress()
        let feed = backlog.observationFeed { overflow in
            subscription(
                to: M.self,
                fromAny: S.self,
                bufferingPolicy: overflow.bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: progress.counting(isIncluded),
                endSignal: overflow.endSignal,
                dropBuffer: overflow.dropBuffer
            )
        }
        return Observation.start(feed, progress: progress, owner: owner, handler: handler)
    }
}
