extension Mailroom {
    // The two ways a subscription is filed, returning the stream together with its continuation:
    // the public `subscribe` methods hand out the stream, and observations keep the continuation
    // so that `cancel()` can end the subscription at once without cancelling the handler's task.

    /// Files a subscription where `senders` says: every sender, one object, or one value.
    @inlinable
    nonisolated func subscription<M: Mail>(
        to type: M.Type,
        from senders: Senders,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy,
        startingWithLatest: Bool,
        where isIncluded: (@Sendable (M) -> Bool)?,
        endSignal: EndSignal? = nil,
        dropBuffer: DropBuffer<M>? = nil,
        handsOnContext: Bool = false
    ) -> RegisteredStream<M> {
        let place: TableRoute
        let sender: AnyObject?
        let replay: ((RouteTable<M>, RouteShard<M>?) -> M?)?
        switch senders._kind {
        case .everyone:
            (place, sender) = (.everyone, nil)
            replay = { table, _ in table.newest() }
        case .object(let object):
            (place, sender) = (.object(ObjectIdentifier(object)), object)
            replay = { table, shard in shard.flatMap { table.newest(from: .object(ObjectSender(object)), in: $0) } }
        case .value(let key):
            (place, sender) = (.value(key), nil)
            replay = { table, shard in shard.flatMap { table.newest(from: .value(key), in: $0) } }
        }
        return _switchboard.subscribe(
            Filing(
                .table(ObjectIdentifier(M.self), place),
                pinning: sender,
                bufferingPolicy: bufferingPolicy,
                accepts: isIncluded,
                endSignal: endSignal,
                dropBuffer: dropBuffer,
                handsOnContext: handsOnContext,
                replay: startingWithLatest ? replay : nil
            )
        )
    }

    /// Files an envelope subscription for every sender that is an `S`.
    @inlinable
    nonisolated func subscription<M: Mail, S: Sendable>(
        to type: M.Type,
        fromAny senderType: S.Type,
        bufferingPolicy: AsyncStream<Envelope<M, S>>.Continuation.BufferingPolicy,
        startingWithLatest: Bool,
        where isIncluded: (@Sendable (M) -> Bool)?,
        endSignal: EndSignal? = nil,
        dropBuffer: DropBuffer<Envelope<M, S>>? = nil,
        handsOnContext: Bool = false
    ) -> RegisteredStream<Envelope<M, S>> {
        var accepts: (@Sendable (Envelope<M, S>) -> Bool)?
        if let isIncluded {
            accepts = { @Sendable envelope in isIncluded(envelope.mail) }
        }
        return _switchboard.subscribe(
            Filing<M, Envelope<M, S>>(
                .table(ObjectIdentifier(M.self), .senderType(ObjectIdentifier(S.self))),
                bufferingPolicy: bufferingPolicy,
                accepts: accepts,
                endSignal: endSignal,
                dropBuffer: dropBuffer,
                handsOnContext: handsOnContext,
                replay: startingWithLatest ? { table, _ in table.newest(fromAny: S.self) } : nil
            )
        )
    }
}

extension AsyncStream.Continuation.BufferingPolicy {
    /// Whether a full buffer refuses new mail rather than evicting buffered mail: only then can
    /// the contexts beside a buffer follow it (see ``PostContexts``).
    @usableFromInline
    var neverEvicts: Bool {
        switch self {
        case .bufferingNewest: false
        case .unbounded, .bufferingOldest: true
        @unknown default: false
        }
    }
}
