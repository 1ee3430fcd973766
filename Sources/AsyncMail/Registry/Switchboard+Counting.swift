extension Switchboard {
    // MARK: Keeping the latest mail

    /// Opts `M` in to keeping its latest mail; idempotent.
    @usableFromInline
    func retainLatest<M: Mail>(_ type: M.Type) {
        openTable(for: M.self)?.keepLatest()
    }

    /// The latest mail of `M` (from `key`'s sender, when given), after dropping departed senders'
    /// mail where it reads: the sender's shard, or every shard for the type's newest.
    @usableFromInline
    func latest<M: Mail>(_ type: M.Type, from key: SenderKey?) -> M? {
        guard let table = existingTable(for: M.self) else { return nil }
        let (result, swept): (M?, [KeptRoom<M>])
        if let key {
            // One sender's: its shard alone, swept of departed senders' mail first, so that a
            // departed sender's mail is never read for a new one at its address.
            (result, swept) = table.withShard(RouteTable<M>.shardIndex(key.roomLookup)) { shard in
                shard.withLock { () -> (M?, [KeptRoom<M>]) in
                    guard !table.isRetired else { return (nil, []) }
                    let swept = table.sweepKeptMail(in: shard)
                    return (table.newest(from: key, in: shard), swept)
                }
            }
        } else {
            // The type's newest is read holding every shard's lock (see `RouteTable._newest`).
            (result, swept) = table.withAllShards { () -> (M?, [KeptRoom<M>]) in
                guard !table.isRetired else { return (nil, []) }
                return (table.newest(), table._shards.flatMap { table.sweepKeptMail(in: $0) })
            }
        }
        _ = swept  // released here, holding nothing: a mail's deinit is user code
        return result
    }

    /// The newest mail of `M` from any sender of type `S`, after dropping departed senders' mail.
    @usableFromInline
    func latest<M: Mail, S: Sendable>(_ type: M.Type, fromAny senderType: S.Type) -> Envelope<M, S>? {
        guard let table = existingTable(for: M.self) else { return nil }
        let (result, swept) = table.withAllShards { () -> (Envelope<M, S>?, [KeptRoom<M>]) in
            guard !table.isRetired else { return (nil, []) }
            let swept = table._shards.flatMap { table.sweepKeptMail(in: $0) }
            return (table.newest(fromAny: S.self), swept)
        }
        _ = swept
        return result
    }

    // MARK: Counting and closing

    /// Which subscriptions ``subscriberCount(_:counting:)`` counts: the demand rule, in one place.
    ///
    /// A subscription counts for a sender if a post from that sender would reach it, whatever
    /// else narrows it (a `where:` filter, a position, a backlog limit): its own room's, every
    /// sender's (`.everyone`), and those that hear every sender of one of the sender's types
    /// (`fromAny:`). Taps are never counted.
    @usableFromInline
    enum Counted {
        /// Every subscription to the type, whatever it hears.
        case all
        /// Those a post from this sender would reach.
        case reaching(SenderKey)
        /// Those that hear every sender of exactly this type (`fromAny:`).
        case senderType(ObjectIdentifier)
    }

    @usableFromInline
    func subscriberCount<M: Mail>(_ type: M.Type, counting counted: Counted) -> Int {
        guard let table = existingTable(for: M.self), !table.isRetired else { return 0 }
        // A count first ends the subscriptions of departed senders, and drops their kept mail.
        let departed = table.sweepDepartedSenders()
        let swept = table.sweepKeptMail()
        let count: Int
        switch counted {
        case .all: count = table._count.load(ordering: .relaxed)
        case .reaching(let key): count = table.count(reaching: key)
        case .senderType(let type): count = table.count(ofSenderType: type)
        }
        for continuation in departed { continuation.finish() }
        _ = swept  // released here, holding nothing
        return count
    }

    /// Ends every stream and refuses new ones; safe to call more than once.
    ///
    /// Each route table is retired and emptied holding its locks, and what it held is released
    /// holding none: kept mail and filters, whose deinits are user code. The tables stay, empty,
    /// until the switchboard goes (see ``TypeMap``).
    @usableFromInline
    func close() {
        let (tables, taps, actions) = withRegistry {
            registry -> ([any AnyRouteTable], [any Finishable], [@Sendable () -> Void]) in
            registry._isClosed = true
            let taps = _taps.removeAll()
            tapsChanged()
            defer { registry._closeActions = [:] }
            return (_tables.objects.compactMap { $0 as? any AnyRouteTable }, taps, Array(registry._closeActions.values))
        }
        var finishing = taps
        var releasing: [any Sendable] = []
        for table in tables {
            let closed = table.close()
            finishing += closed.finishing
            releasing += closed.releasing
        }
        for continuation in finishing { continuation.finish() }
        _ = releasing
        _demand.close()
        for action in actions { action() }
    }

    // MARK: Close actions

    /// Registers `action` to run once after `close()`; nil (and not run) when already closed.
    func addCloseAction(_ action: @escaping @Sendable () -> Void) -> Int? {
        withRegistry { registry in
            guard !registry._isClosed else { return nil }
            registry._nextCloseAction += 1
            registry._closeActions[registry._nextCloseAction] = action
            return registry._nextCloseAction
        }
    }

    /// Forgets a close action that has not run; released after unlocking, as it may hold user values.
    func removeCloseAction(_ key: Int) {
        let removed = withRegistry { $0._closeActions.removeValue(forKey: key) }
        _ = removed  // released here, holding nothing
    }
}
