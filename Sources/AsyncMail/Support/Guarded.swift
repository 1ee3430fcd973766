import Synchronization

/// A value behind a lock that ThreadSanitizer sees, for the products built on the core: a
/// ``Locked`` they can name.
///
/// The relay's state is under these, so that a ThreadSanitizer run of it is as clean as the
/// core's: a bare `Synchronization.Mutex` is a futex TSan does not see (see ``ThreadSanitizer``).
/// Not inlinable, since ``Locked`` is the core's own; what it guards is not on a post's path.
/// SPI, not part of AsyncMail's API.
@_spi(AsyncMailInternal)
public final class Guarded<State>: Sendable {
    private let locked: Locked<State>

    public init(_ state: sending State) {
        locked = Locked(state)
    }

    /// Runs `body` holding the lock. Never call it again from `body`: the lock is not recursive.
    public func withLock<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        locked.withLock(body)
    }
}
