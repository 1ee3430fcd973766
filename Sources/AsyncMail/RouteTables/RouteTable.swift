import Synchronization

/// The type-erased face of ``RouteTable``, so one map can hold the tables of every mail type.
@usableFromInline
protocol AnyRouteTable: AnyObject, Sendable {
    /// Retires the table and removes every subscription; returns their continuations to finish,
    /// and the kept mail it dropped, to release once no lock is held.
    func close() -> (finishing: [any Finishable], releasing: [any Sendable])
    /// Whether the table holds anything: a subscription or kept mail.
    var isInUse: Bool { get }
}

/// Every subscription to one mail type, indexed so a post touches only the ones that match, and
/// sharded so that posts to different rooms of the type share no lock.
///
/// A post to a room (an object sender by identity, or a `Hashable` sender value) takes one lock:
/// its room's shard's (``RouteShard``), picked by the same look-up key that finds the room, among
/// ``shardCount``. So posts to rooms of one type in different shards never wait for each other,
/// nor write to one cache line, to find their recipients; two rooms share a shard by chance in one
/// of ``shardCount``, and then only for the look-up. Mail with no sender is one more room, in
/// the first shard.
///
/// What every post of the type reads, whatever its room, is read-mostly and guarded the other way
/// round: the subscriptions that hear several rooms (`everyone`, `bySenderType`) are read holding
/// any one shard's lock and written holding `writer` and every shard's lock (a big-reader lock),
/// so a post reads them with its own shard's lock and a change to them, rare, pays for it.
///
/// Locks, never taken in the other order: `writer`, then shards (only the holder of `writer`
/// holds more than one shard, in the order they were made), then `sweeper`, then nothing (the
/// order is stated once, with the lanes', in the Architecture article). All are leaves: held to
/// file, remove, count and capture, never while user code runs or a stream is yielded to.
/// Termination handlers take them (see ``Switchboard``). `lane` orders the posts that a
/// subscription hearing several rooms sees (see ``Lanes``); a post holds it while it yields, and
/// no termination handler takes it.
///
/// A table lives as long as its mailroom's switchboard: a post finds it with no lock and no
/// reference counting (see ``TypeMap``), which needs it never to go while the mailroom lives.
/// `close()` retires it, after which nothing is filed or delivered here.
///
/// Why `@unchecked Sendable` is safe: `everyone`'s list, `bySenderType` and `keepsLatest` are
/// read holding a shard's lock and written holding all of them; `shards` only under `writer`; the
/// rest is atomic or immutable. The model and stress tests, run under ThreadSanitizer in CI, post,
/// subscribe, count and drop from many threads at once.
///
/// Why `@exclusivity(unchecked)` is safe here, and on the mutable properties of ``RouteShard``,
/// ``SubscriberList``, ``KeptMail``, ``KeptRoom`` and ``Ring``: the runtime check it removes catches two
/// overlapping accesses to one property. Across threads the locks already rule that out. On one
/// thread an overlap needs the table re-entered while one of these properties is being accessed,
/// and no code runs during such an access but this module's: subscribers' filters and replays run
/// on values already read out, and re-entering through the public API would block on a
/// non-recursive lock. The checks are a measurable share of a post (`Benchmarks/README.md`); the
/// TSan run in `.ci/run` still watches every access for races.
@usableFromInline
final class RouteTable<M: Mail>: AnyRouteTable, @unchecked Sendable {
    /// How many shards a table has at most; a power of two. Made as rooms first land in them.
    @inlinable static var shardCount: Int { 64 }

