extension Mailroom {
    /// Keeps recent mail of a type per room, with positions, so that a subscription can resume
    /// after the last mail its consumer saw.
    ///
    /// From now on every mail of the type gets a ``MailPosition`` in its *room*: the sender value
    /// or object it was posted from (mail posted with no sender is one more room). Each room keeps
    /// its own newest `count` mails, or those younger than `maxAge`, or both limits at once, so a
    /// busy room never pushes a quiet room's mail out. Each kept mail costs its own size plus a
    /// fixed overhead (its numbers and when it was posted; measured in `Benchmarks/README.md`), so
    /// memory is bounded by `count` times the rooms, or by the posting rate times `maxAge`. Age is
    /// checked whenever the room's history is used (a post to it, a resume, new limits), so an
    /// idle room's last mails stay kept until then, and are never replayed older than `maxAge`.
    /// An object room's history goes once its object has, since nobody can name the room any
    /// more: checked whenever the type's object rooms with kept mail double, as for
    /// ``retainLatest(_:)``, and on every ``subscriberCount(_:from:)``. Calling it again changes
    /// the limits, dropping what the new ones exclude. A type without history pays one atomic
    /// load and a bit test per post.
    ///
    /// A post of a type that keeps history takes the locks any post to its room takes, and no
    /// other: rooms of the type post in parallel. Its mail is numbered in the room in the order
    /// the room's subscribers hear it. Subscriptions that take positions are counted by
    /// ``subscriberCount(_:from:)`` as any subscription is.
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
    /// `position`: the room's kept mail after it, then live mail, with no gap and no mail twice,
    /// even while posts race this call.
    ///
    /// With `.only(room)`, positions are the room's: ``Resumption/start`` is the position the
    /// subscription starts after (the room's newest when it starts live; sequence 0 in a room
    /// nothing was posted to), so a client that heard nothing still has a position to come back
    /// with. With ``MailPosition/oldestKept`` it starts with everything the room keeps.
    ///
    /// With ``Senders/everyone`` the subscription hears every room, in the one order its posts
    /// were delivered in, and each mail carries the *type's* position, which counts the type's
    /// kept mail across rooms: `position` may be such a position (then it resumes with every
    /// room's kept mail after it, in that order), ``MailPosition/oldestKept``, or nil; a room's
    /// position throws ``PositionError/Code/severalRooms``. A gap there is ``HistoryGap/Code/expired``
    /// with `missed` exact: every type position after `position` is one mail of one room, so the
    /// ones no room keeps any more are counted.
    ///
    /// With `position` nil (the caller has none; a client's text is read with
    /// ``MailPosition/init(parsing:)``, which throws on a mangled one rather than giving nil) the
    /// subscription starts live, as `subscribe(to:from:)` does, but with positions. A position older than what the room keeps, or of another epoch (another
    /// mailroom, or this one before a restart), is not an error: ``Resumption/gap`` reports it,
    /// typed, with how many of the room's mails were missed where that is known, and the
    /// subscription goes on with what is kept. A position is untrusted input (it comes back from a
    /// client); one that no mail of this type and room in this mailroom can have had throws, and so
    /// does a type that keeps no history (``PositionError``).
    ///
    /// - Delivery: `from:` and `where:` filter the kept mail and the live mail alike; the order is
    ///   the positions' order, which every subscriber of the room shares.
    /// - Buffering: `bufferingPolicy` applies to live mail only. The replay is handed out ahead of
    ///   the live buffer, apart from it, so no limit on that buffer drops kept mail: resuming after
    ///   mail 1 of 1…5 with `.bufferingNewest(1)` while 6 and 7 are posted gives 2, 3, 4, 5, 7,
    ///   and the post of 7 counts 6 in its ``Receipt/dropped``.
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
    ) async throws -> Resumption<AsyncStream<Positioned<M>>> {
        let (gap, start, registered) = try subscribeWithPositions(
            M.self,
            from: senders,
            after: position,
            buffering: .policy(bufferingPolicy),
            where: isIncluded
        )
        return Resumption(gap: gap, start: start, mail: registered._stream)
    }

    /// Subscribes to a type that keeps history, with positions and a backlog: resumes as
    /// ``subscribe(to:from:after:bufferingPolicy:where:)`` does, and does what `backlog` says
    /// when the consumer falls `backlog.limit` live mails behind, as
    /// ``subscribe(to:from:backlog:startingWithLatest:where:)`` does: ends
    /// (``Backlog/ending(past:)``, a ``BoundedStream``), or drops and tells each loss in order
    /// (``Backlog/droppingOldest(past:)``, ``Backlog/droppingNewest(past:)``, a ``DroppingStream``).
    ///
    /// The replay does not count against the limit: a client coming back after a thousand lines
    /// gets them all, then the limit applies to what is posted while it reads. A bounded stream
    /// can be served with ``BoundedStream/serve(delivering:receiving:)``, as a connection serves
    /// its mail.
    ///
    /// ```swift
    /// let resumed = try await mailroom.subscribe(to: ChatLine.self, from: .only(room), after: lastSeen, backlog: .ending(past: 256))
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, Stream>(
        to type: M.Type,
        from senders: Senders = .everyone,
        after position: MailPosition?,
        backlog: Backlog<Positioned<M>, Stream>,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<Stream> {
        var resumed: (gap: HistoryGap?, start: MailPosition?) = (nil, nil)
        let stream = try backlog.stream { overflow throws(PositionError) in
            let (gap, start, registered) = try subscribeWithPositions(
                M.self,
                from: senders,
                after: position,
                buffering: .overflow(overflow),
                where: isIncluded
            )
            resumed = (gap, start)
            return registered
        }
        return Resumption(gap: resumed.gap, start: resumed.start, mail: stream)
    }

    /// Subscribes to a type that keeps history, hearing every sender that is an `S` (as
    /// ``subscribe(to:fromAny:bufferingPolicy:startingWithLatest:where:)`` does), with the type's
    /// positions: it hears several rooms, so it resumes as
    /// ``subscribe(to:from:after:bufferingPolicy:where:)`` does with ``Senders/everyone``, from
    /// the type's positions, ``MailPosition/oldestKept`` or nil. Kept mail of an object room whose
    /// object has gone is not replayed: there is no sender to hand over with it.
    ///
    /// ```swift
    /// let resumed = try await mailroom.subscribe(to: ChatLine.self, fromAny: RoomID.self, after: nil)
    /// for await line in resumed.mail { print(line.mail.sender, line.mail.mail.text, line.position) }
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        after position: MailPosition?,
        bufferingPolicy: AsyncStream<Positioned<Envelope<M, S>>>.Continuation.BufferingPolicy = .unbounded,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<AsyncStream<Positioned<Envelope<M, S>>>> {
        let (gap, start, registered) = try _switchboard.subscribeWithPositions(
            to: M.self,
            fromAny: S.self,
            after: position,
            buffering: .policy(bufferingPolicy),
            accepts: isIncluded.map { isIncluded in { isIncluded($0.mail) } }
        )
        return Resumption(gap: gap, start: start, mail: registered._stream)
    }

    /// ``subscribe(to:fromAny:after:bufferingPolicy:where:)`` with a backlog: the stream ends, or
    /// drops and tells, as ``subscribe(to:from:after:backlog:where:)``'s does when the consumer
    /// falls `backlog.limit` live mails behind; the replay does not count against the limit.
    ///
    /// ```swift
    /// let resumed = try await mailroom.subscribe(to: ChatLine.self, fromAny: RoomID.self, after: nil, backlog: .ending(past: 256))
    /// ```
    public nonisolated(nonsending) func subscribe<M: Mail, S: Sendable, Stream>(
        to type: M.Type,
        fromAny senderType: S.Type,
        after position: MailPosition?,
        backlog: Backlog<Positioned<Envelope<M, S>>, Stream>,
        where isIncluded: (@Sendable (M) -> Bool)? = nil
    ) async throws -> Resumption<Stream> {
        var resumed: (gap: HistoryGap?, start: MailPosition?) = (nil, nil)
        let stream = try backlog.stream { overflow throws(PositionError) in
            let (gap, start, registered) = try _switchboard.subscribeWithPositions(
                to: M.self,
                fromAny: S.self,
                after: position,
                buffering: .overflow(overflow),
                accepts: isIncluded.map { isIncluded in { isIncluded($0.mail) } }
            )
            resumed = (gap, start)
            return registered
        }
        return Resumption(gap: resumed.gap, start: resumed.start, mail: stream)
    }

    private nonisolated func subscribeWithPositions<M: Mail>(
        _ type: M.Type,
        from senders: Senders,
        after position: MailPosition?,
        buffering: Switchboard.PositionedBuffering<M>,
        where isIncluded: (@Sendable (M) -> Bool)?
    ) throws(PositionError) -> (HistoryGap?, MailPosition?, RegisteredStream<Positioned<M>>) {
        switch senders._kind {
        case .everyone:
            return try _switchboard.subscribeWithPositions(
                toEvery: M.self,
                after: position,
                buffering: buffering,
                accepts: isIncluded
            )
        case .object(let object):
            return try _switchboard.subscribeWithPositions(
                to: M.self,
                room: .object(ObjectSender(object)),
                pinning: object,
                after: position,
                buffering: buffering,
                accepts: isIncluded
            )
        case .value(let value):
            return try _switchboard.subscribeWithPositions(
                to: M.self,
                room: .value(value),
                pinning: nil,
                after: position,
                buffering: buffering,
                accepts: isIncluded
            )
        }
    }
}
