import Synchronization

/// The type-erased face of ``RouteTable``, so one dictionary can hold the tables of every mail
/// type.
@usableFromInline
protocol AnyRouteTable: AnyObject, Sendable {
    /// Retires the table and removes every subscription; returns their continuations to finish.
    func close() -> [any Finishable]
}

/// Every subscription to one mail type, indexed so a post touches only the ones that match,
/// with the type's own locks: a post of one type never waits for a post of another.
///
/// Two locks, never both taken by one thread in the other order:
/// - `index` guards every mutable property here and in the lists and kept mail the table holds.
///   It is a leaf: it is held to file, remove, count and to capture a post's recipients, never
///   while user code runs or a stream is yielded to. Termination handlers take it (see
///   ``Switchboard``).
/// - `lane` orders the posts that a subscription hearing several rooms sees (see ``Lanes``);
///   a post holds it while it yields. No termination handler takes it.
///
/// A table that becomes unused is *retired* under `index` before the registry forgets it, so a
/// subscribe that found it in the registry just before sees that and files in a new table.
///
/// Why `@unchecked Sendable` is safe: every mutable property is read and written only while
/// `index` is held, which orders every access; `isRetired` is atomic. The model and stress tests,
/// run under ThreadSanitizer in CI, post, subscribe, count and drop from many threads at once.
///
/// Why `@exclusivity(unchecked)` is safe here, and on the mutable properties of ``SubscriberList``
/// and ``LatestMail``: the runtime check it removes catches two overlapping accesses to one
/// property. Across threads the index lock already rules that out. On one thread an overlap
/// needs the table re-entered while one of these properties is being accessed, and no code
/// runs during such an access but this module's: subscribers' filters and replays run on values
/// already read out, and re-entering through the public API would block on the non-recursive
/// lock. The checks are a measurable share of a post (`Benchmarks/README.md`); the TSan run in
/// `.ci/run` still watches every access for races.
@usableFromInline
final class RouteTable<M: Mail>: AnyRouteTable, @unchecked Sendable {
    /// Guards everything mutable in this table (see above).
    @usableFromInline let _index = Locked()
    /// The type's lane (see ``Lanes``).
    @usableFromInline let _lane = Lane()
    /// Set, under `index`, once the table is unused or its mailroom closed: nothing is filed here again.
    @usableFromInline let _isRetired = Atomic<Bool>(false)
    /// Subscriptions that take every mail of this type, from any sender or none.
    @usableFromInline let _everyone = SubscriberList<M>()
    /// Subscriptions pinned to one object or actor, by identity.
    @usableFromInline @exclusivity(unchecked) var _byObject = ObjectRoutes<M>()
    /// Subscriptions pinned to one `Hashable` sender value.
    @usableFromInline @exclusivity(unchecked) var _byValue = ValueTable<SubscriberList<M>>()
    /// Envelope subscriptions by sender type; the value for `S` is a `SubscriberList<Envelope<M, S>>`.
    /// Any change to its keys forgets `senderTypesOf`, which is derived from them.
    @usableFromInline @exclusivity(unchecked) var _bySenderType: [ObjectIdentifier: any AnySubscriberList] = [:] {
        didSet { _senderTypesOf = [:] }
    }
    /// The entries of `bySenderType` whose type a sender is, by the sender's own type: worked out
    /// with a cast the first time a sender of that type posts. A subclass is its superclass and a
    /// conforming type is its protocol, so this cannot be a look-up of the own type alone.
    @usableFromInline @exclusivity(unchecked) var _senderTypesOf:
        [ObjectIdentifier: [(key: ObjectIdentifier, list: any AnySubscriberList)]] = [:]
    /// Live subscriptions across all routes, so counting is O(1).
    @usableFromInline @exclusivity(unchecked) var _count = 0
    /// The latest mail, once ``Mailroom/retainLatest(_:)`` opted this type in; nil otherwise.
    @usableFromInline @exclusivity(unchecked) var _latest: LatestMail<M>?

    @inlinable init() {}

    /// Whether the table can go: no subscriptions, and no mail kept for replay.
    @inlinable var isUnused: Bool { _count == 0 && _latest == nil }

    /// Whether the table is retired (see above); nothing is filed in a retired table.
    @inlinable var isRetired: Bool { _isRetired.load(ordering: .acquiring) }

