import Synchronization

extension Switchboard {
    /// How a subscription with positions buffers: by a policy, or with a backlog limit.
    @usableFromInline
    enum PositionedBuffering<Element: Sendable> {
        case policy(AsyncStream<Positioned<Element>>.Continuation.BufferingPolicy)
        /// A backlog's: ends past it, or drops and tells (the replay goes in ahead, apart from the limit).
        case overflow(BacklogOverflow<Positioned<Element>>)

        var policy: AsyncStream<Positioned<Element>>.Continuation.BufferingPolicy {
            switch self {
            case .policy(let chosen): chosen
            case .overflow(let overflow): overflow.bufferingPolicy
            }
        }

        var endSignal: EndSignal? {
            if case .overflow(let overflow) = self { overflow.endSignal } else { nil }
        }

        var dropBuffer: DropBuffer<Positioned<Element>>? {
            if case .overflow(let overflow) = self { overflow.dropBuffer } else { nil }
        }
    }

    // MARK: Posting

    /// A post of a type that may keep history (its bit in ``Histories`` is set): delivered as any
    /// post is, from the same table, shard lock, lanes and yield loop, and appended to its room's
    /// history in the same step that captures its recipients (see ``deliverKeepingHistory(_:_:from:key:context:positions:)``).
    /// Out of line: a type without history never comes here. Inlinable, so that the client's
    /// code specialises it for its mail and sender types: unspecialised, finding generic
    /// metadata was most of a history post's cost (`Benchmarks/README.md`).
    @inlinable @inline(never)
    func postKeepingHistory<M: Mail, S: Sendable>(_ mails: [M], from sender: S?, key: SenderKey) -> Receipt {
        guard let table = existingTable(for: M.self) else { return postUnkept(mails, from: sender, key: key) }
        let context = _instrumentation?.currentContext()
        let delivered = deliverKeepingHistory(table, mails, from: sender, key: key, context: context, positions: nil)
        switch delivered {
        case .delivered(let receipt):
            _instrumentation?.didPost(M.self, mails: mails.count, receipt: receipt)
            _deferred.run()
            return receipt
        case .routed:
            // A post the relay took is counted once, when the relay delivers it.
            _deferred.run()
            return Receipt()
        case .notKept:
            return postUnkept(mails, from: sender, key: key)
        }
    }

    /// A post of a type that keeps no history after all (it shares a bit with one that does), or
    /// that a relay could not carry: delivered as any post, without positions.
    @inlinable
    func postUnkept<M: Mail, S: Sendable>(_ mails: [M], from sender: S?, key: SenderKey) -> Receipt {
        deliverInOrder(
            M.self,
            from: sender,
            lookup: key.roomLookup,
            key: { key },
            recording: mails.last,
            mails: mails.count,
            deliver: {
                mails.count == 1
                    ? $0.deliver(mails[0], from: sender, context: $1)
                    : $0.deliver(contentsOf: mails, from: sender, context: $1)
            }
        )
    }

    /// What ``deliverKeepingHistory(_:_:from:key:context:positions:)`` did.
    @usableFromInline
    enum HistoryDelivery: Sendable {
        case delivered(Receipt)
        /// A relay took the post, to deliver it once its table has given it positions.
        case routed
        /// The type keeps no history, or a relay that routes it could not carry this post.
        case notKept
    }

