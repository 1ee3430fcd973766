#if ASYNCMAIL_TSAN
// ThreadSanitizer cannot see the happens-before edge that `Synchronization.Mutex` provides on
// Linux (its futex-based lock is not instrumented), so it reports every access made under the
// lock as a race. CI's TSan run builds with `-DASYNCMAIL_TSAN` and these calls tell it about
// the edge the mutex really provides, the way abseil annotates its own Mutex. Accesses made
// outside the lock get no such edge and are still reported.

@usableFromInline @_silgen_name("__tsan_acquire")
func tsanAcquire(_ address: UnsafeRawPointer)

@usableFromInline @_silgen_name("__tsan_release")
func tsanRelease(_ address: UnsafeRawPointer)

@usableFromInline
enum ThreadSanitizer {
    /// Marks the start of a critical section guarded by `lock`'s mutex.
    @inlinable
    static func acquire(_ lock: AnyObject) {
        tsanAcquire(UnsafeRawPointer(Unmanaged.passUnretained(lock).toOpaque()))
    }

    /// Marks the end of a critical section guarded by `lock`'s mutex.
    @inlinable
    static func release(_ lock: AnyObject) {
        tsanRelease(UnsafeRawPointer(Unmanaged.passUnretained(lock).toOpaque()))
    }
}
#endif
