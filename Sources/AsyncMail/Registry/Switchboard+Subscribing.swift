extension Switchboard {
    /// Makes a stream, gives it a termination handler that takes it out again, and files it
    /// where `filing` says before returning it, so nothing posted afterwards can be missed; a
    /// closed mailroom hands back a finished stream.
    ///
    /// With instrumentation, a bounded stream (`endSignal`), or a consumer that hands contexts on,
    /// keeps the contexts of its buffered mail (see ``PostContexts``), and every table route is
    /// reported started now and ended by its termination handler, which runs exactly once.
    @inlinable
    func subscribe<M: Mail, Element: Sendable>(_ filing: Filing<M, Element>) -> RegisteredStream<Element> {
        let (stream, continuation) = SubscriptionContinuation.makeStream(
            of: Element.self,
            bufferingPolicy: filing._bufferingPolicy
        )
        var contexts: PostContexts?
        // A buffer that drops mail cannot keep each mail's context beside it.
        if let _instrumentation, filing._dropBuffer == nil, filing._endSignal != nil || filing._handsOnContext {
            contexts = PostContexts(instrumentation: _instrumentation)
        }
        let route = filing._route
        let reporting: (any MailroomInstrumentation)?
        switch route {
        case .table: reporting = _instrumentation
        case .tap: reporting = nil
        }
        let subscriber = makeSubscriber(
            of: M.self,
            continuation: continuation,
            accepts: filing._accepts,
            endSignal: filing._endSignal,
            dropBuffer: filing._dropBuffer,
            contexts: contexts,
            route: route,
            reporting: reporting
        )
        let subscription = RegisteredStream(stream: stream, continuation: continuation, contexts: contexts)
        let displaced: [any Finishable]?
        switch route {
        case .tap:
            displaced = withRegistry { registry in
                guard !registry._isClosed, let tap = subscriber as? Subscriber<PostedMail> else { return nil }
                _taps.add(tap)
                tapsChanged()
                return []
            }
        case .table(_, let place):
            if let replay = filing._replay {
                displaced = fileReplaying(subscriber, at: place, pinning: filing._sender, replay: replay)
            } else {
                displaced = file(subscriber, at: place, of: M.self, pinning: filing._sender)
            }
        }
        guard let displaced else {
            continuation.finish()
            return subscription
        }
        for continuation in displaced { continuation.finish() }
        if case .table = route { _demand.changed(ObjectIdentifier(M.self)) }
        return subscription
    }

    /// Makes a subscription's subscriber, gives its stream the one termination handler every
    /// subscription has (``endsSubscription(_:of:endSignal:dropBuffer:reporting:remove:)``, taking it out of
    /// `route`), and reports it started: where every subscription's life begins.
    ///
    /// The handler is set before filing: once filed, `close()` may finish the stream at any
    /// moment, and a handler set on a finished stream would never run. It holds the subscriber
    /// (which holds the continuation, whose storage holds the handler); that cycle ends when the
    /// handler runs, which every way a stream ends does exactly once: dropped, cancelled, finished
    /// by `close()`, by a departed sender, or by this mailroom's deinit.
    @inlinable
    func makeSubscriber<M: Mail, Element: Sendable>(
        of type: M.Type,
        continuation: SubscriptionContinuation<Element>,
        accepts: (@Sendable (Element) -> Bool)?,
        endSignal: EndSignal?,
        dropBuffer: DropBuffer<Element>? = nil,
        contexts: PostContexts? = nil,
        route: Route,
        reporting instrumentation: (any MailroomInstrumentation)?
    ) -> Subscriber<Element> {
        let subscriber = Subscriber(
            continuation: continuation,
            accepts: accepts,
            endSignal: endSignal,
            dropBuffer: dropBuffer,
            contexts: contexts
        )
        endsSubscription(
            continuation,
            of: M.self,
            endSignal: endSignal,
            dropBuffer: dropBuffer,
            reporting: instrumentation
        ) {
            $0.unregister(subscriber, from: route, of: M.self)
        }
        instrumentation?.subscriptionStarted(M.self)
        return subscriber
    }

    /// Files `subscriber` at `place` in `M`'s table. Returns the continuations of a departed
    /// sender it displaced, to finish holding no lock; nil once the mailroom is closed.
    @inlinable
    func file<M: Mail, Element>(
        _ subscriber: Subscriber<Element>,
        at place: TableRoute,
        of type: M.Type,
        pinning sender: AnyObject?
    ) -> [any Finishable]? {
        openTable(for: M.self)?.add(subscriber, at: place, pinning: sender)
    }

    /// Files `subscriber` at `place` and yields it the mail `replay` reads, holding the lane that
    /// every post it could hear holds (see ``Lanes``), so that no newer post can overtake the
    /// replayed mail and none is missed or repeated. A post records its mail as the latest
    /// holding its lanes (see ``deliverRecording(_:from:key:recording:context:deliver:)``), so
    /// what `replay` reads is the newest mail delivered in that lane. The stream has no consumer
    /// yet, so yielding to it wakes no task. The replayed mail passes the subscription's filter
    /// there, in the delivery scope, as any delivery's does.
    ///
    /// `replay` runs holding what it reads: the room's shard, for a subscription to one room, or
    /// every shard, for one that hears several rooms.
    @inlinable
    func fileReplaying<M: Mail, Element>(
        _ subscriber: Subscriber<Element>,
        at place: TableRoute,
        pinning sender: AnyObject?,
        replay: (RouteTable<M>, RouteShard<M>?) -> Element?
    ) -> [any Finishable]? {
        typealias Filed = (displaced: [any Finishable], replayed: Element?)
        guard let table = openTable(for: M.self) else { return nil }
        let yield = { (filed: Filed) in self.yieldReplayed(filed.replayed, to: subscriber) }
        let displaced = retrying { () -> LaneAttempt<Filed> in
            if RouteTable<M>.shardIndex(at: place) != nil {
                // The room's lane, made with the room; filed again if the room went meanwhile.
                return inRoomLane(of: table, at: place, pinning: sender, andThen: yield) { shard, _ in
                    (table.add(subscriber, at: place, pinning: sender, in: shard), replay(table, shard))
                }
            }
            // Every post such a subscription hears holds the type's lane.
            // Locks held together, in the Architecture article's order ("Every lock, in the order they are taken").
            return inOrder(Lanes(only: table._lane)) {
                let filed = table.withAllShards { () -> LaneAttempt<Filed> in
                    guard !table.isRetired else { return .retired }
                    table.addHearingSeveralRooms(subscriber, at: place)
                    return .done(([], replay(table, nil)))
                }
                if case .done(let filed) = filed { yield(filed) }
                return filed
            }
        }?.displaced
        _deferred.run()  // posts the replay's filter made
        return displaced
    }

    /// Yields a replayed mail to a subscription being filed, if its filter takes it; called
    /// holding the subscription's lane, in the delivery scope.
    @inlinable
    func yieldReplayed<Element>(_ replayed: Element?, to subscriber: Subscriber<Element>) {
        guard let replayed, subscriber._accepts?(replayed) != false else { return }
        if let _replayProbe { _replayProbe(DeliveryScope.isDelivering(self)) }
        // A replayed mail was posted long ago: its context is not kept.
        if let dropBuffer = subscriber._dropBuffer {
            _ = dropBuffer.offer(replayed)
        } else if let contexts = subscriber._contexts {
            _ = contexts.offer(.none) { subscriber._continuation.yield(replayed) }
        } else {
            subscriber._continuation.yield(replayed)
        }
    }

    /// Gives a subscription's stream the one termination handler every subscription has, which
    /// runs once, whatever ends it: it finishes the stream first, tells `endSignal`, takes the
    /// subscription out with `remove` (unless the mailroom is gone), and reports it ended.
    ///
    /// Finished first, so that a post that captured the subscription before `remove` finds it
    /// ended: it would otherwise yield to it after a later post skipped it, a hole in its order.
    /// (`AsyncStream`'s buffer ran a cancelled stream's handler before it finished the stream;
    /// ``SubscriptionBuffer`` has ended itself before it runs this handler, which makes the call
    /// a no-op there.)
    @inlinable
    func endsSubscription<M: Mail, Element: Sendable>(
        _ continuation: SubscriptionContinuation<Element>,
        of type: M.Type,
        endSignal: EndSignal?,
        dropBuffer: DropBuffer<Element>? = nil,
        reporting instrumentation: (any MailroomInstrumentation)?,
        remove: @escaping @Sendable (Switchboard) -> Void
    ) {
        continuation.onTermination = { [weak self] termination in
            continuation.finish()
            endSignal?.end(.finished)  // a no-op after an overflow, which ended it first
            // Ended from outside, the consumer drains what is buffered; gone, it is released.
            if case .cancelled = termination { dropBuffer?.cancel() } else { dropBuffer?.finish() }
            if let self { remove(self) }
            instrumentation?.subscriptionEnded(M.self)
        }
    }

    /// Takes a subscription out of the registry; what a stream's termination handler runs.
    /// Inlinable, so that in the client's specialised code removal needs no dynamic cast.
    @inlinable
    func unregister<M: Mail, Element>(_ subscriber: Subscriber<Element>, from route: Route, of type: M.Type) {
        switch route {
        case .tap:
            let removed = withRegistry { _ in
                defer { tapsChanged() }
                return _taps.removeErased(subscriber)
            }
            _ = removed  // released here, outside the lock: it can run a termination handler
        case .table(_, let place):
            // A filed subscription's table is the type's one table, which lasts as long as this.
            guard let table = existingTable(for: M.self) else { return }
            let removed = table.remove(subscriber, at: place)
            // Nothing changed when `close()` (or a departed sender's sweep) took it out first.
            guard removed != nil else { return }
            _ = removed  // released here, outside the lock, as above
            _demand.changed(ObjectIdentifier(M.self))
        }
    }
}
