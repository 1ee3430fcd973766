/// What a locked section leaves to do once no lock is held: streams to finish, then values to
/// release.
///
/// Finishing a stream runs its termination handler, which takes the route table's locks, and releasing
/// a value can run user code (a mail's deinit, a filter's captures); neither may happen under a
/// lock. A locked section that has both to leave hands one of these back, and its caller calls
/// ``perform()`` after unlocking. Only removing a close action uses it so far; a post that keeps
/// mail gathers what it discards in a `DiscardedMail` (released by its `release(in:)`), and the
/// other post and subscription paths hand back their streams and values as tuples.
@usableFromInline
struct AfterUnlock<Released: Sendable>: Sendable {
    /// Streams to finish: subscriptions whose sender is gone, or displaced by a new one.
    @usableFromInline let _finishing: [any Finishable]
    /// What to release last: kept mail replaced or swept, a removed continuation, dropped tables.
    @usableFromInline let _releasing: Released

    @inlinable
    init(finishing: [any Finishable] = [], releasing: Released) {
        self._finishing = finishing
        self._releasing = releasing
    }

    /// Finishes the streams; `releasing` goes when this value does, right after.
    @inlinable
    func perform() {
        for continuation in _finishing { continuation.finish() }
    }
}