    /// Runs `body` holding `index`; the one way into this table's state.
    @inlinable
    func withIndex<Result: Sendable>(_ body: () -> Result) -> Result {
        _index.withLock(body)
    }

    /// Retires the table if nothing is left in it; call holding `index`. Returns whether it did,
    /// so that the caller has the registry forget it.
    @inlinable
    func retireIfUnused() -> Bool {
        guard isUnused, !isRetired else { return false }
        _isRetired.store(true, ordering: .releasing)
        return true
    }

    /// Whether a subscription of this type hears several rooms, so that posts to different rooms
    /// must keep one order (see ``Lanes``).
    @inlinable var hearsSeveralRooms: Bool { _everyone.count > 0 || !_bySenderType.isEmpty }

    /// Object routes checked for a departed sender together, every that many posts: one check
    /// per post on average, in batches so that the cold reads overlap (see ``ObjectRoutes``).
    @inlinable static var sweepBatch: Int { 64 }

    // MARK: Adding

    /// Files `subscriber` at `place`. An object route needs the object itself, `sender`, to hold
    /// weakly. Returns the continuations of a departed sender whose address `sender` reuses, to
    /// finish after unlocking.
    ///
    /// Every place but `.senderType` holds `Subscriber<M>`; in specialised code the cast below
    /// is resolved at compile time. A `.senderType(key)` place is only ever made by the
    /// sender-type `subscribe`, with `key` the identity of `S` and `Element` `Envelope<M, S>`,
    /// so the list stored at `key` holds exactly `Element`.
    @inlinable
    func add<Element>(
        _ subscriber: Subscriber<Element>,
        at place: TableRoute,
        pinning sender: AnyObject?
    ) -> [any Finishable] {
        var departed: [any Finishable] = []
        switch place {
        case .everyone:
            guard let subscriber = subscriber as? Subscriber<M> else { return [] }
            _everyone.add(subscriber)
        case .object, .value:
            guard let subscriber = subscriber as? Subscriber<M>,
                let room = room(at: place, pinning: sender, departed: &departed)
            else { return [] }
            room.add(subscriber)
        case .senderType(let key):
            if let existing = _bySenderType[key] {
                unsafeDowncast(existing, to: SubscriberList<Element>.self).add(subscriber)
            } else {
                let subscribers = SubscriberList<Element>()
                subscribers.add(subscriber)
                _bySenderType[key] = subscribers
            }
        }
        _count += 1
        return departed
    }

    /// The room at an object or value place, made (empty) if there is none; nil for any other
    /// place. Making an object room displaces the room of a departed sender at the same address,
    /// whose continuations are added to `departed`. An empty room goes again when its last
    /// subscription does, or with the table.
    @inlinable
    func room(at place: TableRoute, pinning sender: AnyObject?, departed: inout [any Finishable]) -> SubscriberList<M>?
    {
        switch place {
        case .everyone, .senderType:
            return nil
        case .object:
            guard let sender else { return nil }
            if let existing = _byObject[ObjectIdentifier(sender)], existing._sender === sender {
                return existing._subscribers
            }
            let route = ObjectRoute<M>(sender: sender)
            if let stale = _byObject.insert(route) { departed += takeAll(of: stale) }
            return route._subscribers
        case .value(let key):
            if let existing = _byValue[key] { return existing }
            let subscribers = SubscriberList<M>()
            _byValue[key] = subscribers
            return subscribers
        }
    }

    /// The lane a subscription at `place` must hold while its replayed mail is yielded: the one
    /// every post it could hear holds (see ``Lanes``). Makes the room if need be.
    @inlinable
    func replayLane(at place: TableRoute, pinning sender: AnyObject?, departed: inout [any Finishable]) -> Lane? {
        switch place {
        case .everyone, .senderType: _lane
        case .object, .value: room(at: place, pinning: sender, departed: &departed)?._lane
        }
    }

    // MARK: Delivering

