/// A lock held while a post yields: the lock of one room, or of one type (see `Lanes`).
///
/// Taken with `lock()` and `unlock()` in straight-line code rather than through a ``Locked``'s
/// closure: a post takes one or two lanes around the same delivery, and closures nested in
/// closures made the compiler copy the delivery into every branch and call it out of line. The
/// lock is a ``RawLock``, whose uncontended lock and unlock are one atomic operation each in
/// line, and which lets a running thread take it before a woken one, so that posts sharing a
/// room never convoy (figures in `Benchmarks/README.md`). ThreadSanitizer does not see it, so the
/// lane annotates its critical sections as ``Locked`` does; `IndependenceTests` and the lane
/// stress test run under it in CI.
@usableFromInline
package final class Lane: Sendable {
    @usableFromInline let _lock = RawLock()
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current

    @inlinable
    package init() {}

    /// Waits for the lane and takes it. Never called by a thread that holds it (see `DeliveryScope`).
    @inlinable @inline(__always)
    func lock() {
        _lock.lock()
        _threadSanitizer?.acquire(self)
    }

    /// Releases the lane; called only by the thread that took it.
    @inlinable @inline(__always)
    func unlock() {
        _threadSanitizer?.release(self)
        _lock.unlock()
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
        guard _lock.tryLock() else { return true }
        _lock.unlock()
        return false
    }
}
