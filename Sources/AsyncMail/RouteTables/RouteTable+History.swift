import Synchronization

// History rides the table: each room's history lives in the room's shard (see ``KeptMail``),
// and subscriptions with positions are filed with the room's other subscriptions (a room's
// `SubscriberList._positioned`) or with those that hear several rooms. So a history post takes
// the locks and lanes any post to its room takes, and nothing more.
extension RouteTable {
    /// Positions' room digest for a subscription that hears several rooms: its positions are the
    /// type's stamps, not one room's numbers.
    @inlinable static var severalRooms: UInt32 { .max }

    // MARK: Keeping

    /// Makes every room keep history within `limits`, or changes the limits; returns what they
    /// dropped, to release once no lock is held.
    @usableFromInline
    func keepHistory(_ limits: HistoryLimits, epoch: UInt64) -> [KeptRoom<M>.Entry] {
        let stream = RoomDigest.fnv1a(String(reflecting: M.self))
        return withAllShards { () -> [KeptRoom<M>.Entry] in
            guard !isRetired else { return [] }
            if _historyLimits == nil {
                _historyEpoch = epoch
                _stream = stream
            }
            let isNew = _historyLimits == nil
            _historyLimits = limits
            var dropped: [KeptRoom<M>.Entry] = []
            let now = ContinuousClock.now
            for shard in _shards {
                if shard._kept == nil { shard._kept = KeptMail() }
                for room in shard._kept!.all {
                    if isNew { room._epoch = epoch }  // a room that kept only its latest mail so far
                    dropped += room.trim(to: limits, now: now)
                }
            }
            return dropped
        }
    }

    /// Whether the type keeps history, and its limits.
    @usableFromInline
    var historyLimits: HistoryLimits? { withAllShards { _historyLimits } }

    /// Makes a relay take every post of the type (`route`), or stops it (nil). Stopping starts a
    /// new epoch of this mailroom's own in every room, dropping what is kept: the relay's
    /// positions go on without this mailroom, so its own must not look like theirs.
    @usableFromInline
    func route(through route: (@Sendable ([PostedMail]) -> Bool)?, epoch: UInt64) -> [KeptRoom<M>.Entry] {
        withAllShards { () -> [KeptRoom<M>.Entry] in
            guard !isRetired else { return [] }
            let wasRouted = _diversion != nil
            _diversion = route
            guard wasRouted, route == nil else { return [] }
            _historyEpoch = epoch
            var dropped: [KeptRoom<M>.Entry] = []
            for shard in _shards {
                for room in shard._kept?.all ?? [] {
                    room._epoch = epoch
                    dropped += room.takeAll()
                }
            }
            return dropped
        }
    }

    // MARK: Posting

    /// The room's subscriptions with positions, and the lists of those to several rooms that
    /// hear `sender`; call holding the room's shard lock, with `room` the room the post verified.
    @inlinable
    func capturePositioned<S: Sendable>(
        from sender: S?,
        room: SubscriberList<M>?,
        into positioned: inout PositionedRecipients<M>
    ) {
        if let list = room?._positioned {
            positioned._room = unsafeDowncast(list, to: SubscriberList<Positioned<M>>.self)._entries
        }
        if _positionedEveryone.count > 0 { positioned._everyone = _positionedEveryone._entries }
        if let sender, !_positionedBySenderType.isEmpty {
            positioned._bySenderType = _positionedBySenderType.values.compactMap { list in
                list.isSenderType(of: sender) ? list.positionedEnvelopes(of: M.self, from: sender as any Sendable) : nil
            }
        }
    }

