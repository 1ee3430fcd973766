import Synchronization

/// One shard of a ``RouteTable``: the rooms (object and value) whose look-up key falls in it, the
/// mail kept for them, and the lock a post to one of those rooms takes to capture its recipients.
///
/// A post to a room takes its shard's lock and no other, so posts to rooms in different shards
/// share no lock (see ``RouteTable``). The lock is also the read side of the table's
/// subscriptions that hear several rooms, which a change takes every shard's lock to write.
///
/// Why `@unchecked Sendable` is safe, and why the mutable properties skip dynamic exclusivity
/// checks: every one of them is only read or written holding `lock` (see ``RouteTable`` for the
/// argument about exclusivity). The model and stress tests, run under ThreadSanitizer in CI,
/// post, subscribe, count and drop from many threads at once.
@usableFromInline
final class RouteShard<M: Mail>: @unchecked Sendable {
    /// Guards everything mutable here. A leaf, like every lock under a ``RouteTable``.
    @usableFromInline let _lock = RawLock()
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current
    /// Counts the subscriptions filed where a post to this shard's rooms looks: its rooms, and
    /// the routes that hear several rooms. Written holding `lock`; read by a post holding its
    /// lanes and no lock, to learn whether what it captured before taking them is still whole
    /// (see `Switchboard.deliverCaptured`).
    @usableFromInline let _filings = Atomic<UInt>(0)
    /// Subscriptions pinned to one object or actor, by identity.
    @usableFromInline @exclusivity(unchecked) var _byObject = ObjectRoutes<M>()
    /// Subscriptions pinned to one `Hashable` sender value.
    @usableFromInline @exclusivity(unchecked) var _byValue = ValueTable<SubscriberList<M>>()
    /// The table's sender-type routes that a sender is, by the sender's own type: worked out with
    /// a cast the first time a sender of that type posts here (see ``RouteTable/senderTypes(of:ownType:in:)``).
    /// Cleared by every change to the table's sender-type routes, which holds this lock.
    @usableFromInline @exclusivity(unchecked) var _senderTypesOf:
        [ObjectIdentifier: [(key: ObjectIdentifier, list: any AnySubscriberList)]] = [:]
    /// The mail kept for this shard's rooms (and, in the first shard, for mail with no sender),
    /// once the type keeps its latest mail or its history; nil otherwise.
    @usableFromInline @exclusivity(unchecked) var _kept: KeptMail<M>?

    @inlinable init(keeping: Bool) {
        _kept = keeping ? KeptMail() : nil
    }

    /// Takes the lock. Never call it holding this shard's lock.
    @inlinable @inline(__always)
    func lock() {
        _lock.lock()
        _threadSanitizer?.acquire(self)
    }

    @inlinable @inline(__always)
    func unlock() {
        _threadSanitizer?.release(self)
        _lock.unlock()
    }

    /// Runs `body` holding the lock.
    @inlinable @inline(__always)
    func withLock<Result>(_ body: () -> Result) -> Result {
        lock()
        defer { unlock() }
        return body()
    }
}