    /// Everything a post does holding `index`: returns false for a retired table, which holds
    /// nobody (a table filed since is newer than the post); otherwise does the table's
    /// housekeeping for the post, captures its recipients and lanes, and returns whether the
    /// table retired now.
    ///
    /// Built with `ASYNCMAIL_COUNT_SHARED_LOCKS`, it is kept out of line, like the registry's
    /// `lookUp`, so that `Benchmarks/callgrind.sh` can count what a post does under a lock that
    /// a post to another room also takes; otherwise it is inlined.
    #if ASYNCMAIL_COUNT_SHARED_LOCKS
    @inline(never)
    #else
    @inline(__always)
    #endif
    @inlinable
    func capturePost<S: Sendable>(
        _ mail: M?,
        from sender: S?,
        key: SenderKey,
        room lookup: SenderKey.RoomLookup,
        into recipients: inout Recipients<M, S>,
        lanes: inout Lanes,
        check: inout RoomCheck<M>,
        afterUnlock: inout AfterUnlock<LatestMail<M>.Displaced?>
    ) -> (captured: Bool, retired: Bool) {
        guard !isRetired else { return (false, false) }
        afterUnlock = housekeep(afterPosting: mail, key: key)
        capture(from: sender, key: key, room: lookup, into: &recipients, lanes: &lanes, check: &check)
        return (true, retireIfUnused())
    }

    /// The subscriptions that mail posted by `sender` must reach: unfiltered, pinned to this
    /// sender, and subscribed to its type. Pass `nil` for mail posted without a sender.
    ///
    /// Also sets the post's lanes (see ``Lanes``). The room is found by its sender's digest or
    /// address alone: `check` says what the caller checks once the lock is released (see
    /// ``RoomCheck``), and it drops the room (recipients and lane) unless the check holds.
    @inlinable
    func capture<S: Sendable>(
        from sender: S?,
        key: SenderKey,
        room lookup: SenderKey.RoomLookup,
        into recipients: inout Recipients<M, S>,
        lanes: inout Lanes,
        check: inout RoomCheck<M>
    ) {
        recipients._everyone = _everyone._entries
        var room: SubscriberList<M>?
        switch lookup {
        case .object(let id):
            // The route is keyed by the sender's address: if its (weak) sender is still alive,
            // it is the posted object, which is alive too. Otherwise it is a departed sender's.
            if let route = _byObject[id] {
                room = route._subscribers
                check = .object(route)
            }
        case .value(let digest):
            switch _byValue.candidate(for: digest, key: key) {
            case .none: break
            case .unverified(let entry):
                room = entry._value
                check = .value(entry)
            case .verified(let found): room = found
            }
        case .none:
            break
        }
        if let room {
            recipients._pinned = room._entries
        }
        lanes = Lanes(type: _lane, room: room?._lane, hearsSeveralRooms: hearsSeveralRooms)
        if let sender, !_bySenderType.isEmpty {
            // `as Any` opens an existential `S`, so this is the sender's own type.
            let ownType = ObjectIdentifier(type(of: sender as Any))
            var ownTypeSubscribers: [Subscriber<Envelope<M, S>>]?
            var castEnvelopes: [EnvelopeDelivery<M>] = []
            for (routeKey, list) in _senderTypesOf[ownType] ?? senderTypes(of: sender, ownType: ownType) {
                if routeKey == ObjectIdentifier(S.self) {
                    // The key is `S`'s identity, so the stored list is exactly this type.
                    ownTypeSubscribers = unsafeDowncast(list, to: SubscriberList<Envelope<M, S>>.self)._entries
                } else {
                    // A supertype or protocol of the sender's: the envelope needs a cast.
                    castEnvelopes.append(list.envelopes(of: M.self, from: sender))
                }
            }
            if !castEnvelopes.isEmpty {
                recipients._bySenderType = .withCasts(CastRecipients(ownType: ownTypeSubscribers, cast: castEnvelopes))
            } else if let ownTypeSubscribers {
                recipients._bySenderType = .ownType(ownTypeSubscribers)
            }
        }
    }

    /// The sender types that `sender` is, remembered for its own type. The cache is bounded by
    /// the number of types that post, and cleared past a size no program's senders reach.
    @usableFromInline
    func senderTypes(
        of sender: Any,
        ownType: ObjectIdentifier
    ) -> [(key: ObjectIdentifier, list: any AnySubscriberList)] {
        let matches = _bySenderType.filter { $0.value.isSenderType(of: sender) }.map { (key: $0.key, list: $0.value) }
        if _senderTypesOf.count >= 1_024 { _senderTypesOf = [:] }
        _senderTypesOf[ownType] = matches
        return matches
    }

