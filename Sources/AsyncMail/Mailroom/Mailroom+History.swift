extension Mailroom {
    /// Keeps recent mail of a type, with positions, so that a subscription can resume after the
    /// last mail its consumer saw.
    ///
    /// From now on every mail of the type gets a ``MailPosition`` and the newest `count` of them,
    /// or those younger than `maxAge`, or both limits at once, are kept. Each kept mail costs its
    /// own size plus a fixed overhead (its sequence number, its sender and when it was posted;
    /// measured in `Benchmarks/README.md`), so memory is bounded by `count`, or by the posting rate
    /// times `maxAge`. Age is checked whenever the history is used (a post of the type, a resume,
    /// new limits), so an idle type's last mails stay kept until then, and are never replayed
    /// older than `maxAge`. Calling it again changes the limits, dropping what the new ones
    /// exclude. A type without history pays one atomic load and a bit test per post.
    ///
    /// Posts of a type that keeps history are delivered one at a time, in the order of their
    /// positions: rooms of the type no longer post apart, since a resuming subscription may hear
    /// them all. Subscriptions that take positions are counted by ``subscriberCount(_:from:)``.
    ///
    /// - Precondition: At least one limit, and a `count` of at least 1 or a positive `maxAge`.
    ///
    /// ```swift
    /// await mailroom.retainHistory(ChatLine.self, count: 1_000, maxAge: .seconds(600))
    /// ```
    public nonisolated(nonsending) func retainHistory<M: Mail>(
        _ type: M.Type,
        count: Int? = nil,
        maxAge: Duration? = nil
    ) async {
        precondition(
            count != nil || maxAge != nil,
            "retainHistory needs a count, a maxAge or both: memory must be bounded"
        )
        precondition(count.map { $0 >= 1 } ?? true, "retainHistory's count must be at least 1, not \(count ?? 0)")
        precondition(maxAge.map { $0 > .zero } ?? true, "retainHistory's maxAge must be positive")
        _switchboard.retainHistory(M.self, count: count, maxAge: maxAge)
    }

    /// Subscribes to a type that keeps history, with each mail's position, resuming after
    /// `position`: the kept mail after it, then live mail, with no gap and no mail twice, even
    /// while posts race this call.
    ///
    /// With `position` nil the subscription starts live, as `subscribe(to:from:)` does, but with
    /// positions. A position older than what the history keeps, or of another epoch (another
    /// mailroom, or this one before a restart), is not an error: ``Resumption/gap`` reports it,
    /// typed, with how many mails were missed where that is known, and the subscription goes on
    /// with what is kept. A position is untrusted input (it comes back from a client); one that no
    /// mail of this type in this mailroom can have had throws, and so does a type that keeps no
    /// history (``PositionError``).
    ///
    /// - Delivery: `from:` and `where:` filter the kept mail and the live mail alike; the order is
    ///   the positions' order, which every subscriber of the type shares.
    /// - Buffering: `bufferingPolicy` applies to live mail; the replay does not count against a
    ///   `.bufferingOldest` or `.bufferingNewest` limit, so no kept mail is dropped on the way.
    /// - Ending: like any subscription: cancelled, dropped, at ``close()``, or once the object it is
    ///   pinned to has gone (at the next post of the type, or the next count).
    ///
    /// ```swift
    /// let resumed = try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: lastSeen)
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        after position: MailPosition?,
        bufferingPolicy: AsyncStream<Positioned<M>>.Continuation.BufferingPolicy = .unbounded,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws(PositionError) -> Resumption<AsyncStream<Positioned<M>>> {
        let (gap, registered) = try _switchboard.subscribeWithPositions(
            to: M.self,
            pinnedTo: senders.key.map { .sender(HistorySender($0)) } ?? .everyone,
            after: position,
            buffering: .policy(bufferingPolicy),
            accepts: isIncluded
        )
        return Resumption(gap: gap, mail: registered._stream)
    }

    /// Subscribes to a type that keeps history, with positions and a backlog limit: resumes as
    /// ``subscribe(to:from:after:bufferingPolicy:where:)`` does, and ends as
    /// ``subscribe(to:from:backlogLimit:startingWithLatest:where:)`` does when the consumer falls
    /// `backlogLimit` live mails behind.
    ///
    /// The replay does not count against the limit: a client coming back after a thousand lines
    /// gets them all, then the limit applies to what is posted while it reads. The stream can be
    /// served with ``BoundedStream/serve(delivering:receiving:)``, as a connection serves its mail.
    ///
    /// ```swift
    /// let resumed = try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: lastSeen, backlogLimit: 256)
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail>(
        to type: M.Type,
        from senders: Senders = .everyone,
        after position: MailPosition?,
        backlogLimit: Int,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws(PositionError) -> Resumption<BoundedStream<Positioned<M>>> {
        let endSignal = EndSignal(limit: max(backlogLimit, 0))
        let (gap, registered) = try _switchboard.subscribeWithPositions(
            to: M.self,
            pinnedTo: senders.key.map { .sender(HistorySender($0)) } ?? .everyone,
            after: position,
            buffering: .bounded(endSignal),
            accepts: isIncluded
        )
        return Resumption(gap: gap, mail: BoundedStream(registered, endSignal: endSignal))
    }
}