    /// Taken to make a shard and to change what every shard reads; then every shard's lock.
    @usableFromInline let _writer = Locked()
    /// The shards by index: the unretained address of each shard made, 0 for none yet. A post
    /// reads its shard here with no lock; `shards` keeps them alive.
    @usableFromInline let _shardSlots: UnsafeMutablePointer<Atomic<UInt>>
    /// Every shard made, in the order made; under `writer`.
    @usableFromInline @exclusivity(unchecked) var _shards: [RouteShard<M>] = []
    /// Whether the type keeps its latest mail: a shard made from now on keeps it too. Written
    /// holding `writer` and every shard's lock; read holding either.
    @usableFromInline @exclusivity(unchecked) var _keepsLatest = false
    /// The type's lane (see ``Lanes``).
    @usableFromInline let _lane = Lane()
    /// Set by `close()`, holding every shard: nothing is filed here again.
    @usableFromInline let _isRetired = Atomic<Bool>(false)
    /// Live subscriptions across all routes, so counting is O(1).
    @usableFromInline let _count = Atomic<Int>(0)
    /// Subscriptions that take every mail of this type, from any sender or none. Read holding a
    /// shard's lock, written holding all (see above).
    @usableFromInline let _everyone = SubscriberList<M>()
    /// Envelope subscriptions by sender type; the value for `S` is a `SubscriberList<Envelope<M, S>>`.
    /// Read holding a shard's lock, written holding all; each change clears every shard's cache
    /// derived from it.
    @usableFromInline @exclusivity(unchecked) var _bySenderType: [ObjectIdentifier: any AnySubscriberList] = [:]
    /// The type's newest mail, whatever its sender: a retained ``Newest``'s address,
    /// 0 for none. Swapped by a post holding its lanes and its shard's lock; read holding every
    /// shard's lock, when no swap can be under way, so the box read is never one being released.
    @usableFromInline let _newest = Atomic<UInt>(0)
    /// Object rooms with kept mail, across shards, and that count after the last sweep of
    /// departed ones: sweeping again when it doubles keeps the mail of departed senders bounded,
    /// at O(1) amortised cost per room (see ``objectRoomAdded()``).
    @usableFromInline let _keptObjectRooms = Atomic<Int>(0)
    @usableFromInline let _keptAtLastSweep = Atomic<Int>(0)
    /// Object routes across shards: posts of a type with none skip the departed-sender sweep with
    /// one load.
    @usableFromInline let _objectRoutes = Atomic<Int>(0)
    /// Posts since the last sweep (see ``sweepAfterPost()``).
    @usableFromInline let _postsSinceSweep = Atomic<Int>(0)
    /// Every object route of every shard once more, in the order they were made, for the
    /// departed-sender sweep alone: checking consecutive routes of one array follows allocation
    /// order, so a batch's cold reads overlap (see ``ObjectRoutes``), where routes spread over
    /// shards did not (`Benchmarks/README.md`). Under `sweeper`, a leaf taken holding a shard's
    /// lock (to file or remove a route) or no lock (to sweep).
    @usableFromInline @exclusivity(unchecked) var _sweepList = ObjectRoutes<M>()
    @usableFromInline let _sweeper = RawLock()
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current

    // History (see `RouteTable+History.swift`): read holding a shard's lock, written holding all.

    /// The limits each room's history keeps within; nil while the type keeps no history.
    @usableFromInline @exclusivity(unchecked) var _historyLimits: HistoryLimits?
    /// The epoch new rooms' histories start in: the mailroom's.
    @usableFromInline @exclusivity(unchecked) var _historyEpoch: UInt64 = 0
    /// The type's digest in positions.
    @usableFromInline @exclusivity(unchecked) var _stream: UInt32 = 0
    /// Set while every post of the type is diverted (see `Mailroom._route(_:through:)`, an SPI):
    /// it comes back numbered, through `Switchboard.postPositioned`.
    @usableFromInline @exclusivity(unchecked) var _diversion: (@Sendable ([PostedMail]) -> Bool)?
    /// Subscriptions with positions to every room.
    @usableFromInline let _positionedEveryone = SubscriberList<Positioned<M>>()
    /// Subscriptions with positions to every sender of one type (`fromAny:`), whose elements are
    /// `Positioned<Envelope<M, S>>`, by `S`'s identity.
    @usableFromInline @exclusivity(unchecked) var _positionedBySenderType: [ObjectIdentifier: any AnySubscriberList] =
        [:]
    /// The type's count of kept mail across rooms: each mail's stamp, the position a subscription
    /// that hears several rooms sees, and what orders several rooms' latest mail (see
    /// ``KeptMail/latest(fromAny:after:)``). Taken holding the post's lanes and shard lock, so that
    /// two posts such a subscription hears are stamped in the order it hears them. One atomic word
    /// that every post that keeps mail writes.
    @usableFromInline let _stamps = Atomic<UInt64>(0)

    @inlinable init() {
        _shardSlots = .allocate(capacity: Self.shardCount)
        for index in 0..<Self.shardCount { (_shardSlots + index).initialize(to: Atomic(0)) }
    }