    /// The lanes a post to `lookup` holds (see ``Lanes``) and the room check it makes once the
    /// lock is released, as ``capture(from:room:in:into:lanes:check:)`` works them out but
    /// without capturing recipients: a history post's first look, which only learns what to take.
    /// Call holding `shard`'s lock.
    @inlinable
    func lanes<S: Sendable>(
        _ lookup: SenderKey.RoomLookup,
        sender: S?,
        in shard: RouteShard<M>,
        check: inout RoomCheck<M>
    ) -> Lanes {
        Lanes(
            type: _lane,
            room: room(lookup, sender: sender, in: shard, check: &check)?._lane,
            hearsSeveralRooms: hearsSeveralRooms
        )
    }

    /// Appends a post's mail to its room's history (its room made, or its digest set, with
    /// `digest` if need be) and, if the type keeps its latest mail, keeps the last as the room's
    /// latest and the type's newest, as ``recordLatest(_:key:in:discarding:)`` does but with its
    /// history stamp and without finding the room again; adds what that dropped or replaced to
    /// `discarded`. Call holding the room's shard lock and the post's lanes. Nil when the room needs a digest and none was given: work
    /// it out with no lock held and try again.
    @inlinable
    func record(
        _ mails: [M],
        key: SenderKey,
        found: KeptRoom<M>?,
        digest: UInt32?,
        in shard: RouteShard<M>,
        discarding discarded: inout DiscardedMail<M>
    ) -> HistoryRecord? {
        guard let kept = shard._kept, let limits = _historyLimits else { return HistoryRecord() }
        let existing = found.flatMap { kept.holds($0, at: key) ? $0 : nil } ?? kept.exact(key)
        guard existing?._room != nil || digest != nil else { return nil }
        let made = existing.map { KeptMail.Made($0) } ?? kept.room(at: key, epoch: _historyEpoch, digest: digest)
        discarded.add(made)
        let room = made._room
        if room._room == nil { room._room = digest }
        let firstStamp = _stamps.wrappingAdd(UInt64(mails.count), ordering: .relaxed).oldValue &+ 1
        let first = room.append(mails, firstStamp: firstStamp, limits: limits, now: .now, into: &discarded._dropped)
        if _keepsLatest, let last = mails.last {
            discarded._newest = recordNewest(last)
            switch key {
            case .none: break  // mail with no sender is only the type's newest
            case .object, .value:
                discarded._latest = room.recordLatest(last, stamp: firstStamp &+ UInt64(mails.count &- 1))
            }
        }
        var record = HistoryRecord()
        record._roomPosition = MailPosition(epoch: room._epoch, stream: _stream, room: room._room!, sequence: first)
        record._typePosition = MailPosition(
            epoch: _historyEpoch,
            stream: _stream,
            room: Self.severalRooms,
            sequence: firstStamp
        )
        return record
    }

    // MARK: Subscribing

