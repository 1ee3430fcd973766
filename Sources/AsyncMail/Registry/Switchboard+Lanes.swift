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
            var displaced: [any Finishable] = []  // by the first look: finished before the lane is taken
            let lane = shard.withLock { () -> LaneAttempt<Lane> in
                guard !table.isRetired else { return .retired }
                guard let lane = table.room(at: place, pinning: sender, in: shard, departed: &displaced)?._lane else {
                    return .retired  // a place that is not a room: nothing to file here
                }
                return .done(lane)
            }
            for continuation in displaced { continuation.finish() }
            guard case .done(let lane) = lane else { return .retired }
            var departed: [any Finishable] = []  // by the second look: finished once the lane is let go
            defer { for continuation in departed { continuation.finish() } }
            // Locks held together, in the Architecture article's order ("Every lock, in the order they are taken").
            return inOrder(Lanes(only: lane)) { () -> LaneAttempt<Value> in
                let attempt = shard.withLock { () -> LaneAttempt<Value> in
                    guard !table.isRetired else { return .retired }
                    guard let room = table.room(at: place, pinning: sender, in: shard, departed: &departed),
                        room._lane === lane
                    else { return .stale }
                    return .done(body(shard, room))
                }
                if case .done(let value) = attempt { andThen(value) }
                return attempt
            }
        }
    }
}