    /// Delivers a post of a history-keeping type, or hands it to the relay that routes the type.
    ///
    /// Through ``inPostLanes(of:from:key:firstLook:beforeLanes:secondLook:deliver:)``, as
    /// ``deliverRecording(_:from:key:recording:context:deliver:)`` records the latest mail: in one
    /// step under its room's shard lock, holding its lanes, it appends its mail to the room's
    /// history (numbering it) and captures its recipients, those with positions too; it delivers
    /// holding the lanes. So every subscriber of the room, a resuming one too (which reads the
    /// history holding the room's lane), hears the room's mail in the order of its numbers, and
    /// posts to other rooms share no lock with it.
    ///
    /// `positions` is set for mail a relay's table numbered (see ``postPositioned(_:from:epoch:first:live:)``).
    @inlinable
    func deliverKeepingHistory<M: Mail, S: Sendable>(
        _ table: RouteTable<M>,
        _ mails: [M],
        from sender: S?,
        key: SenderKey,
        context: PostContext?,
        positions: (epoch: UInt64, first: UInt64, live: Bool)?
    ) -> HistoryDelivery {
        let departed = table.sweepAfterPost()
        defer { for continuation in departed { continuation.finish() } }
        // A room's digest runs the sender's `description`: worked out here, never under a lock.
        // Mail a relay's table numbered may make its room's history in the step below, so its
        // digest is worked out at once; a local post works it out only for a room without one.
        var digest: UInt32? = positions != nil ? RoomDigest.of(key) : nil
        let lookup = key.roomLookup  // where both looks find the room's kept mail
        var firstFound = KeptMail<M>.Found.none
        var needsDigest = true  // read under the lock: a post may set the room's digest
        var route: (@Sendable ([PostedMail]) -> Bool)?
        var found: KeptRoom<M>?
        var discarded = DiscardedMail<M>()
        // What the second look captured: the mail left to deliver (none: nothing of the post is
        // left), its positions and the recipients with positions.
        var kept: [M] = []
        var hole: UInt64 = 0  // mails of the room that never came, before these (a relay's hole)
        var record = HistoryRecord()
        var positioned = PositionedRecipients<M>()
        let delivered = inPostLanes(of: table, from: sender, key: key) { shard in
            guard let kept = shard._kept, table._historyLimits != nil else { return false }
            firstFound = kept.find(lookup, sender: sender)
            needsDigest = !firstFound.hasDigest
            route = table._diversion
            return true
        } beforeLanes: { () -> HistoryDelivery? in
            if positions == nil, let route {
                return routes(mails, from: sender, context: context, through: route) ? .routed : .notKept
            }
            found = firstFound.room(for: sender, lookup: lookup)
            if found == nil || needsDigest, digest == nil { digest = RoomDigest.of(key) }
            return nil
        } secondLook: { shard, room -> LaneAttempt<Void> in
            kept = []  // a look before this one may have set it (no mail's deinit: `mails` holds them)
            if let positions {
                guard
                    let prepared = table.prepare(
                        key: key,
                        epoch: positions.epoch,
                        first: positions.first,
                        count: mails.count,
                        digest: digest!,
                        in: shard,
                        discarding: &discarded
                    ), prepared.skip < mails.count || prepared.hole > 0
                else { return .done(()) }  // nothing of the post is left to deliver, or to tell
                hole = prepared.hole
                kept = Array(mails.dropFirst(prepared.skip))  // none, for a hole a relay moved past
            } else {
                kept = mails
            }
            guard
                let recorded = table.record(
                    kept,
                    key: key,
                    found: found,
                    digest: digest,
                    in: shard,
                    discarding: &discarded
                )
            else { return .stale }
            record = recorded
            if positions?.live != false {
                table.capturePositioned(from: sender, room: room, into: &positioned)
            }
            return .done(())
        } deliver: { recipients -> HistoryDelivery in
            guard positions?.live != false else { return .delivered(Receipt()) }
            if hole > 0 {
                // Told where it is, ahead of the mail after it, to each subscription that drops
                // and tells; the others learn it as a gap when they resume by position.
                let loss = MailLoss(code: .missed, count: Int(clamping: hole))
                recipients.tell(loss, from: sender)
                positioned.tell(loss)
            }
            guard !kept.isEmpty else { return .delivered(Receipt()) }
            var receipt = Receipt()
            for (offset, mail) in kept.enumerated() {
                receipt += recipients.deliverToSubscribers(mail, from: sender, context: context)
                positioned.deliver(
                    mail,
                    offset: UInt64(offset),
                    room: record._roomPosition,
                    type: record._typePosition,
                    context: context,
                    into: &receipt
                )
            }
            if let taps = recipients._taps {
                let subscribers = taps.subscribers
                for index in kept.indices {
                    recipients.tap(
                        kept[index],
                        from: sender,
                        context: context,
                        isLastInPost: index == kept.endIndex - 1,
                        to: subscribers
                    )
                }
            }
            return .delivered(receipt)
        }
        discarded.release(in: table)
        _ = (kept, positioned)  // released here, holding nothing: a mail's deinit is user code
        return delivered ?? .notKept  // retired, or the room's shard keeps no history
    }