    /// Files a subscription with positions to one room, in `shard` (whose lock the caller holds,
    /// and the room's lane), and reads what it replays: the room's kept mail after `position`.
    /// Makes the room's history with `digest` if it has none.
    @usableFromInline
    func resume(
        _ subscriber: Subscriber<Positioned<M>>,
        in room: SubscriberList<M>,
        key: SenderKey,
        after position: MailPosition?,
        digest: UInt32,
        ahead lead: UInt64,
        shard: RouteShard<M>
    ) -> Result<RoomResumption<M>, PositionError> {
        guard let kept = shard._kept, let limits = _historyLimits else {
            return .failure(.noHistory(String(describing: M.self)))
        }
        var resumption = RoomResumption<M>()
        let made = kept.room(at: key, epoch: _historyEpoch, digest: digest)
        let history = made._room
        if history._room == nil { history._room = digest }
        // Counted, not swept: the next post that adds an object room sweeps (`objectRoomAdded()`).
        if made._isNewObjectRoom { _keptObjectRooms.add(1, ordering: .relaxed) }
        resumption._released = made._replaced.map { [$0] } ?? []
        resumption._released += history.trim(to: limits, now: .now)
        var after = history.newest  // live: nothing kept is replayed
        if let position {
            if position == .oldestKept {
                after = history.firstKept - 1
            } else if position.epoch != history._epoch, !(position.isRoomBeginning && _diversion != nil) {
                resumption._gap = HistoryGap(code: .otherEpoch, missed: nil)
            } else if position.stream != _stream {
                return .failure(.otherMailType)
            } else if position.room != digest {
                return .failure(.otherRoom)
            } else if position.sequence > history.newest {
                // Routed through a relay's table, another instance may have read further: wait
                // for that far, within a bound, so that a forged position cannot silence it.
                guard _diversion != nil, position.sequence - history.newest < lead else {
                    return .failure(.notYetPosted(position.sequence, newest: history.newest))
                }
                resumption._liveAfter = position.sequence
                after = position.sequence
            } else {
                after = position.sequence
                let first = history.firstKept
                if after + 1 < first {
                    resumption._gap = HistoryGap(code: .expired, missed: Int(clamping: first - after - 1))
                    after = first - 1
                }
            }
        }
        let (epoch, roomDigest) = (history._epoch, digest)
        resumption._replay = history.kept(after: min(after, history.newest)).map { entry in
            Positioned(
                mail: entry._mail,
                position: MailPosition(epoch: epoch, stream: _stream, room: roomDigest, sequence: entry._sequence)
            )
        }
        // A room the relay's store has not numbered yet has only this mailroom's epoch, which no
        // other process shares: its start is the room's beginning, which every process reads
        // alike, so a client that heard nothing resumes anywhere with all that was posted since.
        let isUnnumbered = _diversion != nil && after == 0 && history.newest == 0 && epoch == _historyEpoch
        resumption._start = MailPosition(
            epoch: isUnnumbered ? 0 : epoch,
            stream: _stream,
            room: roomDigest,
            sequence: after
        )
        let list: SubscriberList<Positioned<M>>
        if let existing = room._positioned {
            list = unsafeDowncast(existing, to: SubscriberList<Positioned<M>>.self)
        } else {
            list = SubscriberList<Positioned<M>>()
            room._positioned = list
        }
        list.add(subscriber)
        _count.add(1, ordering: .relaxed)
        return .success(resumption)
    }

    /// Files a subscription with positions to several rooms, holding every shard's lock and the
    /// type's lane, and reads what it replays: every room's kept mail with a stamp after
    /// `position`'s, in stamp order (the order such a subscription hears posts in), made into
    /// elements by `element` (nil: a room it does not hear).
    @usableFromInline
    func resumeSeveralRooms<Element>(
        _ subscriber: Subscriber<Positioned<Element>>,
        into list: () -> SubscriberList<Positioned<Element>>,
        after position: MailPosition?,
        element: (M, _ sender: Any?) -> Element?
    ) -> Result<RoomResumption<Element>, PositionError> {
        guard let limits = _historyLimits else { return .failure(.noHistory(String(describing: M.self))) }
        var resumption = RoomResumption<Element>()
        var after = _stamps.load(ordering: .relaxed)  // live
        if let position {
            if position == .oldestKept {
                after = 0
            } else if position.room != Self.severalRooms {
                // A room's position, whatever its epoch: the caller's mistake, told at once, the
                // same for `.everyone` and `fromAny:` (a position of another epoch is not).
                return .failure(.severalRooms)
            } else if position.epoch != _historyEpoch {
                resumption._gap = HistoryGap(code: .otherEpoch, missed: nil)
            } else if position.stream != _stream {
                return .failure(.otherMailType)
            } else if position.sequence > after {
                return .failure(.notYetPosted(position.sequence, newest: after))
            } else {
                after = position.sequence
            }
        }
        var kept: [(stamp: UInt64, mail: M, sender: Any?)] = []
        let now = ContinuousClock.now
        for shard in _shards {
            for (history, sender) in shard._kept?.allWithSenders ?? [] {
                resumption._released += history.trim(to: limits, now: now)
                for entry in history.kept(after: 0) where entry._stamp > after {
                    kept.append((entry._stamp, entry._mail, sender))
                }
            }
        }
        // Every stamp after `after` is one mail of one room: those no room keeps were dropped.
        let missed = _stamps.load(ordering: .relaxed) - after - UInt64(kept.count)
        if missed > 0, position != nil, position != .oldestKept, resumption._gap == nil {
            resumption._gap = HistoryGap(code: .expired, missed: Int(clamping: missed))
        }
        kept.sort { $0.stamp < $1.stamp }
        let stream = _stream
        let epoch = _historyEpoch
        func typePosition(_ stamp: UInt64) -> MailPosition {
            MailPosition(epoch: epoch, stream: stream, room: Self.severalRooms, sequence: stamp)
        }
        resumption._replay = kept.compactMap { entry in
            element(entry.mail, entry.sender).map { Positioned(mail: $0, position: typePosition(entry.stamp)) }
        }
        resumption._start = typePosition(position == .oldestKept ? (kept.first.map { $0.stamp - 1 } ?? after) : after)
        list().add(subscriber)
        _count.add(1, ordering: .relaxed)
        return .success(resumption)
    }

