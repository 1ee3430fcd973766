/// The kept mail one post replaced or dropped: its room's latest and the type's newest that it
/// replaced, a departed object's room at its sender's address, and the history entries its
/// room's limits dropped. Gathered under the post's locks, released by ``release(in:)`` once it
/// holds no lock and no lane: a mail's deinit is user code.
@usableFromInline
struct DiscardedMail<M: Mail>: Sendable {
    /// What recording the latest mail replaced (see ``RouteTable/recordLatest(_:key:in:discarding:)``
    /// and ``RouteTable/record(_:key:found:digest:in:discarding:)``).
    @usableFromInline var _latest: M?
    @usableFromInline var _newest: M?
    /// Departed objects' rooms that the post's room replaced at the same address.
    @usableFromInline var _replaced: [KeptRoom<M>] = []
    /// Whether the post made a room for one more object sender.
    @usableFromInline var _addedObjectRoom = false
    /// History entries the room's limits dropped, or a relay's numbering replaced.
    @usableFromInline var _dropped = DroppedEntries<M>()

    @inlinable init() {}

    /// Notes what making or finding the post's room did.
    @inlinable
    mutating func add(_ made: KeptMail<M>.Made) {
        if let replaced = made._replaced { _replaced.append(replaced) }
        if made._isNewObjectRoom { _addedObjectRoom = true }
    }

    /// The post's last step, holding nothing: when the post made a room for one more object
    /// sender, sweeps every shard's rooms of departed senders (``RouteTable/objectRoomAdded()``)
    /// and releases them. What this value holds goes with the post's variable, right after.
    @inlinable
    func release(in table: RouteTable<M>) {
        let swept = _addedObjectRoom ? table.objectRoomAdded() : []
        _ = swept  // released here
    }
}
