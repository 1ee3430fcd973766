import Synchronization

/// A value behind a lock that ThreadSanitizer sees: every lock in AsyncMail is one of these.
///
/// `Synchronization.Mutex` on Linux is a futex that ThreadSanitizer does not instrument, so
/// every access made under it would look like a race. `withLock` tells ThreadSanitizer, when the
/// process runs under it, about the happens-before edge the lock really provides (see
/// ``ThreadSanitizer``); accesses made outside the lock get no such edge and are still reported.
///
/// A class, so that the annotation has an address of its own and a lock can be handed from one
/// place to another (a post takes a room's lock after looking the room up).
@usableFromInline
package final class Locked<State: ~Copyable>: Sendable {
    @usableFromInline let _mutex: Mutex<State>
    /// Read once here: a static read on every lock would cost a lazy-initialisation check.
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current

    @inlinable
    package init(_ state: consuming sending State) {
        _mutex = Mutex(state)
    }

    /// Runs `body` holding the lock. Never call it again from `body`: the lock is not recursive.
    @inlinable @inline(__always)
    package func withLock<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        _mutex.withLock { state in
            _threadSanitizer?.acquire(self)
            defer { _threadSanitizer?.release(self) }
            return body(&state)
        }
    }
}

extension Locked where State == Void {
    /// A lock that guards no value of its own: what it orders is named where it is declared.
    @inlinable
    package convenience init() {
        self.init(())
    }

    /// Runs `body` holding the lock.
    @inlinable
    package func withLock<Result: Sendable>(_ body: () -> Result) -> Result {
        withLock { (_: inout Void) in body() }
    }
}