    /// The subscriptions that hear exactly one sender, or every sender when `key` is nil; call
    /// after ``sweepDepartedSenders()``, so that an object route at `key`'s address is the live
    /// sender's (the caller holds the sender).
    @usableFromInline
    func count(hearing key: SenderKey?) -> Int {
        switch key {
        case nil: _everyone.count
        case .object(let sender)?: _byObject[sender._id].map { $0._subscribers.count } ?? 0
        case .value(let value)?: _byValue[value]?.count ?? 0
        case .none?: 0
        }
    }

    // MARK: Housekeeping

    /// What a post does to the table before its recipients are captured: counts toward the next
    /// departed-sender sweep (and sweeps when one is due), and keeps `mail` as the latest when
    /// the type keeps it. Returns the departed senders' streams and the replaced kept mail.
    @inlinable
    func housekeep(afterPosting mail: M?, key: SenderKey) -> AfterUnlock<LatestMail<M>.Displaced?> {
        let departed = sweepDepartedSendersAfterPost()
        guard let mail, let _latest else { return AfterUnlock(finishing: departed, releasing: nil) }
        return AfterUnlock(finishing: departed, releasing: _latest.record(mail, key: key))
    }

    // MARK: Removing

    /// Removes the routes of every sender that has been deallocated, and returns their
    /// continuations to finish.
    @inlinable
    func sweepDepartedSenders() -> [any Finishable] {
        guard !_byObject.isEmpty else { return [] }
        return _byObject.removeAllDeparted().flatMap(takeAll(of:))
    }

    /// Counts a post and, every ``sweepBatch`` posts or fewer, removes the routes of a batch of
    /// senders that have been deallocated; returns their continuations to finish.
    @inlinable
    func sweepDepartedSendersAfterPost() -> [any Finishable] {
        guard !_byObject.isEmpty else { return [] }
        return _byObject.sweepAfterPost(batch: Self.sweepBatch).flatMap(takeAll(of:))
    }

    /// Removes `subscriber` from `place`; nil when it is no longer there. As in ``add(_:at:pinning:)``,
    /// the cast to `Subscriber<M>` is resolved at compile time in specialised code.
    @inlinable
    func remove<Element>(_ subscriber: Subscriber<Element>, at place: TableRoute) -> (any Finishable)? {
        let removed: (any Finishable)?
        switch place {
        case .everyone:
            guard let typed = subscriber as? Subscriber<M> else { return nil }
            removed = _everyone.remove(typed)
        case .object(let key):
            guard let typed = subscriber as? Subscriber<M>, let route = _byObject[key] else { return nil }
            removed = route._subscribers.remove(typed)
            if route._subscribers.count == 0 { _byObject.remove(key) }
        case .value(let key):
            guard let typed = subscriber as? Subscriber<M>, let subscribers = _byValue[key] else { return nil }
            removed = subscribers.remove(typed)
            if subscribers.count == 0 { _byValue[key] = nil }
        case .senderType(let key):
            guard let subscribers = _bySenderType[key] else { return nil }
            removed = subscribers.removeErased(subscriber)
            if subscribers.count == 0 { _bySenderType[key] = nil }
        }
        if removed != nil { _count -= 1 }
        return removed
    }

    @usableFromInline
    func close() -> [any Finishable] {
        withIndex {
            _isRetired.store(true, ordering: .releasing)
            return removeAll()
        }
    }

    /// Removes every subscription; call holding `index`.
    @usableFromInline
    func removeAll() -> [any Finishable] {
        var all: [any Finishable] = []
        for kind in TableRoute.Kind.allCases {
            switch kind {
            case .everyone:
                all += _everyone.removeAll()
            case .object:
                for route in _byObject.removeAll() { all += route._subscribers.removeAll() }
            case .value:
                for subscribers in _byValue.values { all += subscribers.removeAll() }
                _byValue = ValueTable()
            case .senderType:
                for subscribers in _bySenderType.values { all += subscribers.removeAll() }
                _bySenderType = [:]
            }
        }
        _count = 0
        return all
    }

    @inlinable
    func takeAll(of route: ObjectRoute<M>) -> [any Finishable] {
        let taken = route._subscribers.removeAll()
        _count -= taken.count
        return taken
    }
}
