extension Mailroom {
    // The subscribe forms, returning the stream together with its continuation: the public
    // `subscribe` methods hand out the stream, and observations keep the continuation so that
    // `cancel()` can end the subscription at once without cancelling the handler's task.

    @inlinable
    nonisolated func subscription<M: Mail>(
        to type: M.Type,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy,
        startingWithLatest: Bool,
        where isIncluded: (@Sendable (M) -> Bool)?,
        endSignal: EndSignal? = nil
    ) -> Subscription<M> {
        _switchboard.subscribe(
            M.self,
            at: .everyone,
            bufferingPolicy: bufferingPolicy,
            accepts: isIncluded,
            endSignal: endSignal,
            replay: startingWithLatest ? { $0._latest?._newest } : nil
        )
    }

    @inlinable
    nonisolated func subscription<M: Mail>(
        to type: M.Type,
        fromObject sender: AnyObject,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy,
        startingWithLatest: Bool,
        where isIncluded: (@Sendable (M) -> Bool)?,
        endSignal: EndSignal? = nil
    ) -> Subscription<M> {
        _switchboard.subscribe(
            M.self,
            at: .object(ObjectIdentifier(sender)),
            pinning: sender,
            bufferingPolicy: bufferingPolicy,
            accepts: isIncluded,
            endSignal: endSignal,
            replay: startingWithLatest ? { $0._latest?.newest(from: .object(ObjectSender(sender))) } : nil
        )
    }

    /// Pins to a `Hashable` sender, classified by its value exactly as a post classifies it
    /// (see ``SenderKey``): an object matches by identity, an `Optional` is looked through.
    @inlinable
    nonisolated func subscription<M: Mail, S: Hashable & Sendable>(
        to type: M.Type,
        from sender: S,
        bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy,
        startingWithLatest: Bool,
        where isIncluded: (@Sendable (M) -> Bool)?,
        endSignal: EndSignal? = nil
    ) -> Subscription<M> {
        let key: ValueSender
        switch SenderKey(classifying: sender) {
        case .object(let object):
            return subscription(
                to: M.self,
                fromObject: object.object,
                bufferingPolicy: bufferingPolicy,
                startingWithLatest: startingWithLatest,
                where: isIncluded,
                endSignal: endSignal
            )
        case .value(let value) where value._type != ObjectIdentifier(S.self):
            key = value  // the value an Optional or an existential held
        case .value, .none:
            // `.none` is `nil`: filed under its own value, which no post classifies as a sender.
            key = ValueSender(sender)
        }
        return _switchboard.subscribe(
            M.self,
            at: .value(key),
            bufferingPolicy: bufferingPolicy,
            accepts: isIncluded,
            endSignal: endSignal,
            replay: startingWithLatest ? { $0._latest?.newest(from: .value(key)) } : nil
        )
    }

    @inlinable
    nonisolated func subscription<M: Mail, S: Sendable>(
        to type: M.Type,
        from senderType: S.Type,
        bufferingPolicy: AsyncStream<Envelope<M, S>>.Continuation.BufferingPolicy,
        where isIncluded: (@Sendable (M) -> Bool)?
    ) -> Subscription<Envelope<M, S>> {
        var accepts: (@Sendable (Envelope<M, S>) -> Bool)?
        if let isIncluded {
            accepts = { @Sendable envelope in isIncluded(envelope.mail) }
        }
        return _switchboard.subscribe(
            M.self,
            at: .senderType(ObjectIdentifier(S.self)),
            bufferingPolicy: bufferingPolicy,
            accepts: accepts
        )
    }
}