    /// Hands a post to the relay that routes its type, holding the taps' lane so that it reaches
    /// the relay whole, as a tapped post does. True when the relay took it.
    @inlinable
    func routes<M: Mail, S: Sendable>(
        _ mails: [M],
        from sender: S?,
        context: PostContext?,
        through route: @Sendable ([PostedMail]) -> Bool
    ) -> Bool {
        let lane = _tapped._lane
        let posted = mails.indices.map { index in
            PostedMail(
                mail: mails[index],
                mailType: M.self,
                sender: sender,
                isLastInPost: index == mails.endIndex - 1,
                context: context ?? .none
            )
        }
        lane.lock()
        defer { lane.unlock() }
        return route(posted)
    }

    /// Posts mail whose positions a relay's table gave: `first` and on, in `epoch`, in the
    /// sender's room. What the room's history already has (a row read twice) is skipped; with
    /// `live` false the mail is only kept, for a relay filling the history as it starts.
    func postPositioned<M: Mail, S: Hashable & Sendable>(
        _ mails: [M],
        from sender: S?,
        epoch: UInt64,
        first: UInt64,
        live: Bool
    ) -> Receipt {
        if DeliveryScope.isDelivering(self) {
            return deferPost(count: mails.count) {
                $0.postPositioned(mails, from: sender, epoch: epoch, first: first, live: live)
            }
        }
        let key = sender.map { SenderKey(classifying: $0) } ?? .none
        guard let table = openTable(for: M.self) else { return Receipt() }
        if table.historyLimits == nil {
            keepHistory(M.self, table: table, limits: HistoryLimits(count: 0, maxAge: nil))
        }
        let context = _instrumentation?.currentContext()
        let delivered = deliverKeepingHistory(
            table,
            mails,
            from: sender,
            key: key,
            context: context,
            positions: (epoch, first, live)
        )
        guard case .delivered(let receipt) = delivered else { return Receipt() }
        if live { _instrumentation?.didPost(M.self, mails: mails.count, receipt: receipt) }
        _deferred.run()
        return receipt
    }

    // MARK: Keeping

    /// Makes a relay route every post of `M` through its table (`route`), or stops it (nil). A
    /// type that keeps no history gets one that keeps nothing, so that its mail has positions.
    func route<M: Mail>(_ type: M.Type, through route: (@Sendable ([PostedMail]) -> Bool)?) {
        guard let table = openTable(for: M.self) else { return }
        if table.historyLimits == nil {
            keepHistory(M.self, table: table, limits: HistoryLimits(count: 0, maxAge: nil))
        }
        let dropped = table.route(through: route, epoch: UInt64.random(in: 1...UInt64.max))
        _ = dropped  // released here, holding nothing
    }

    /// The limits of `M`'s history, if it keeps one: what a relay fills it with as it starts.
    func historyLimits<M: Mail>(_ type: M.Type) -> (count: Int?, maxAge: Duration?)? {
        guard let limits = existingTable(for: M.self)?.historyLimits, limits.count != 0 else { return nil }
        return (limits.count, limits.maxAge)
    }

    /// Makes `M` keep history within these limits, or changes its limits.
    func retainHistory<M: Mail>(_ type: M.Type, count: Int?, maxAge: Duration?) {
        guard let table = openTable(for: M.self) else { return }
        keepHistory(M.self, table: table, limits: HistoryLimits(count: count, maxAge: maxAge))
    }

    private func keepHistory<M: Mail>(_ type: M.Type, table: RouteTable<M>, limits: HistoryLimits) {
        let dropped = table.keepHistory(limits, epoch: _histories.epoch)
        _histories.keep(M.self)
        _ = dropped  // released here, holding nothing
    }

