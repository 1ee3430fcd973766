extension Switchboard {
    // MARK: Keeping the latest mail

    /// Opts `M` in to keeping its latest mail; idempotent.
    @usableFromInline
    func retainLatest<M: Mail>(_ type: M.Type) {
        while let table = openTable(for: M.self) {
            let kept = table.withIndex { () -> Bool in
                guard !table.isRetired else { return false }
                if table._latest == nil { table._latest = LatestMail() }
                return true
            }
            if kept { return }
        }
    }

    /// The latest mail of `M` (from `key`'s sender, when given), after dropping departed senders' mail.
    @usableFromInline
    func latest<M: Mail>(_ type: M.Type, from key: SenderKey?) -> M? {
        readKept(M.self) { kept in key.map { kept.newest(from: $0) } ?? kept._newest }
    }

    /// The newest mail of `M` from any sender of type `S`, after dropping departed senders' mail.
    @usableFromInline
    func latest<M: Mail, S: Sendable>(_ type: M.Type, fromAny senderType: S.Type) -> Envelope<M, S>? {
        readKept(M.self) { $0.newest(fromAny: S.self) }
    }

    /// Reads `M`'s kept mail under its table's index, after sweeping departed senders' mail, which
    /// is released once the lock is; nil when the type keeps nothing.
    private func readKept<M: Mail, Result: Sendable>(
        _ type: M.Type,
        _ read: (LatestMail<M>) -> Result?
    ) -> Result? {
        guard let table = withRegistry({ $0.existingTable(for: M.self) }) else { return nil }
        let (result, afterUnlock) = table.withIndex { () -> (Result?, AfterUnlock<[M]>) in
            guard !table.isRetired, let kept = table._latest else { return (nil, AfterUnlock(releasing: [])) }
            let afterUnlock = AfterUnlock(releasing: kept.sweep())
            return (read(kept), afterUnlock)
        }
        afterUnlock.perform()
        return result
    }

    // MARK: Counting and closing

    /// Which subscriptions ``subscriberCount(_:counting:)`` counts.
    @usableFromInline
    enum Counted {
        /// Every subscription to the type, whatever it hears.
        case all
        /// Those pinned to exactly this sender.
        case hearing(SenderKey)
        /// Those that hear every sender of exactly this type (`fromAny:`).
        case senderType(ObjectIdentifier)
    }

    @usableFromInline
    func subscriberCount<M: Mail>(_ type: M.Type, counting counted: Counted) -> Int {
        guard let table = withRegistry({ $0.existingTable(for: M.self) }) else {
            return positionedCount(M.self, counting: counted)
        }
        let (count, afterUnlock, retired) = table.withIndex { () -> (Int, AfterUnlock<[M]>, Bool) in
            guard !table.isRetired else { return (0, AfterUnlock(releasing: []), false) }
            let afterUnlock = AfterUnlock(
                finishing: table.sweepDepartedSenders(),
                releasing: table._latest?.sweep() ?? []
            )
            let count: Int
            switch counted {
            case .all: count = table._count
            case .hearing(let key): count = table.count(hearing: key)
            case .senderType(let type): count = table._bySenderType[type]?.count ?? 0
            }
            return (count, afterUnlock, table.retireIfUnused())
        }
        if retired { forget(table) }
        afterUnlock.perform()
        return count + positionedCount(M.self, counting: counted)
    }

    /// Ends every stream and refuses new ones; safe to call more than once.
    ///
    /// The route tables leave the registry under its lock, each is retired and emptied under its
    /// own, and they are released holding no lock: they hold kept mail and filters, whose deinits
    /// are user code.
    @usableFromInline
    func close() {
        let (tables, taps, actions) = withRegistry {
            registry -> ([any AnyRouteTable], [any Finishable], [@Sendable () -> Void]) in
            registry._isClosed = true
            registry._recent = nil
            registry._tapSnapshot = nil
            defer {
                registry._tables = [:]
                registry._closeActions = [:]
            }
            return (Array(registry._tables.values), registry._taps.removeAll(), Array(registry._closeActions.values))
        }
        let afterUnlock = AfterUnlock(finishing: taps + tables.flatMap { $0.close() }, releasing: tables)
        afterUnlock.perform()
        _histories.close()
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
        let removed = withRegistry { AfterUnlock(releasing: $0._closeActions.removeValue(forKey: key)) }
        removed.perform()
    }
}
