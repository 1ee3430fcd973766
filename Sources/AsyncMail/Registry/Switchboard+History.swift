extension Switchboard {
    /// A post of a type that keeps history: between two others of its type (``History/withOrder(_:)``),
    /// it delivers as any post does, then appends to the history and yields to the subscriptions
    /// that take positions, inside the same delivery scope. Out of line: a type without history
    /// never comes here.
    @usableFromInline @inline(never)
    func postKeepingHistory<M: Mail, S: Sendable>(
        _ history: History<M>,
        _ mails: [M],
        from sender: S?,
        key: SenderKey
    ) -> Receipt {
        let context = _instrumentation?.currentContext()
        var routed = false
        let (receipt, departed) =
            history.withOrder { () -> (Receipt, [any Finishable])? in
                var keeping: History<M>? = history
                if let route = history.route {
                    // The relay delivers it once its table has given it a position; what it cannot
                    // carry is delivered here at once, without one (it reports why).
                    routed = self.routes(mails, from: sender, context: context, through: route)
                    guard !routed else { return nil }
                    keeping = nil
                }
                return deliverWithHistory(mails, from: sender, key: key, context: context, keepingIn: keeping)
            } ?? (Receipt(), [])
        for continuation in departed { continuation.finish() }
        // A post the relay took is counted once, when the relay delivers it.
        if !routed { _instrumentation?.didPost(M.self, mails: mails.count, receipt: receipt) }
        _deferred.run()
        return receipt
    }

    /// Delivers a post of a history-keeping type as any post is delivered, in its lanes' order
    /// and delivery scope, then appends it to `history` (nil: a post the relay could not take,
    /// delivered without a position). Called holding the history's order.
    private func deliverWithHistory<M: Mail, S: Sendable>(
        _ mails: [M],
        from sender: S?,
        key: SenderKey,
        context: PostContext?,
        keepingIn history: History<M>?
    ) -> (Receipt, [any Finishable]) {
        deliverCaptured(M.self, from: sender, key: key, recording: mails.last, context: context) {
            recipients,
            context in
            let delivered =
                mails.count == 1
                ? recipients.deliver(mails[0], from: sender, context: context)
                : recipients.deliver(contentsOf: mails, from: sender, context: context)
            guard let history else { return delivered }
            return delivered + history.deliver(mails, from: HistorySender(key))
        }
    }

    /// Hands a post to the relay that routes its type, holding the taps' lane so that it reaches
    /// the relay whole, as a tapped post does. True when the relay took it.
    func routes<M: Mail, S: Sendable>(
        _ mails: [M],
        from sender: S?,
        context: PostContext?,
        through route: History<M>.Route
    ) -> Bool {
        let lane = _taps._lane
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

    /// Posts mail whose positions a relay's table gave: `first` and on, in `epoch`. What the
    /// history already has (a row read twice) is skipped; with `live` false the mail is only
    /// kept, for a relay filling the history as it starts.
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
        let key = sender.map { SenderKey($0) } ?? .none
        let history = _histories.keepingNothingUnlessKept(M.self)
        let context = _instrumentation?.currentContext()
        let (receipt, departed) = history.withOrder { () -> (Receipt, [any Finishable]) in
            let skip = history.prepare(epoch: epoch, first: first, count: mails.count)
            let mails = Array(mails.dropFirst(skip))
            guard !mails.isEmpty else { return (Receipt(), []) }
            guard live else {
                return (history.deliver(mails, from: HistorySender(key), live: false), [])
            }
            return deliverWithHistory(mails, from: sender, key: key, context: context, keepingIn: history)
        }
        for continuation in departed { continuation.finish() }
        if live { _instrumentation?.didPost(M.self, mails: mails.count, receipt: receipt) }
        _deferred.run()
        return receipt
    }

    /// Makes a relay route every post of `M` through its table (`route`), or stops it (nil). A
    /// type that keeps no history gets one that keeps nothing, so that its mail has positions.
    func route<M: Mail>(_ type: M.Type, through route: History<M>.Route?) {
        guard !withRegistry({ $0._isClosed }) else { return }
        _histories.keepingNothingUnlessKept(M.self).route(through: route)
    }

    /// The limits of `M`'s history, if it keeps one: what a relay fills it with as it starts.
    func historyLimits<M: Mail>(_ type: M.Type) -> (count: Int?, maxAge: Duration?)? {
        _histories.history(for: M.self)?.limits
    }

    /// Makes `M` keep history within these limits, or changes its limits.
    func retainHistory<M: Mail>(_ type: M.Type, count: Int?, maxAge: Duration?) {
        guard !withRegistry({ $0._isClosed }) else { return }
        _histories.keep(M.self, count: count, maxAge: maxAge)
    }

    /// Files a subscription that takes positions, resuming after `position` (nil: live), between
    /// two posts of the type. A closed mailroom gives a finished stream.
    func subscribeWithPositions<M: Mail>(
        to type: M.Type,
        pinnedTo pin: History<M>.Pin,
        after position: MailPosition?,
        buffering: History<M>.Buffering,
        accepts: (@Sendable (M) -> Bool)?
    ) throws(PositionError) -> (HistoryGap?, RegisteredStream<Positioned<M>>) {
        guard let history = _histories.history(for: M.self) else {
            guard withRegistry({ $0._isClosed }) else { throw PositionError.noHistory(String(describing: M.self)) }
            let (stream, continuation) = AsyncStream.makeStream(of: Positioned<M>.self)
            buffering.endSignal?.end(.finished)
            continuation.finish()
            return (nil, RegisteredStream(stream: stream, continuation: continuation))
        }
        let (instrumentation, demand) = (_instrumentation, _demand)
        let ended: @Sendable () -> Void = {
            instrumentation?.subscriptionEnded(M.self)
            demand.changed(ObjectIdentifier(M.self))
        }
        let filed = history.withOrder { () -> Result<(HistoryGap?, RegisteredStream<Positioned<M>>), PositionError> in
            DeliveryScope.delivering(self) {
                history.subscribe(after: position, pin: pin, buffering: buffering, accepts: accepts, ended: ended)
            }
        }
        if case .success = filed {
            instrumentation?.subscriptionStarted(M.self)
            demand.changed(ObjectIdentifier(M.self))
        }
        _deferred.run()  // posts the replay's filters made
        return try filed.get()
    }

    /// The subscriptions that take positions, counted as ``subscriberCount(_:counting:)`` counts.
    func positionedCount<M: Mail>(_ type: M.Type, counting counted: Counted) -> Int {
        guard _histories.mayKeep(M.self), let history = _histories.history(for: M.self) else { return 0 }
        switch counted {
        case .all: return history.count(pinnedTo: .everyone)
        case .hearing(let key): return history.count(pinnedTo: .sender(HistorySender(key)))
        case .senderType(let type): return history.count(pinnedTo: .senderType(type))
        }
    }
}
