extension Mailroom {
    /// Calls `handler` with every mail of a type, for as long as `owner` is alive.
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
    /// - Once the owner is deallocated the observation ends, no later than the next matching
    ///   post. You need not keep the returned ``Observation``, and discarding it does not stop
    ///   anything; call ``Observation/cancel()`` to stop earlier.
    /// - `bufferingPolicy`, `startingWithLatest` and `where` work as for
    ///   ``subscribe(to:bufferingPolicy:startingWithLatest:where:)``.
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        owner: Owner,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        let subscription = subscription(
            to: M.self,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: isIncluded
        )
        return Observation.start(subscription, owner: owner, handler: handler)
    }

    /// Calls `handler` with mail posted by one object or actor (matched by identity), for as
    /// long as `owner` is alive. Both are held weakly.
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, S: AnyObject & Sendable, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        from sender: S,
        owner: Owner,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        let subscription = subscription(
            to: M.self,
            fromObject: sender,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: isIncluded
        )
        return Observation.start(subscription, owner: owner, handler: handler)
    }

    /// Calls `handler` with mail posted by one object that is also `Hashable` (matched by
    /// identity, never `==`), for as long as `owner` is alive.
    @discardableResult
    public nonisolated(nonsending) func observe<
        M: Mail,
        S: AnyObject & Hashable & Sendable,
        Owner: AnyObject & Sendable
    >(
        _ type: M.Type,
        from sender: S,
        owner: Owner,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        let subscription = subscription(
            to: M.self,
            fromObject: sender,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: isIncluded
        )
        return Observation.start(subscription, owner: owner, handler: handler)
    }

    /// Calls `handler` with mail posted with a sender value equal to this one (such as a room
    /// id), for as long as `owner` is alive.
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, S: Hashable & Sendable, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        from sender: S,
        owner: Owner,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy = .unbounded,
        startingWithLatest: Bool = false,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, M) async -> Void
    ) async -> Observation {
        let subscription = subscription(
            to: M.self,
            from: sender,
            bufferingPolicy: bufferingPolicy,
            startingWithLatest: startingWithLatest,
            where: isIncluded
        )
        return Observation.start(subscription, owner: owner, handler: handler)
    }

    /// Calls `handler` with an ``Envelope`` for mail posted by any sender of a type, for as long
    /// as `owner` is alive.
    @discardableResult
    public nonisolated(nonsending) func observe<M: Mail, S: Sendable, Owner: AnyObject & Sendable>(
        _ type: M.Type,
        from senderType: S.Type,
        owner: Owner,
        bufferingPolicy: AsyncStream<Envelope<M, S>>.Continuation.BufferingPolicy = .unbounded,
        where isIncluded: (@Sendable (M) -> Bool)? = nil,
        handler: @escaping @isolated(any) @Sendable (Owner, Envelope<M, S>) async -> Void
    ) async -> Observation {
        let subscription = subscription(
            to: M.self,
            from: S.self,
            bufferingPolicy: bufferingPolicy,
            where: isIncluded
        )
        return Observation.start(subscription, owner: owner, handler: handler)
    }
}