    deinit {
        _shardSlots.deinitialize(count: Self.shardCount)
        _shardSlots.deallocate()
        _ = recordNewest(nil)
    }

    /// Whether the table is retired (see above); nothing is filed in a retired table.
    @inlinable var isRetired: Bool { _isRetired.load(ordering: .acquiring) }

    /// Whether a subscription of this type hears several rooms, so that posts to different rooms
    /// must keep one order (see ``Lanes``); read holding a shard's lock.
    @inlinable var hearsSeveralRooms: Bool {
        // The entries, not `count`: neither list is a room's, so neither has subscriptions with
        // positions of its own to add.
        !_everyone._entries.isEmpty || !_bySenderType.isEmpty || !_positionedEveryone._entries.isEmpty
            || !_positionedBySenderType.isEmpty
    }

    /// Object routes checked for a departed sender together, every that many posts: one check
    /// per post on average, in batches so that the cold reads overlap (see ``ObjectRoutes``).
    @inlinable static var sweepBatch: Int { 64 }

    // MARK: Shards

    /// The shard a room's look-up key falls in: the top bits of a multiplicative hash of the
    /// object's address or the value's digest; mail with no sender goes to the first.
    @inlinable @inline(__always)
    static func shardIndex(_ lookup: SenderKey.RoomLookup) -> Int {
        let bits: UInt64
        switch lookup {
        case .none: return 0
        case .object(let id): bits = UInt64(UInt(bitPattern: id))
        case .value(let digest): bits = UInt64(truncatingIfNeeded: digest._rawHashValue(seed: 0))
        }
        return Int(truncatingIfNeeded: (bits &* 0x9E37_79B9_7F4A_7C15) &>> 58)
    }

    /// The shard at a table route: the room's for an object or value route, nil for the others.
    @inlinable
    static func shardIndex(at place: TableRoute) -> Int? {
        switch place {
        case .everyone, .senderType: nil
        case .object(let id): shardIndex(.object(id))
        case .value(let sender): shardIndex(.value(SenderDigest(sender)))
        }
    }

    /// Runs `body` with the shard at `index`, made if need be, unretained (the table keeps it).
    /// Takes no lock unless it makes the shard.
    @inlinable @inline(__always)
    func withShard<Result>(_ index: Int, _ body: (RouteShard<M>) -> Result) -> Result {
        let bits = _shardSlots[index].load(ordering: .acquiring)
        guard bits != 0, let address = UnsafeRawPointer(bitPattern: bits) else { return body(makeShard(index)) }
        return Unmanaged<RouteShard<M>>.fromOpaque(address)._withUnsafeGuaranteedRef(body)
    }

    /// The shard at `index`, made now unless another thread just did.
    @usableFromInline
    func makeShard(_ index: Int) -> RouteShard<M> {
        _writer.withLock {
            let bits = _shardSlots[index].load(ordering: .acquiring)
            if bits != 0, let address = UnsafeRawPointer(bitPattern: bits) {
                return Unmanaged<RouteShard<M>>.fromOpaque(address).takeUnretainedValue()
            }
            let shard = RouteShard<M>(keeping: _keepsLatest || _historyLimits != nil)
            _shards.append(shard)
            _shardSlots[index].store(UInt(bitPattern: Unmanaged.passUnretained(shard).toOpaque()), ordering: .releasing)
            return shard
        }
    }

    /// Runs `body` holding `writer` and every shard's lock: how what every shard reads changes.
    @inlinable
    func withAllShards<Result: Sendable>(_ body: () -> Result) -> Result {
        // Locks held together, in the Architecture article's order ("Every lock, in the order they are taken").
        _writer.withLock {
            for shard in _shards { shard.lock() }
            defer { for shard in _shards.reversed() { shard.unlock() } }
            return body()
        }
    }

    /// Every shard made so far; each is kept as long as the table.
    @inlinable
    var shards: [RouteShard<M>] {
        _writer.withLock { _shards }
    }

    // MARK: Adding