    /// The list of `fromAny:` subscriptions with positions for sender type `S`, made if need be;
    /// call holding every shard's lock.
    @usableFromInline
    func positionedList<S: Sendable>(fromAny senderType: S.Type) -> SubscriberList<Positioned<Envelope<M, S>>> {
        let key = ObjectIdentifier(S.self)
        if let existing = _positionedBySenderType[key] {
            return unsafeDowncast(existing, to: SubscriberList<Positioned<Envelope<M, S>>>.self)
        }
        let list = SubscriberList<Positioned<Envelope<M, S>>>()
        _positionedBySenderType[key] = list
        return list
    }

    // MARK: A relay's positions

    /// Readies the room at `key` for `count` mails whose numbers a relay's table gave (see
    /// ``KeptRoom/prepare(epoch:first:count:)``), made with `digest` if it has no history; call
    /// holding its shard's lock and the post's lanes. Returns how many to skip and the hole before
    /// them (nil: the type keeps no history); what it dropped goes to `discarded`.
    @usableFromInline
    func prepare(
        key: SenderKey,
        epoch: UInt64,
        first: UInt64,
        count: Int,
        digest: UInt32,
        in shard: RouteShard<M>,
        discarding discarded: inout DiscardedMail<M>
    ) -> (skip: Int, hole: UInt64)? {
        guard let kept = shard._kept, _historyLimits != nil else { return nil }
        let made = kept.room(at: key, epoch: epoch, digest: digest)
        discarded.add(made)
        if made._room._room == nil { made._room._room = digest }
        let prepared = made._room.prepare(epoch: epoch, first: first, count: count)
        discarded._dropped.add(contentsOf: prepared.dropped)
        return (prepared.skip, prepared.hole)
    }
}

/// What a history post recorded: its mail's first positions.
@usableFromInline
struct HistoryRecord: Sendable {
    /// The first mail's position in its room; nil when the type keeps no history (closed).
    @usableFromInline var _roomPosition: MailPosition?
    /// The first mail's position in the type (its stamp), for subscriptions to several rooms.
    @usableFromInline var _typePosition: MailPosition?

    @inlinable init() {}
}

/// What a subscription with positions starts with.
@usableFromInline
struct RoomResumption<Element: Sendable>: Sendable {
    @usableFromInline var _gap: HistoryGap?
    @usableFromInline var _replay: [Positioned<Element>] = []
    @usableFromInline var _start: MailPosition?
    /// A position ahead of what this mailroom has read from a relay's table: live mail up to it
    /// is not yielded again.
    @usableFromInline var _liveAfter: UInt64 = 0
    @usableFromInline var _released: [any Sendable] = []

    @inlinable init() {}
}
