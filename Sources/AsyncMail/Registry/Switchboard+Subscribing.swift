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
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: filing._bufferingPolicy)
        var contexts: PostContexts?
        if let _instrumentation, filing._endSignal != nil || filing._handsOnContext {
            contexts = PostContexts(instrumentation: _instrumentation)
        }
        let route = filing._route
        let reporting: (any MailroomInstrumentation)?
        switch route {
        case .table: reporting = _instrumentation
        case .tap: reporting = nil
        }
        reporting?.subscriptionStarted(M.self)
        let endSignal = filing._endSignal
        let subscriber = Subscriber(
            continuation: continuation,
            accepts: filing._accepts,
            endSignal: endSignal,
            contexts: contexts
        )
        // Set before filing: once filed, `close()` may finish the stream at any moment, and a
        // handler set on a finished stream would never run. The handler holds the subscriber
        // (which holds the continuation, whose storage holds the handler); that cycle ends when
        // the handler runs, which every way a stream ends does exactly once: dropped, cancelled,
        // finished by `close()`, by a departed sender, or by this mailroom's deinit.
        continuation.onTermination = { [weak self] _ in
            endSignal?.end(.finished)  // a no-op after an overflow, which ended it first
            self?.unregister(subscriber, from: route, of: M.self)
            reporting?.subscriptionEnded(M.self)
        }
        let subscription = RegisteredStream(stream: stream, continuation: continuation, contexts: contexts)
        let displaced: [any Finishable]?
        switch route {
        case .tap:
            displaced = withRegistry { registry in
                guard !registry._isClosed, let tap = subscriber as? Subscriber<PostedMail> else { return nil }
                registry._taps.add(tap)
                registry.tapsChanged()
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

    /// Files `subscriber` at `place` in `M`'s table. Returns the continuations of a departed
    /// sender it displaced, to finish holding no lock; nil once the mailroom is closed.
    @inlinable
    func file<M: Mail, Element>(
        _ subscriber: Subscriber<Element>,
        at place: TableRoute,
        of type: M.Type,
        pinning sender: AnyObject?
    ) -> [any Finishable]? {
        while true {
            guard let table = openTable(for: M.self) else { return nil }
            let displaced = table.withIndex { () -> [any Finishable]? in
                table.isRetired ? nil : table.add(subscriber, at: place, pinning: sender)
            }
            if let displaced { return displaced }
            // The table retired between the registry look-up and filing: the next look-up
            // makes a new one.
        }
    }

    /// Files `subscriber` at `place` and yields it the mail `replay` reads, holding the lane that
    /// every post it could hear holds (see ``Lanes``), so that no newer post can overtake the
    /// replayed mail and none is missed or repeated. The stream has no consumer yet, so
    /// yielding to it wakes no task. The replayed mail passes the subscription's filter there,
    /// in the delivery scope, as any delivery's does.
    @inlinable
    func fileReplaying<M: Mail, Element>(
        _ subscriber: Subscriber<Element>,
        at place: TableRoute,
        pinning sender: AnyObject?,
        replay: (RouteTable<M>) -> Element?
    ) -> [any Finishable]? {
        while true {
            guard let table = openTable(for: M.self) else { return nil }
            // The room's lane can only be taken from a room that exists, so make it first.
            let found = table.withIndex { () -> (lane: Lane, departed: [any Finishable])? in
                guard !table.isRetired else { return nil }
                var departed: [any Finishable] = []
                return table.replayLane(at: place, pinning: sender, departed: &departed).map { ($0, departed) }
            }
            guard let found else { continue }
            for continuation in found.departed { continuation.finish() }
            let displaced = inOrder(Lanes(only: found.lane)) {
                () -> [any Finishable]? in
                let filed = table.withIndex { () -> (displaced: [any Finishable], replayed: Element?)? in
                    var departed: [any Finishable] = []
                    // The room may have gone with its last subscription since; then start again.
                    guard !table.isRetired,
                        table.replayLane(at: place, pinning: sender, departed: &departed) === found.lane
                    else { return nil }
                    return (departed + table.add(subscriber, at: place, pinning: sender), replay(table))
                }
                guard let filed else { return nil }
                if let replayed = filed.replayed, subscriber._accepts?(replayed) != false {
                    if let _replayProbe { _replayProbe(DeliveryScope.isDelivering(self)) }
                    // A replayed mail was posted long ago: its context is not kept.
                    if let contexts = subscriber._contexts {
                        _ = contexts.offer(.none) { subscriber._continuation.yield(replayed) }
                    } else {
                        subscriber._continuation.yield(replayed)
                    }
                }
                return filed.displaced
            }
            guard let displaced else { continue }
            _deferred.run()  // posts the replay's filter made
            return displaced
        }
    }

    /// Takes a subscription out of the registry; what a stream's termination handler runs.
    /// Inlinable, so that in the client's specialised code removal needs no dynamic cast.
    @inlinable
    func unregister<M: Mail, Element>(_ subscriber: Subscriber<Element>, from route: Route, of type: M.Type) {
        switch route {
        case .tap:
            let removed = withRegistry { registry in
                defer { registry.tapsChanged() }
                return registry._taps.removeErased(subscriber)
            }
            _ = removed  // released here, outside the lock: it can run a termination handler
        case .table(_, let place):
            // The table that holds a filed subscription is the one the registry names: a table
            // is only replaced once retired, and only an empty or closed one retires.
            guard let table = withRegistry({ $0.existingTable(for: M.self) }) else { return }
            let (removed, retired) = table.withIndex { () -> ((any Finishable)?, Bool) in
                let removed = table.remove(subscriber, at: place)
                return (removed, table.retireIfUnused())
            }
            if retired { forget(table) }
            _ = removed  // released here, outside the lock, as above
            _demand.changed(ObjectIdentifier(M.self))
        }
    }
}
