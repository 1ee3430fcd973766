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
        handsOnContext: Bool = false
    ) -> Subscription<M> {
        switch senders._kind {
        case .everyone:
            return _switchboard.subscribe(
                M.self,
                at: .everyone,
                bufferingPolicy: bufferingPolicy,
                accepts: isIncluded,
                endSignal: endSignal,
                handsOnContext: handsOnContext,
                replay: startingWithLatest ? { $0._latest?._newest } : nil
            )
        case .object(let sender):
            return _switchboard.subscribe(
                M.self,
                at: .object(ObjectIdentifier(sender)),
                pinning: sender,
                bufferingPolicy: bufferingPolicy,
                accepts: isIncluded,
                endSignal: endSignal,
                handsOnContext: handsOnContext,
                replay: startingWithLatest ? { $0._latest?.newest(from: .object(ObjectSender(sender))) } : nil
            )
        case .value(let key):
            return _switchboard.subscribe(
                M.self,
                at: .value(key),
                bufferingPolicy: bufferingPolicy,
                accepts: isIncluded,
                endSignal: endSignal,
                handsOnContext: handsOnContext,
                replay: startingWithLatest ? { $0._latest?.newest(from: .value(key)) } : nil
            )
        }
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
        handsOnContext: Bool = false
    ) -> Subscription<Envelope<M, S>> {
        var accepts: (@Sendable (Envelope<M, S>) -> Bool)?
        if let isIncluded {
            accepts = { @Sendable envelope in isIncluded(envelope.mail) }
        }
        return _switchboard.subscribe(
            M.self,
            at: .senderType(ObjectIdentifier(S.self)),
            bufferingPolicy: bufferingPolicy,
            accepts: accepts,
            endSignal: endSignal,
            handsOnContext: handsOnContext,
            replay: startingWithLatest ? { $0._latest?.newest(fromAny: S.self) } : nil
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