    // MARK: Subscribing

    /// Files a subscription with positions to one room (`key`, with `object` the room's object
    /// for an object room), resuming after `position` (nil: live), holding the room's lane so
    /// that no post to the room is missed or heard twice. A closed mailroom gives a finished stream.
    func subscribeWithPositions<M: Mail>(
        to type: M.Type,
        room key: SenderKey,
        pinning object: AnyObject?,
        after position: MailPosition?,
        buffering: PositionedBuffering<M>,
        accepts: (@Sendable (M) -> Bool)?
    ) throws(PositionError) -> (HistoryGap?, MailPosition?, RegisteredStream<Positioned<M>>) {
        let place: TableRoute
        switch key {
        case .object(let sender): place = .object(sender._id)
        case .value(let value): place = .value(value)
        case .none: place = .everyone  // not reached: a room subscription names its sender
        }
        let digest = RoomDigest.of(key)
        let lead = Self.positionsAhead
        return try subscribeWithPositions(M.self, at: place, buffering: buffering, accepts: accepts) {
            table,
            subscriber -> Filed<M> in
            let attempt = inRoomLane(of: table, at: place, pinning: object) { shard, room in
                Filed(
                    table.resume(
                        subscriber,
                        in: room,
                        key: key,
                        after: position,
                        digest: digest,
                        ahead: lead,
                        shard: shard
                    )
                )
            }
            switch attempt {
            case .done(let filed): return filed
            case .stale: return .again  // the room went with its last subscription: again
            case .retired: return .closed
            }
        }
    }

    /// Files a subscription with positions to every room (`everyone`), holding the type's lane
    /// and every shard's lock.
    func subscribeWithPositions<M: Mail>(
        toEvery type: M.Type,
        after position: MailPosition?,
        buffering: PositionedBuffering<M>,
        accepts: (@Sendable (M) -> Bool)?
    ) throws(PositionError) -> (HistoryGap?, MailPosition?, RegisteredStream<Positioned<M>>) {
        try subscribeWithPositions(M.self, at: .everyone, buffering: buffering, accepts: accepts) {
            table,
            subscriber -> Filed<M> in
            inOrder(Lanes(only: table._lane)) { () -> Filed<M> in
                table.withAllShards { () -> Filed<M> in
                    guard !table.isRetired else { return .closed }
                    return Filed(
                        table.resumeSeveralRooms(subscriber, into: { table._positionedEveryone }, after: position) {
                            mail,
                            _ in mail
                        }
                    )
                }
            }
        }
    }

