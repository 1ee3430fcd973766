import CAsyncMail

/// The lock every lock in AsyncMail is made of (``Locked``, ``Lane``): one that does not convoy.
///
/// It spins briefly, then sleeps, and a running thread may take it before a woken sleeper does
/// (see `CAsyncMail.h`). Not `Synchronization.Mutex`: on Linux in Swift 6.3 that is a
/// priority-inheritance futex whose unlock hands the lock to the next sleeper, so posts from many
/// threads collapse to a fraction of one thread's rate (swiftlang/swift#88440,
/// `Benchmarks/README.md`). The standard library's Linux `Mutex` became a barging, spinning futex
/// in swiftlang/swift#88523, which Swift 6.3.1 does not have; once the oldest toolchain AsyncMail
/// supports has it, this type can become a `Mutex<Void>` again, with the same uncontended cost:
/// one compare-and-exchange to lock and one exchange to unlock, in line.
///
/// The word has an address of its own, which a futex needs and a Swift stored property does not
/// promise, padded to a cache line so that two locks taken by different threads never share one
/// (unless made `compact`, for a lock there are many of and that few threads share).
///
/// Why `@unchecked Sendable` is safe: the one stored property is a pointer that never changes,
/// to memory only ever touched through atomic operations (or the OS's lock) in `CAsyncMail`.
/// Every test of the package takes these locks from many threads, and CI runs them under
/// ThreadSanitizer, which sees each lock's critical sections through ``ThreadSanitizer``.
@usableFromInline
package struct RawLock: ~Copyable, @unchecked Sendable {
    @usableFromInline let _word: UnsafeMutablePointer<asyncmail_lock_t>

    /// A cache line on the machines AsyncMail runs on (128 bytes on Apple silicon).
    @usableFromInline static var lineSize: Int { 128 }

    /// A lock alone on its cache line, unless `compact`: a lock that many exist of and few threads
    /// share (a subscription's buffer's) takes only its word, as an allocation of its own.
    @inlinable
    package init(compact: Bool = false) {
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: compact
                ? MemoryLayout<asyncmail_lock_t>.size : max(Self.lineSize, MemoryLayout<asyncmail_lock_t>.size),
            alignment: compact ? MemoryLayout<asyncmail_lock_t>.alignment : Self.lineSize
        )
        _word = raw.bindMemory(to: asyncmail_lock_t.self, capacity: 1)
        asyncmail_lock_init(_word)
    }

    deinit {
        _word.deallocate()
    }

    /// Waits for the lock and takes it. Not recursive: never call it holding this lock.
    @inlinable @inline(__always)
    package func lock() {
        asyncmail_lock_lock(_word)
    }

    /// Takes the lock if it is free; true when it did.
    @inlinable @inline(__always)
    package func tryLock() -> Bool {
        asyncmail_lock_trylock(_word)
    }

    /// Releases the lock; called only by the thread that took it.
    @inlinable @inline(__always)
    package func unlock() {
        asyncmail_lock_unlock(_word)
    }
}
