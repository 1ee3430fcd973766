#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A lock held while a post yields: the lock of one room, or of one type (see `Lanes`).
///
/// A plain pthread mutex with `lock()` and `unlock()` rather than a ``Locked``: a post takes one
/// or two lanes around the same delivery, and closures nested in closures made the compiler
/// copy the delivery into every branch and call it out of line. ThreadSanitizer sees pthread
/// mutexes without annotations.
///
/// Why `@unchecked Sendable` is safe: the one stored property is a pointer set in `init` and
/// freed in `deinit`, never changed; the mutex it points to is only ever used through
/// `pthread_mutex_*`, which are safe to call from any thread. `IndependenceTests` and the lane
/// stress test, run under ThreadSanitizer in CI, take lanes from many threads at once.
@usableFromInline
package final class Lane: @unchecked Sendable {
    @usableFromInline let _mutex: UnsafeMutablePointer<pthread_mutex_t>

    @inlinable
    package init() {
        _mutex = .allocate(capacity: 1)
        _mutex.initialize(to: pthread_mutex_t())
        let made = pthread_mutex_init(_mutex, nil)
        precondition(made == 0, "AsyncMail could not make a mutex (\(made))")
    }

    deinit {
        pthread_mutex_destroy(_mutex)
        _mutex.deallocate()
    }

    /// Waits for the lane and takes it. Never called by a thread that holds it (see `DeliveryScope`).
    @inlinable
    func lock() {
        let locked = pthread_mutex_lock(_mutex)
        precondition(locked == 0, "a lane could not be taken (\(locked))")
    }

    @inlinable
    func unlock() {
        pthread_mutex_unlock(_mutex)
    }

    /// Runs `body` holding the lane.
    @inlinable
    func withLock<Result>(_ body: () -> Result) -> Result {
        lock()
        defer { unlock() }
        return body()
    }

    /// Whether a thread holds the lane right now; for tests, which ask while the holder is parked.
    package var isHeld: Bool {
        guard pthread_mutex_trylock(_mutex) == 0 else { return true }
        pthread_mutex_unlock(_mutex)
        return false
    }
}
