/// A value behind a lock that ThreadSanitizer sees, for the products built on the core: a
/// ``Locked`` they can name.
///
/// The relay's state is under these, so that its locks do not convoy when many threads post (see
/// ``RawLock``: Swift 6.3's Linux `Mutex` does), and a ThreadSanitizer run of it is as clean as
/// the core's (a bare futex is invisible to TSan; see ``ThreadSanitizer``).
/// Inlinable, so that a lock taken on every post (the relay's gate and queue) is specialized
/// where it is used. SPI, not part of AsyncMail's API.
@_spi(AsyncMailInternal)
public final class Guarded<State>: Sendable {
    @usableFromInline let _locked: Locked<State>

    @inlinable
    public init(_ state: sending State) {
        _locked = Locked(state)
    }

    /// Runs `body` holding the lock. Never call it again from `body`: the lock is not recursive.
    @inlinable
    public func withLock<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        _locked.withLock(body)
    }
}
