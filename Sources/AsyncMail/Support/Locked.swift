/// A value behind a lock that ThreadSanitizer sees. Every lock in AsyncMail is one of these (a
/// ``Guarded`` is one for the other products), a ``Lane``, or a bare ``RawLock`` that annotates
/// itself for ThreadSanitizer where it is taken (a shard's, `RouteShard._lock`, and a table's
/// sweeper, `RouteTable._sweeper`); all of them take `CAsyncMail`'s lock, which does not convoy
/// under contention.
///
/// A ``RawLock`` parks threads on a futex that ThreadSanitizer does not instrument, so every
/// access made under it would look like a race. `withLock` tells ThreadSanitizer, when the
/// process runs under it, about the happens-before edge the lock really provides (see
/// ``ThreadSanitizer``); accesses made outside the lock get no such edge and are still reported.
///
/// A class, so that the annotation has an address of its own and a lock can be handed from one
/// place to another (a post takes a room's lock after looking the room up).
///
/// Why `@unchecked Sendable` is safe: `state`, the one mutable property, is only reached through
/// `withLock`, which holds the lock for the whole access; the value comes in as `sending`, so no
/// other reference to it survives outside. That is also why it skips the run-time exclusivity
/// check: two accesses can only overlap on one thread by calling `withLock` from its own body,
/// which the lock, not being recursive, forbids. Every suite takes these locks from many threads,
/// and CI runs them under ThreadSanitizer.
@usableFromInline
package final class Locked<State: ~Copyable>: @unchecked Sendable {
    @usableFromInline let _lock: RawLock
    @usableFromInline @exclusivity(unchecked) var _state: State
    /// Read once here: a static read on every lock would cost a lazy-initialisation check.
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current

    /// `compactLock`: see ``RawLock/init(compact:)``.
    @inlinable
    package init(_ state: consuming sending State, compactLock: Bool = false) {
        _lock = RawLock(compact: compactLock)
        _state = state
    }

    /// Runs `body` holding the lock. Never call it again from `body`: the lock is not recursive.
    @inlinable @inline(__always)
    package func withLock<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        _lock.lock()
        _threadSanitizer?.acquire(self)
        defer {
            _threadSanitizer?.release(self)
            _lock.unlock()
        }
        return body(&_state)
    }
}

extension Locked where State == Void {
    /// A lock that guards no value of its own: what it orders is named where it is declared.
    @inlinable
    package convenience init() {
        self.init(())
    }

    /// Runs `body` holding the lock.
    ///
    /// It does not go through the state: an `inout` access to an empty value has no memory to
    /// order, so the compiler may place it outside the critical section, where ThreadSanitizer
    /// reports two of them as a race.
    @inlinable @inline(__always)
    package func withLock<Result: Sendable>(_ body: () -> Result) -> Result {
        _lock.lock()
        _threadSanitizer?.acquire(self)
        defer {
            _threadSanitizer?.release(self)
            _lock.unlock()
        }
        return body()
    }
}
