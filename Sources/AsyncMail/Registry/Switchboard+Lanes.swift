import Synchronization

extension Switchboard {
    /// Runs `attempt` until it is done, or the table it works in is retired (then nil): the loop of
    /// the lane protocol (see ``LaneAttempt``).
    @inlinable @inline(__always)
    func retrying<Value>(_ attempt: () -> LaneAttempt<Value>) -> Value? {
        while true {
            switch attempt() {
            case .done(let value): return value
            case .stale: continue
            case .retired: return nil
            }
        }
    }

    /// A post that must hold the lanes it finds (one that records its type's latest mail, or keeps
    /// history), driven by ``PostAttempt``: looks under its room's shard lock for its lanes
    /// (`firstLook`, which also reads what the kind of post needs; false when there is nothing to
    /// do there), then, holding no lock, `beforeLanes` may end it (a post routed to a relay); it
    /// takes the lanes, and the taps' lane while someone taps, looks again under the shard's lock,
    /// and if the lanes are still its own captures its recipients and runs `secondLook` (the
    /// post's record, still under the lock, with the room if its lane is held); then `deliver`,
    /// holding the lanes but no shard lock.
    ///
    /// Recording and taking a place in line are one step, so a replaying or resuming subscribe
    /// (which reads what is kept holding one of the post's lanes) can never replay a mail that a
    /// post delivered after it overtakes. While someone taps, the taps' lane is held from the
    /// record to the end of the delivery: a tap hears every post, whatever its lanes, and must hear
    /// this one before any post made after a subscribe that replayed it.
    ///
    /// What `secondLook` captures, it keeps in its caller's variables, for `deliver` to read and
    /// the caller to release once no lock and no lane is held (a mail's deinit is user code); the
    /// recipients are released here, holding nothing. Nil when the table is retired, or
    /// `firstLook` found nothing to do.
    @inlinable @inline(__always)
    func inPostLanes<M: Mail, S: Sendable, Value: Sendable>(
        of table: RouteTable<M>,
        from sender: S?,
        key: SenderKey,
        firstLook: (RouteShard<M>) -> Bool = { _ in true },
        beforeLanes: () -> Value? = { nil },
        secondLook: (RouteShard<M>, _ room: SubscriberList<M>?) -> LaneAttempt<Void>,
        deliver: (Recipients<M, S>) -> Value
    ) -> Value? {
        let lookup = key.roomLookup
        let index = RouteTable<M>.shardIndex(lookup)
        return retrying { () -> LaneAttempt<Value> in
            var attempt = PostAttempt()
            var check = RoomCheck<M>.none
            let found = table.withShard(index) { shard in
                shard.withLock { () -> Lanes? in
                    guard !table.isRetired, firstLook(shard) else { return nil }
                    return table.lanes(lookup, sender: sender, in: shard, check: &check)
                }
            }
            if found != nil, let value = beforeLanes() { return .done(value) }
            let tapping = _tapping.load(ordering: .acquiring)
            let looked = attempt.looked(
                found,
                roomIsTheSenders: check.holds(for: sender, lookup: lookup),
                tapsLane: tapping ? _tapped._lane : nil
            )
            guard case .takeLanes = looked else { return .retired }
            var recipients = Recipients<M, S>()  // released once the lanes are let go
            // Locks held together, in the Architecture article's order ("Every lock, in the order they are taken").
            let done = inOrder(attempt.lanes) { () -> LaneAttempt<Value> in
                let tapsLane = attempt.tapsLane
                tapsLane?.lock()
                defer { tapsLane?.unlock() }
                let taps = self.taps
                guard case .lookAgain = attempt.tookLanes(tapped: taps != nil) else { return .stale }
                let second = table.withShard(index) { shard in
                    shard.withLock { () -> LaneAttempt<Void> in
                        var now = Lanes()
                        var unchecked = RoomCheck<M>.none  // the first look checked this room
                        let retired = table.isRetired
                        let room =
                            retired
                            ? nil
                            : table.capture(
                                from: sender,
                                room: lookup,
                                in: shard,
                                into: &recipients,
                                lanes: &now,
                                check: &unchecked
                            )
                        switch attempt.lookedAgain(retired ? nil : now) {
                        case .deliver(let dropRoom):
                            if dropRoom { recipients._pinned = nil }
                            let done = secondLook(shard, dropRoom ? nil : room)
                            if case .stale = done { attempt.workWentStale() }
                            return done
                        case .retry: return .stale
                        case .takeLanes, .lookAgain, .returnEmpty: return .retired
                        }
                    }
                }
                switch second {
                case .done:
                    recipients._taps = taps
                    recipients._holdsTapsLane = true
                    return .done(deliver(recipients))
                case .stale: return .stale
                case .retired: return .retired
                }
            }
            _ = recipients  // the snapshot may hold the last reference to a subscription: released here
            return done
        }
    }

    /// One try of the lane protocol for a subscription to one room: makes the room at `place`
    /// (its lane exists only while the room does), takes the room's lane, and runs `body` under
    /// the room's shard lock if that is still the room whose lane is held, then `andThen` with
    /// its value, still holding the lane but not the shard's lock (to yield a replayed mail).
    ///
    /// The streams of a departed sender's room that the new room displaced are finished holding
    /// nothing. `.stale` when the room went with its last subscription meanwhile.
    @inlinable
    func inRoomLane<M: Mail, Value: Sendable>(
        of table: RouteTable<M>,
        at place: TableRoute,
        pinning sender: AnyObject?,
        andThen: (Value) -> Void = { _ in },
        _ body: (RouteShard<M>, SubscriberList<M>) -> Value
    ) -> LaneAttempt<Value> {
        guard let index = RouteTable<M>.shardIndex(at: place) else { return .retired }  // not a room
        return table.withShard(index) { shard in
            var attempt = PostAttempt()
            var displaced: [any Finishable] = []  // by the first look: finished before the lane is taken
            let lane = shard.withLock { () -> Lane? in
                guard !table.isRetired else { return nil }
                // Nil for a place that is not a room: nothing to file here.
                return table.room(at: place, pinning: sender, in: shard, departed: &displaced)?._lane
            }
            for continuation in displaced { continuation.finish() }
            // A subscription's room is its own: nothing to check, and no taps' lane to hold.
            guard case .takeLanes = attempt.looked(lane.map(Lanes.init(only:)), roomIsTheSenders: true, tapsLane: nil)
            else { return .retired }
            var departed: [any Finishable] = []  // by the second look: finished once the lane is let go
            defer { for continuation in departed { continuation.finish() } }
            // Locks held together, in the Architecture article's order ("Every lock, in the order they are taken").
            return inOrder(attempt.lanes) { () -> LaneAttempt<Value> in
                guard case .lookAgain = attempt.tookLanes(tapped: false) else { return .stale }
                let done = shard.withLock { () -> LaneAttempt<Value> in
                    let retired = table.isRetired
                    let room = retired ? nil : table.room(at: place, pinning: sender, in: shard, departed: &departed)
                    // A room gone with its last subscription meanwhile holds no lane: not the same.
                    let now = retired ? nil : room.flatMap(\._lane).map(Lanes.init(only:)) ?? Lanes()
                    switch attempt.lookedAgain(now) {
                    case .deliver: return .done(body(shard, room!))  // its lane is held: the room is there
                    case .retry: return .stale
                    case .takeLanes, .lookAgain, .returnEmpty: return .retired
                    }
                }
                if case .done(let value) = done { andThen(value) }
                return done
            }
        }
    }
}
