/// The kept mail one post replaced or dropped: its sender's latest and the type's newest that it
/// replaced, and the history entries its room's limits dropped. Gathered under the post's locks,
/// released by ``release(in:)`` once it holds no lock and no lane: a mail's deinit is user code.
@usableFromInline
struct DiscardedMail<M: Mail>: Sendable {
    /// What recording the latest mail replaced (see ``RouteTable/recordLatest(_:key:in:discarding:)``).
    @usableFromInline var _displaced: LatestMail<M>.Displaced?
    /// History entries the room's limits dropped, or a relay's numbering replaced.
    @usableFromInline var _dropped = DroppedEntries<M>()

    @inlinable init() {}

    /// The post's last step, holding nothing: when the post kept mail for one more object
    /// sender, sweeps every shard's kept mail of departed senders
    /// (``RouteTable/keptObjectSenderAdded()``) and releases it. What this value holds goes with
    /// the post's variable, right after.
    @inlinable
    func release(in table: RouteTable<M>) {
        let swept = _displaced?._addedObjectSender == true ? table.keptObjectSenderAdded() : []
        _ = swept  // released here
    }
}