    /// Files a subscription with positions to every sender of type `S` (`fromAny:`), holding
    /// the type's lane and every shard's lock.
    func subscribeWithPositions<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        after position: MailPosition?,
        buffering: PositionedBuffering<Envelope<M, S>>,
        accepts: (@Sendable (Envelope<M, S>) -> Bool)?
    ) throws(PositionError) -> (HistoryGap?, MailPosition?, RegisteredStream<Positioned<Envelope<M, S>>>) {
        try subscribeWithPositions(
            M.self,
            at: .senderType(ObjectIdentifier(S.self)),
            buffering: buffering,
            accepts: accepts
        ) { table, subscriber -> Filed<Envelope<M, S>> in
            inOrder(Lanes(only: table._lane)) { () -> Filed<Envelope<M, S>> in
                table.withAllShards { () -> Filed<Envelope<M, S>> in
                    guard !table.isRetired else { return .closed }
                    return Filed(
                        table.resumeSeveralRooms(
                            subscriber,
                            into: { table.positionedList(fromAny: S.self) },
                            after: position
                        ) { mail, sender in
                            (sender as? S).map { Envelope(mail: mail, sender: $0) }
                        }
                    )
                }
            }
        }
    }

    /// The common part of subscribing with positions: makes the stream and its termination
    /// handler, files it with `file` (nil: try again), yields the replay in the delivery scope,
    /// and hands the stream out with the replay kept apart where its buffer could drop it.
    private func subscribeWithPositions<M: Mail, Element: Sendable>(
        _ type: M.Type,
        at place: TableRoute,
        buffering: PositionedBuffering<Element>,
        accepts: (@Sendable (Element) -> Bool)?,
        file: (RouteTable<M>, Subscriber<Positioned<Element>>) -> Filed<Element>
    ) throws(PositionError) -> (HistoryGap?, MailPosition?, RegisteredStream<Positioned<Element>>) {
        guard let table = openTable(for: M.self) else { return Self.finished(buffering) }
        guard table.historyLimits != nil else {
            throw PositionError.noHistory(String(describing: M.self))
        }
        let (stream, continuation) = SubscriptionContinuation.makeStream(
            of: Positioned<Element>.self,
            bufferingPolicy: buffering.policy
        )
        // A resume ahead of what this mailroom has read from a relay's table hears live mail
        // only past that position (see `RouteTable.resume`); `liveAfter` is set before filing.
        let liveAfter = Atomic<UInt64>(0)
        let filter: @Sendable (Positioned<Element>) -> Bool = { positioned in
            positioned.position.sequence > liveAfter.load(ordering: .relaxed)
                && (accepts?(positioned.mail) ?? true)
        }
        let (instrumentation, demand) = (_instrumentation, _demand)
        let subscriber = makeSubscriber(
            of: M.self,
            continuation: continuation,
            accepts: filter,
            endSignal: buffering.endSignal,
            dropBuffer: buffering.dropBuffer,
            route: .table(ObjectIdentifier(M.self), place),
            reporting: instrumentation
        )
        var outcome = Filed<Element>.again
        while case .again = outcome { outcome = file(table, subscriber) }
        let resumed: RoomResumption<Element>
        switch outcome {
        case .resumed(let resumption):
            resumed = resumption
        case .again, .closed, .refused:
            continuation.onTermination = nil
            instrumentation?.subscriptionEnded(M.self)
            continuation.finish()
            if case .refused(let error) = outcome { throw error }
            return Self.finished(buffering)
        }
        liveAfter.store(resumed._liveAfter, ordering: .relaxed)
        demand.changed(ObjectIdentifier(M.self))
        _ = resumed._released  // released here, holding nothing
        var replay: [Positioned<Element>] = []
        DeliveryScope.delivering(self) {
            replay = resumed._replay.filter { accepts?($0.mail) ?? true }
        }
        _deferred.run()  // posts the replay's filters made
        // The replay is kept apart from the live buffer, so that no limit on that buffer drops it.
        if let dropBuffer = buffering.dropBuffer {
            dropBuffer.setReplay(replay)
            return (resumed._gap, resumed._start, RegisteredStream(stream: stream, continuation: continuation))
        }
        let registered = RegisteredStream(
            stream: replay.isEmpty ? stream : ReplayPrefix.stream(replay: replay, live: stream),
            continuation: continuation
        )
        return (resumed._gap, resumed._start, registered)
    }

    /// What filing a subscription with positions came to.
    enum Filed<Element: Sendable>: Sendable {
        case resumed(RoomResumption<Element>)
        /// The room went with its last subscription meanwhile: try again.
        case again
        /// The mailroom closed.
        case closed
        case refused(PositionError)

        init(_ result: Result<RoomResumption<Element>, PositionError>) {
            switch result {
            case .success(let resumption): self = .resumed(resumption)
            case .failure(let error): self = .refused(error)
            }
        }
    }

    private static func finished<Element: Sendable>(
        _ buffering: PositionedBuffering<Element>
    ) -> (HistoryGap?, MailPosition?, RegisteredStream<Positioned<Element>>) {
        let (stream, continuation) = SubscriptionContinuation.makeStream(of: Positioned<Element>.self)
        buffering.endSignal?.end(.finished)
        buffering.dropBuffer?.finish()
        continuation.finish()
        return (nil, nil, RegisteredStream(stream: stream, continuation: continuation))
    }

    /// How far ahead of what this mailroom has read from a relay's table a position may be and
    /// still be waited for: a burst other instances read first, not a forged number.
    static var positionsAhead: UInt64 { 1 << 20 }
}