    /// Files `subscriber` at `place`, taking the locks that place needs. An object route needs
    /// the object itself, `sender`, to hold weakly. Returns the continuations of a departed
    /// sender whose address `sender` reuses, to finish after unlocking; nil when the table is
    /// retired (its mailroom closed).
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
    ) -> [any Finishable]? {
        if let index = Self.shardIndex(at: place) {
            return withShard(index) { shard in
                shard.withLock { () -> [any Finishable]? in
                    guard !isRetired else { return nil }
                    return add(subscriber, at: place, pinning: sender, in: shard)
                }
            }
        }
        return withAllShards { () -> [any Finishable]? in
            guard !isRetired else { return nil }
            addHearingSeveralRooms(subscriber, at: place)
            return []
        }
    }

    /// Files a subscription to one room in its shard, whose lock the caller holds.
    @inlinable
    func add<Element>(
        _ subscriber: Subscriber<Element>,
        at place: TableRoute,
        pinning sender: AnyObject?,
        in shard: RouteShard<M>
    ) -> [any Finishable] {
        var departed: [any Finishable] = []
        guard let subscriber = subscriber as? Subscriber<M>,
            let room = room(at: place, pinning: sender, in: shard, departed: &departed)
        else { return [] }
        room.add(subscriber)
        shard._filings.add(1, ordering: .relaxed)
        _count.add(1, ordering: .relaxed)
        return departed
    }

    /// Files a subscription that hears several rooms; the caller holds every shard's lock.
    @inlinable
    func addHearingSeveralRooms<Element>(_ subscriber: Subscriber<Element>, at place: TableRoute) {
        switch place {
        case .everyone:
            guard let subscriber = subscriber as? Subscriber<M> else { return }
            _everyone.add(subscriber)
        case .senderType(let key):
            if let existing = _bySenderType[key] {
                unsafeDowncast(existing, to: SubscriberList<Element>.self).add(subscriber)
            } else {
                let subscribers = SubscriberList<Element>()
                subscribers.add(subscriber)
                _bySenderType[key] = subscribers
                senderTypesChanged()
            }
        case .object, .value:
            return
        }
        for shard in _shards { shard._filings.add(1, ordering: .relaxed) }
        _count.add(1, ordering: .relaxed)
    }

    /// Forgets every shard's sender-type cache; call holding every shard's lock.
    @inlinable
    func senderTypesChanged() {
        for shard in _shards { shard._senderTypesOf = [:] }
    }

    /// The room at an object or value place in `shard` (whose lock the caller holds), made
    /// (empty) if there is none; nil for any other place. Making an object room displaces the
    /// room of a departed sender at the same address, whose continuations are added to
    /// `departed`. An empty room goes again when its last subscription does, or with the table.
    @inlinable
    func room(
        at place: TableRoute,
        pinning sender: AnyObject?,
        in shard: RouteShard<M>,
        departed: inout [any Finishable]
    ) -> SubscriberList<M>? {
        switch place {
        case .everyone, .senderType:
            return nil
        case .object:
            guard let sender else { return nil }
            if let existing = shard._byObject[ObjectIdentifier(sender)], existing._sender === sender {
                return existing._subscribers
            }
            let route = ObjectRoute<M>(sender: sender)
            if let stale = shard._byObject.insert(route) {
                departed += takeAll(of: stale)
            } else {
                _objectRoutes.add(1, ordering: .relaxed)
            }
            withSweepList { _ = _sweepList.insert(route) }
            return route._subscribers
        case .value(let key):
            if let existing = shard._byValue[key] { return existing }
            let subscribers = SubscriberList<M>(isRoom: true)
            shard._byValue[key] = subscribers
            return subscribers
        }
    }

    /// Runs `body` holding the sweep list's lock.
    @inlinable
    func withSweepList<Result>(_ body: () -> Result) -> Result {
        _sweeper.lock()
        _threadSanitizer?.acquire(self)
        defer {
            _threadSanitizer?.release(self)
            _sweeper.unlock()
        }
        return body()
    }

    /// Takes routes the sweep list found departed out of their shards, one shard's lock at a time
    /// (a route replaced meanwhile by a new sender at its address is left: that replacement ended
    /// its subscriptions); call holding no lock. Returns their continuations to finish.
    @usableFromInline
    func removeDeparted(_ routes: [ObjectRoute<M>]) -> [any Finishable] {
        var departed: [any Finishable] = []
        for route in routes {
            departed += withShard(Self.shardIndex(.object(route._key))) { shard in
                shard.withLock { () -> [any Finishable] in
                    guard shard._byObject[route._key] === route else { return [] }
                    shard._byObject.remove(route._key)
                    _objectRoutes.subtract(1, ordering: .relaxed)
                    return takeAll(of: route)
                }
            }
        }
        return departed
    }

    // MARK: Delivering

    /// The subscriptions that mail posted by `sender` must reach: unfiltered, pinned to this
    /// sender, and subscribed to its type; call holding `shard`'s lock, the shard the room's
    /// look-up key picks. Pass `nil` for mail posted without a sender.
    ///
    /// Also sets the post's lanes (see ``Lanes``). The room is found by its sender's digest or
    /// address alone: `check` says what the caller checks once the lock is released (see
    /// ``RoomCheck``), and it drops the room (recipients and lane) unless the check holds.
    ///
    /// Returns the room found (unchecked, like its lanes), for a history post's own recipients.
    @inlinable @discardableResult
    func capture<S: Sendable>(
        from sender: S?,
        room lookup: SenderKey.RoomLookup,
        in shard: RouteShard<M>,
        into recipients: inout Recipients<M, S>,
        lanes: inout Lanes,
        check: inout RoomCheck<M>
    ) -> SubscriberList<M>? {
        if !_everyone._entries.isEmpty { recipients._everyone = _everyone._entries }
        let room = room(lookup, sender: sender, in: shard, check: &check)
        if let room {
            recipients._pinned = room._entries
        }
        lanes = Lanes(type: _lane, room: room?._lane, hearsSeveralRooms: hearsSeveralRooms)
        if let sender, !_bySenderType.isEmpty {
            // `as Any` opens an existential `S`, so this is the sender's own type.
            let ownType = ObjectIdentifier(type(of: sender as Any))
            var ownTypeSubscribers: [Subscriber<Envelope<M, S>>]?
            var castEnvelopes: [EnvelopeDelivery<M>] = []
            for (routeKey, list) in shard._senderTypesOf[ownType]
                ?? senderTypes(of: sender, ownType: ownType, in: shard)
            {
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
        return room
    }

    /// The room a post to `lookup` finds in `shard` (whose lock the caller holds), found by its
    /// sender's digest or address alone, with what the caller checks once the lock is released
    /// (see ``RoomCheck``); nil when the room has no subscriptions.
    @inlinable @inline(__always)
    func room<S: Sendable>(
        _ lookup: SenderKey.RoomLookup,
        sender: S?,
        in shard: RouteShard<M>,
        check: inout RoomCheck<M>
    ) -> SubscriberList<M>? {
        switch lookup {
        case .object(let id):
            // The route is keyed by the sender's address: if its (weak) sender is still alive,
            // it is the posted object, which is alive too. Otherwise it is a departed sender's.
            guard let route = shard._byObject[id] else { return nil }
            check = .object(route)
            return route._subscribers
        case .value(let digest):
            switch shard._byValue.candidate(for: digest, sender: sender) {
            case .none: return nil
            case .unverified(let entry):
                check = .value(entry)
                return entry._value
            case .verified(let found): return found
            }
        case .none:
            return nil
        }
    }

    /// The sender types that `sender` is, remembered in `shard` for its own type. The cache is
    /// bounded by the number of types that post, and cleared past a size no program's senders reach.
    @usableFromInline
    func senderTypes(
        of sender: Any,
        ownType: ObjectIdentifier,
        in shard: RouteShard<M>
    ) -> [(key: ObjectIdentifier, list: any AnySubscriberList)] {
        let matches = _bySenderType.filter { $0.value.isSenderType(of: sender) }.map { (key: $0.key, list: $0.value) }
        if shard._senderTypesOf.count >= 1_024 { shard._senderTypesOf = [:] }
        shard._senderTypesOf[ownType] = matches
        return matches
    }

    /// The subscriptions a post from `key`'s sender would reach: its room's, every sender's, and
    /// those that hear every sender of one of its types (`fromAny:`). The demand rule (see
    /// ``Switchboard/Counted``). Call after ``sweepDepartedSenders()``, so that an object route at
    /// `key`'s address is the live sender's (the caller holds the sender).
    @usableFromInline
    func count(reaching key: SenderKey) -> Int {
        let sender: Any?
        let room: Int
        switch key {
        case .object(let object):
            sender = object.object
            room = withShard(Self.shardIndex(.object(object._id))) { shard in
                shard.withLock { shard._byObject[object._id].map { $0._subscribers.count } ?? 0 }
            }
        case .value(let value):
            sender = value._value
            room = withShard(Self.shardIndex(.value(SenderDigest(value)))) { shard in
                shard.withLock { shard._byValue[value]?.count ?? 0 }
            }
        case .none:
            sender = nil
            room = 0
        }
        // The lists that hear several rooms are read holding shard 0's lock (see the type's notes).
        let severalRooms = withShard(0) { shard in
            shard.withLock {
                var count = _everyone.count + _positionedEveryone.count
                guard let sender else { return count }
                for list in _bySenderType.values where list.isSenderType(of: sender) { count += list.count }
                for list in _positionedBySenderType.values where list.isSenderType(of: sender) { count += list.count }
                return count
            }
        }
        return room + severalRooms
    }

    /// The subscriptions to every sender of the type `key` names (`fromAny:`).
    @usableFromInline
    func count(ofSenderType key: ObjectIdentifier) -> Int {
        withShard(0) { shard in
            shard.withLock { (_bySenderType[key]?.count ?? 0) + (_positionedBySenderType[key]?.count ?? 0) }
        }
    }

    // MARK: Keeping the latest mail

    /// The type's newest mail in a box of its own, so that ``recordNewest(_:)`` swaps it atomically.
    @usableFromInline
    final class Newest: Sendable {
        @usableFromInline let _mail: M

        @inlinable init(_ mail: M) { _mail = mail }
    }

    /// Makes every shard, and every shard made later, keep the latest mail of the type.
    @usableFromInline
    func keepLatest() {
        withAllShards {
            _keepsLatest = true
            for shard in _shards where shard._kept == nil { shard._kept = KeptMail() }
        }
    }

    /// The newest mail kept from any sender or none; call holding every shard's lock.
    @usableFromInline
    func newest() -> M? {
        let bits = _newest.load(ordering: .acquiring)
        guard bits != 0, let address = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<Newest>.fromOpaque(address).takeUnretainedValue()._mail
    }

    /// Makes `mail` the type's newest (nil: takes it out, for closing); returns the one it
    /// replaced, to release once no lock is held. Called holding the post's lanes and its shard's
    /// lock, so two posts that anyone hears both swap in the order they deliver.
    @inlinable
    func recordNewest(_ mail: M?) -> M? {
        let bits = mail.map { UInt(bitPattern: Unmanaged.passRetained(Newest($0)).toOpaque()) } ?? 0
        let old = _newest.exchange(bits, ordering: .acquiringAndReleasing)
        guard old != 0, let address = UnsafeRawPointer(bitPattern: old) else { return nil }
        return Unmanaged<Newest>.fromOpaque(address).takeRetainedValue()._mail
    }

    /// Keeps `mail` as its room's latest and as the type's newest, if the type keeps its latest
    /// mail (``keepLatest()``); call holding `shard`'s lock and the post's lanes, so that every
    /// subscriber, a replaying one too, hears the posts of one lane in the order they were kept.
    /// The mail draws a stamp of its own (a history post keeps its latest in ``record(_:key:found:digest:in:discarding:)``,
    /// with its history stamp). What it replaced goes to `discarded`.
    @inlinable
    func recordLatest(_ mail: M, key: SenderKey, in shard: RouteShard<M>, discarding discarded: inout DiscardedMail<M>)
    {
        guard _keepsLatest, let kept = shard._kept else { return }
        discarded._newest = recordNewest(mail)
        if case .none = key { return }  // mail with no sender is only the type's newest
        let made = kept.room(at: key, epoch: _historyEpoch, digest: nil)
        discarded.add(made)
        discarded._latest = made._room.recordLatest(mail, stamp: _stamps.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    /// Counts one more object room with kept mail and, once their number has doubled since the
    /// last sweep, takes departed senders' rooms out of every shard, one lock at a time; call
    /// holding no shard's lock. Returns what it took, to release once no lock is held.
    @usableFromInline
    func objectRoomAdded() -> [KeptRoom<M>] {
        let rooms = _keptObjectRooms.wrappingAdd(1, ordering: .relaxed).newValue
        guard rooms > max(8, 2 * _keptAtLastSweep.load(ordering: .relaxed)) else { return [] }
        let swept = sweepKeptMail()
        _keptAtLastSweep.store(_keptObjectRooms.load(ordering: .relaxed), ordering: .relaxed)
        return swept
    }

    /// Takes the rooms of departed object senders out of every shard, one lock at a time; call
    /// holding no shard's lock. Returns them, to release once no lock is held.
    @usableFromInline
    func sweepKeptMail() -> [KeptRoom<M>] {
        // A type with no object room (most, and every one that keeps nothing) takes no lock here.
        guard _keptObjectRooms.load(ordering: .relaxed) > 0 else { return [] }
        return shards.flatMap { shard in shard.withLock { sweepKeptMail(in: shard) } }
    }

    /// Takes the rooms of departed object senders out of `shard`, whose lock the caller holds;
    /// returns them, to release once no lock is held.
    @usableFromInline
    func sweepKeptMail(in shard: RouteShard<M>) -> [KeptRoom<M>] {
        guard let kept = shard._kept, !kept._byObject.isEmpty else { return [] }
        let swept = kept.sweepDeparted()
        if !swept.isEmpty { _keptObjectRooms.subtract(swept.count, ordering: .relaxed) }
        return swept
    }

    /// The newest mail kept from a sender that is an `S`; call holding every shard's lock.
    @usableFromInline
    func newest<S: Sendable>(fromAny senderType: S.Type) -> Envelope<M, S>? {
        guard _keepsLatest else { return nil }
        var newest: (Envelope<M, S>, stamp: UInt64)?
        for shard in _shards {
            if let found = shard._kept?.latest(fromAny: S.self, after: newest?.stamp ?? 0) { newest = found }
        }
        return newest?.0
    }

    /// The newest mail kept from one sender; call holding the lock of the shard its key picks.
    @usableFromInline
    func newest(from key: SenderKey, in shard: RouteShard<M>) -> M? {
        guard _keepsLatest else { return nil }
        return shard._kept?.exact(key)?._latest
    }

    // MARK: Removing

    /// Removes the routes of every sender that has been deallocated, and returns their
    /// continuations to finish.
    @usableFromInline
    func sweepDepartedSenders() -> [any Finishable] {
        guard _objectRoutes.load(ordering: .relaxed) > 0 else { return [] }
        return removeDeparted(withSweepList { _sweepList.removeAllDeparted() })
    }

    /// Counts a post of a type with object routes and, every ``sweepBatch`` posts or fewer
    /// (as many as there are routes), checks that many routes for a departed sender, removes
    /// those whose sender is gone, and returns their continuations to finish.
    ///
    /// That is one check per post on average. The routes are checked in the sweep list,
    /// round-robin from the top down (``ObjectRoutes/sweep(budget:)``): a round walks every route
    /// once, and removing a route moves the last one (already checked this round) into its place,
    /// so no check is spent twice in a round. Hence, with `n` routes and none pinned meanwhile, a
    /// sender that departs is found within `n` posts when `n <= batch`, and within
    /// `n + batch - 1` otherwise (the last batch may start just before it departs). A sweep never waits: a post that finds another sweeping leaves
    /// the count due, and the first post after that sweep sweeps again, so under contention the
    /// bound holds counting the posts made while no sweep runs. Only a type with object-pinned
    /// subscriptions counts its posts here; the count is one atomic word its posts share.
    @inlinable
    func sweepAfterPost() -> [any Finishable] {
        let routes = _objectRoutes.load(ordering: .relaxed)
        guard routes > 0 else { return [] }
        let due = min(Self.sweepBatch, routes)
        guard _postsSinceSweep.wrappingAdd(1, ordering: .relaxed).newValue >= due else { return [] }
        guard _sweeper.tryLock() else { return [] }
        _postsSinceSweep.store(0, ordering: .relaxed)
        _threadSanitizer?.acquire(self)
        let found = _sweepList.sweep(budget: due)
        _threadSanitizer?.release(self)
        _sweeper.unlock()
        return found.isEmpty ? [] : removeDeparted(found)
    }

    /// Removes `subscriber` from `place`, taking the locks that place needs; nil when it is no
    /// longer there. `Element` is `M` or, for a subscription with positions, `Positioned<M>` (an
    /// envelope of either at `.senderType`): as in ``add(_:at:pinning:)``, the casts below are
    /// resolved at compile time in specialised code.
    @inlinable
    func remove<Element>(_ subscriber: Subscriber<Element>, at place: TableRoute) -> (any Finishable)? {
        let removed: (any Finishable)?
        switch place {
        case .everyone:
            removed = withAllShards { () -> (any Finishable)? in
                if let typed = subscriber as? Subscriber<M> { return _everyone.remove(typed) }
                guard let typed = subscriber as? Subscriber<Positioned<M>> else { return nil }
                return _positionedEveryone.remove(typed)
            }
        case .object(let key):
            removed = withShard(Self.shardIndex(.object(key))) { shard in
                shard.withLock { () -> (any Finishable)? in
                    guard let route = shard._byObject[key], let list = Self.list(of: subscriber, in: route._subscribers)
                    else { return nil }
                    let removed = list.remove(subscriber)
                    if route._subscribers.isEmpty {
                        shard._byObject.remove(key)
                        _objectRoutes.subtract(1, ordering: .relaxed)
                        withSweepList {
                            if _sweepList[key] === route { _sweepList.remove(key) }
                        }
                    }
                    return removed
                }
            }
        case .value(let key):
            removed = withShard(Self.shardIndex(.value(SenderDigest(key)))) { shard in
                shard.withLock { () -> (any Finishable)? in
                    guard let room = shard._byValue[key], let list = Self.list(of: subscriber, in: room) else {
                        return nil
                    }
                    let removed = list.remove(subscriber)
                    if room.isEmpty { shard._byValue[key] = nil }
                    return removed
                }
            }
        case .senderType(let key):
            removed = withAllShards { () -> (any Finishable)? in
                if let list = _bySenderType[key], let removed = list.removeErased(subscriber) {
                    if list.count == 0 {
                        _bySenderType[key] = nil
                        senderTypesChanged()
                    }
                    return removed
                }
                guard let list = _positionedBySenderType[key], let removed = list.removeErased(subscriber) else {
                    return nil
                }
                if list.count == 0 { _positionedBySenderType[key] = nil }
                return removed
            }
        }
        if removed != nil { _count.subtract(1, ordering: .relaxed) }
        return removed
    }

    /// The list of `room` that holds subscribers like `subscriber`: the room's own, or its list
    /// with positions.
    @inlinable
    static func list<Element>(
        of subscriber: Subscriber<Element>,
        in room: SubscriberList<M>
    ) -> SubscriberList<Element>? {
        if Element.self == M.self { return unsafeDowncast(room, to: SubscriberList<Element>.self) }
        return room._positioned.flatMap { $0 as? SubscriberList<Element> }
    }

    @usableFromInline
    var isInUse: Bool {
        _count.load(ordering: .relaxed) > 0 || _newest.load(ordering: .relaxed) != 0
            || withAllShards { _historyLimits != nil || _shards.contains { $0._kept?.isEmpty == false } }
    }

    /// Retires the table and empties it, holding every shard's lock.
    @usableFromInline
    func close() -> (finishing: [any Finishable], releasing: [any Sendable]) {
        withAllShards { () -> (finishing: [any Finishable], releasing: [any Sendable]) in
            _isRetired.store(true, ordering: .releasing)
            var all: [any Finishable] = []
            var kept: [any Sendable] = []
            all += _everyone.removeAll()
            for subscribers in _bySenderType.values { all += subscribers.removeAll() }
            _bySenderType = [:]
            for shard in _shards {
                for route in shard._byObject.removeAll() { all += route._subscribers.removeAll() }
                for subscribers in shard._byValue.values { all += subscribers.removeAll() }
                shard._byValue = ValueTable()
                shard._senderTypesOf = [:]
                if let rooms = shard._kept?.all { kept.append(rooms) }
                shard._kept = nil
            }
            _keepsLatest = false
            if let newest = recordNewest(nil) { kept.append(newest) }
            all += _positionedEveryone.removeAll()
            for subscribers in _positionedBySenderType.values { all += subscribers.removeAll() }
            _positionedBySenderType = [:]
            _historyLimits = nil
            _diversion = nil
            _keptObjectRooms.store(0, ordering: .relaxed)
            _objectRoutes.store(0, ordering: .relaxed)
            withSweepList { _ = _sweepList.removeAll() }
            _count.store(0, ordering: .relaxed)
            return (all, kept)
        }
    }

    @inlinable
    func takeAll(of route: ObjectRoute<M>) -> [any Finishable] {
        let taken = route._subscribers.removeAll()
        _count.subtract(taken.count, ordering: .relaxed)
        return taken
    }
}
