import CAsyncMail

/// A lock held while a post yields: the lock of one room, or of one type (see `Lanes`).
///
/// Taken with `lock()` and `unlock()` in straight-line code rather than through a ``Locked``'s
/// closure: a post takes one or two lanes around the same delivery, and closures nested in
/// closures made the compiler copy the delivery into every branch and call it out of line. The
/// lock is `CAsyncMail`'s, as a ``RawLock``'s is: its uncontended lock and unlock are one atomic
/// operation each in line, and it lets a running thread take it before a woken one, so that
/// posts sharing a room never convoy (figures in `Benchmarks/README.md`). ThreadSanitizer does not see it, so the
/// lane annotates its critical sections as ``Locked`` does; `IndependenceTests` and the lane
/// stress test run under it in CI.
///
/// Its lock word is the lane's first stored property, not an allocation of its own as a
/// ``RawLock``'s is: a mailroom has a lane per room, and an extra cache-line-aligned allocation
/// per room spread a crowd of rooms over more memory, which made walking 10,000 object routes for
/// departed senders cost a post a third more time (`Benchmarks/README.md`). It is padded instead
/// (see `padding`). The word's address is where the
/// object's stored properties begin (`_getUnsafePointerToStoredProperties`); `init` checks that.
///
/// Why `@unchecked Sendable` is safe: after `init`, the word is only touched through that address
/// by `CAsyncMail`'s atomic operations (never as a Swift property, which would be a formal access
/// that two threads must not make at once), and the annotations are immutable.
/// `IndependenceTests` and the stress tests, run under ThreadSanitizer in CI, take lanes from
/// many threads.
@usableFromInline
package final class Lane: @unchecked Sendable {
    /// The lock word; read and written only through ``word`` once `init` returns.
    @usableFromInline @exclusivity(unchecked) var _word = asyncmail_lock_t()
    @usableFromInline let _threadSanitizer = ThreadSanitizer.current
    /// Room between this lane's word (and reference count) and whatever is allocated next, often
    /// another room's lane or list: without it, posts from different cores to rooms made one
    /// after the other wrote one cache line, which cost 16 threads on distinct rooms a fifth of
    /// their rate (`Benchmarks/README.md`). 96 bytes: the hot words of the next allocation start
    /// at least a cache line past this lane's, whatever the allocator's alignment.
    @usableFromInline let _padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )

    @inlinable
    package init() {
        assert(withUnsafeMutablePointer(to: &_word) { $0 } == word, "the lock word is the first stored property")
        asyncmail_lock_init(word)
    }

    /// Where the lock word lives.
    @inlinable @inline(__always)
    var word: UnsafeMutablePointer<asyncmail_lock_t> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: asyncmail_lock_t.self)
    }

    /// Waits for the lane and takes it. Never called by a thread that holds it (see `DeliveryScope`).
    @inlinable @inline(__always)
    func lock() {
        asyncmail_lock_lock(word)
        _threadSanitizer?.acquire(self)
    }

    /// Releases the lane; called only by the thread that took it.
    @inlinable @inline(__always)
    func unlock() {
        _threadSanitizer?.release(self)
        asyncmail_lock_unlock(word)
    }

    /// Whether a thread holds the lane right now; for tests, which ask while the holder is parked.
    package var isHeld: Bool {
        guard asyncmail_lock_trylock(word) else { return true }
        asyncmail_lock_unlock(word)
        return false
    }
}
