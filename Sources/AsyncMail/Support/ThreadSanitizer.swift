import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// ThreadSanitizer's annotations for locks it cannot see, found at run time.
///
/// AsyncMail's locks (``RawLock``) are a futex, or the OS's unfair lock, which ThreadSanitizer
/// does not instrument, so every access made under one would look like a race to TSan. When the
/// process runs with ThreadSanitizer (`swift test --sanitize=thread`, in the user's own build,
/// with no flags of ours), its runtime
/// exports `__tsan_acquire` and `__tsan_release`; each lock then tells TSan about the
/// happens-before edge it really provides, the way abseil annotates its own mutex. Accesses made
/// outside the lock get no such edge and are still reported.
///
/// Without ThreadSanitizer, ``current`` is nil and a lock pays one load and one branch for it.
@usableFromInline
package struct ThreadSanitizer: Sendable {
    @usableFromInline let _acquireAddress: @convention(c) (UnsafeRawPointer?) -> Void
    @usableFromInline let _releaseAddress: @convention(c) (UnsafeRawPointer?) -> Void

    /// The annotations when ThreadSanitizer's runtime is in this process; nil otherwise.
    package static let current: ThreadSanitizer? = {
        guard let process = dlopen(nil, RTLD_NOW),
            let acquire = dlsym(process, "__tsan_acquire"),
            let release = dlsym(process, "__tsan_release")
        else { return nil }
        typealias Annotation = @convention(c) (UnsafeRawPointer?) -> Void
        return ThreadSanitizer(
            _acquireAddress: unsafeBitCast(acquire, to: Annotation.self),
            _releaseAddress: unsafeBitCast(release, to: Annotation.self)
        )
    }()

    /// Marks the start of a critical section of the lock that `lock` (at `offset`) stands for.
    @inlinable
    package func acquire(_ lock: AnyObject, offset: Int = 0) {
        _acquireAddress(UnsafeRawPointer(Unmanaged.passUnretained(lock).toOpaque()) + offset)
    }

    /// Marks the end of a critical section of the lock that `lock` (at `offset`) stands for.
    @inlinable
    package func release(_ lock: AnyObject, offset: Int = 0) {
        _releaseAddress(UnsafeRawPointer(Unmanaged.passUnretained(lock).toOpaque()) + offset)
    }
}
